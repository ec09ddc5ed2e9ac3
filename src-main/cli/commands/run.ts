import { applyOverrides, ConfigError } from '../../engine/config/load';
import { loadRunConfig, resolveConfig } from '../../engine/preflight';
import type { RunConfig } from '../../engine/config/schema';
import { endpointEnvIssues } from '../../engine/served/config';
import { resolveDatabasePath } from '../../engine/paths';
import { openStore, type Store } from '../../engine/store';
import { staleRunReason } from '../../engine/store/liveness';
import { runActions, runAgainRequest } from '../../engine/training/advice';
import { createRunManager, type RunManager } from '../../runner/manager';
import type { WorkerToManager } from '../../runner/messages';
import { runRef, UsageError } from '../args';
import { importedRunRefusal } from '../../engine/imports/read-only';
import { findRunOrSay, defineCommand, type CommandContext } from '../context';
import { number, printJson } from '../format';
import { ProgressLine } from '../progress';

const runUsage = `Usage: marsrl run (--preset NAME | --config FILE | --like RUN) [--set key.path=value …] [--db PATH] [--json]

--like RUN starts a new run with the stored config of run RUN (id or name), e.g. to run again one
that stopped before its first checkpoint; --set changes values of it.

Starts a run in a worker process and follows it: warm start (unless the policies have starting
checkpoints), RL steps with held-out evaluations, checkpoints. Ctrl-C stops the run at its next
safe point and marks it interrupted (continue it with \`marsrl resume RUN\`); a second Ctrl-C
kills the worker at once. Every turn, segment, reward, advantage and metric is in the store.

A config with a \`system:\` block is a reasoning-system run instead (inference only): its agents
(served endpoints or checkpoints) run MarsRL's loop or the unrolled chain on the held-out
problems; every call is stored as a turn, and \`marsrl resume\` continues a stopped one without
repeating a finished call.`;

const HEADLINE = ['eval/system/accuracy', 'eval/solver/accuracy', 'system/accuracy', 'solver/accuracy', 'eval/verifier/recall', 'eval/corrector/fix_rate'];

function summary(metrics: Record<string, number>, keys: readonly string[]): string {
  return keys
    .filter((k) => metrics[k] !== undefined)
    .map((k) => `${k.replace(/^eval\//, 'eval:').replace('/accuracy', '')} ${number(metrics[k], 3)}`)
    .join('  ');
}

/** Whether this terminal's own Ctrl-C asked for the stop (then the worker's notice is not repeated). */
const stopping = { local: false };

/** Follow a run's worker to its end with a progress bar; Ctrl-C stops, a second Ctrl-C kills. */
export async function followRun(manager: RunManager, store: Store, ctx: CommandContext, json: boolean, bar: ProgressLine, start: () => Promise<number>): Promise<number> {
  let interrupts = 0;
  let runId = -1;
  const onSigint = () => {
    interrupts++;
    stopping.local = true;
    if (interrupts === 1) {
      bar.log('Stopping at the next safe point (Ctrl-C again to kill the worker now)…');
      void manager.stop(runId).catch(() => undefined);
    } else {
      bar.log('Killing the worker; the run is marked interrupted.');
      void manager.stopAll('killed by a second Ctrl-C');
    }
  };
  process.on('SIGINT', onSigint);
  try {
    runId = await start();
    await manager.waitForExit(runId);
  } finally {
    process.off('SIGINT', onSigint);
    bar.end();
  }
  const recorded = store.runs.get(runId)!;
  // A run its worker could not mark (a full disk) still reads `running`; show what it is.
  const stale = staleRunReason(recorded);
  const run = stale === null ? recorded : { ...recorded, status: 'interrupted' as const, statusReason: stale };
  const latest = store.metrics.latest(runId, store.metrics.keys(runId));
  // Only what the run manager would accept (training/advice.ts): no resume without a checkpoint.
  const actions = run.status === 'done' ? [] : runActions(store, run);
  if (json) printJson(ctx.out, { runId, status: run.status, reason: run.statusReason, metrics: latest, next: actions.map((a) => a.command) });
  else {
    ctx.out(`Run ${runId} ${run.status}${run.statusReason ? ` (${run.statusReason})` : ''}.`);
    // A failed engine job's traceback, as its log printed it (issue 38): the reason a person reads first.
    const traceback = run.status === 'failed' ? store.engineJobs.lastTraceback(runId)?.text : null;
    if (traceback) ctx.out(`  The job's log ends with:\n${traceback.replace(/^/gm, '    ')}`);
    const headline = summary(latest, HEADLINE);
    if (headline) ctx.out(`  ${headline}`);
    ctx.out(`  details: marsrl show ${runId}`);
    for (const a of actions) ctx.out(`  ${a.kind === 'resume' ? 'continue' : 'run again'}: ${a.command}   (${a.text})`);
  }
  return run.status === 'done' ? 0 : run.status === 'interrupted' ? 130 : 1;
}

export function progressPrinter(bar: ProgressLine) {
  return (message: WorkerToManager) => {
    // A stop asked for elsewhere (the app, `marsrl serve`, `marsrl stop`): say so as it happens.
    if (message.type === 'stopping' && !stopping.local) bar.log(`Stop requested (${message.reason}): stopping at the next safe point…`);
    if (message.type !== 'progress') return;
    const p = message.progress;
    if (p.phase === 'eval') bar.log(`eval @ step ${p.step}: ${summary(p.metrics, HEADLINE)}`);
    else if (p.phase === 'pretrain') bar.update(p.message ?? 'warm start', p.step, p.totalSteps, p.metrics.loss !== undefined ? `loss ${number(p.metrics.loss, 3)}` : '');
    else if (p.phase === 'rl') bar.update('RL', p.step, p.totalSteps, summary(p.metrics, ['system/accuracy', 'solver/accuracy']));
    else if (p.message) bar.log(p.message);
  };
}

export const runCommand = defineCommand({
  name: 'run',
  summary: 'start a training run and follow it',
  usage: runUsage,
  options: { preset: { type: 'string' }, config: { type: 'string' }, like: { type: 'string' }, set: { type: 'string', multiple: true } },
  maxPositionals: 0,
  async run({ values }, ctx) {
    const sources = [values.preset, values.config, values.like].filter((v) => v !== undefined).length;
    if (sources !== 1) throw new UsageError(`run needs one of --preset NAME, --config FILE or --like RUN${sources > 1 ? ' (not several)' : ' (see `marsrl presets`)'}`, runUsage);
    const databasePath = resolveDatabasePath(values.db, ctx.env);
    let loaded: { config: RunConfig; preset: string | null; name?: string };
    if (values.like !== undefined) {
      runRef(values.like, '--like', runUsage);
      // Read the model run before this command creates anything (a missing run writes nothing).
      const source = openStore(databasePath);
      try {
        const model = source.runs.find(values.like);
        if (!model) throw new UsageError(`--like ${values.like}: no such run in ${databasePath} (list runs with: marsrl runs)`, runUsage);
        const refusal = importedRunRefusal(model, 'run-again');
        if (refusal !== null) throw new Error(`--like ${values.like}: ${refusal}`);
        const request = runAgainRequest(model);
        const doc = values.set?.length ? applyOverrides(request.config!, values.set) : request.config!;
        loaded = { config: resolveConfig(doc, `run ${model.id}'s config`), preset: request.preset ?? null, name: request.name };
      } finally {
        source.close();
      }
    } else {
      // Validate before touching the database: a bad config writes nothing.
      loaded = loadRunConfig({ preset: values.preset, file: values.config, overrides: values.set ?? [] });
    }
    const { config, preset } = loaded;
    // An endpoint's key variable unset would fail the run at its first call; say so before it is created.
    const envIssues = endpointEnvIssues(config, ctx.env);
    if (envIssues.length > 0) throw new ConfigError(envIssues, values.config ?? (values.like !== undefined ? `run ${values.like}` : `preset ${values.preset}`));
    const store = openStore(databasePath);
    const bar = new ProgressLine();
    const manager = createRunManager({ store, databasePath, onWorkerMessage: progressPrinter(bar) });
    manager.recoverStaleRuns();
    try {
      return await followRun(manager, store, ctx, values.json, bar, async () => {
        const { runId } = await manager.start({ preset: preset ?? undefined, config: config as unknown as Record<string, unknown>, ...(loaded.name ? { name: loaded.name } : {}) });
        bar.log(`Run ${runId} started (database ${databasePath}).`);
        return runId;
      });
    } finally {
      store.close();
    }
  },
});

const resumeUsage = `Usage: marsrl resume RUN [--db PATH] [--json]

Continues an interrupted run from its last checkpoint, in a new worker process.`;

export const resumeCommand = defineCommand({
  name: 'resume',
  summary: 'continue an interrupted run from its last checkpoint',
  usage: resumeUsage,
  options: {},
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    if (!positionals[0]) throw new UsageError('resume needs a RUN (id or name)', resumeUsage);
    const databasePath = resolveDatabasePath(values.db, ctx.env);
    const store = openStore(databasePath);
    try {
      const run = findRunOrSay(store, positionals[0], databasePath, ctx);
      if (!run) return 1;
      const refusal = importedRunRefusal(run, 'resume');
      if (refusal !== null) {
        ctx.err(`marsrl resume: ${refusal}`);
        return 1;
      }
      const bar = new ProgressLine();
      const manager = createRunManager({ store, databasePath, onWorkerMessage: progressPrinter(bar) });
      manager.recoverStaleRuns();
      return await followRun(manager, store, ctx, values.json, bar, async () => {
        await manager.resume(run.id);
        // Which checkpoint loads is known only once the worker has checked them (a newer one may
        // fail its checksum): the worker says which it used, and what it skipped, as it happens.
        const system = typeof run.config.system === 'object' && run.config.system !== null;
        bar.log(system ? `Resuming run ${run.id} from its stored turns (a reasoning-system run: finished calls are not repeated).` : `Resuming run ${run.id}: loading its newest checkpoint that passes its checksums…`);
        return run.id;
      });
    } finally {
      store.close();
    }
  },
});

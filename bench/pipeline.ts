/**
 * `npm run bench -- pipeline [--preset quick] [--steps N] [--seeds 1,2] [--staleness K] [--gradient-share X] [--gradient-parts N]
 *                           [--modes sync,pipeline] [--wait-idle SECONDS] [--db PATH] [--keep] [--json]`
 *
 * The same config and seed trained in `sync` mode (one worker process: every agent's rollouts,
 * then the updates) and in `pipeline` mode (a rollout worker and a trainer worker, each agent's
 * turns trained as soon as the agent finishes, and the rollout worker computing
 * parts of the trainer's minibatch gradients between its segments: pipeline.gradient_share, gradient_parts), back to back, through the run manager as
 * `marsrl run` starts them, for the same number of steps (so the same number of Solver samples).
 * The preset's runs start from its shipped checkpoints; evaluation runs at the start and the end
 * only (eval.every = 0), on the preset's held-out problems.
 *
 * Per run it prints: the RL wall time (end of the starting evaluation → last update applied, from
 * the run's timeline; the pipeline's rollout starts during that evaluation, so up to
 * max_staleness + 1 steps of its rollouts may precede it), the whole run's wall time (process start, both evaluations and checkpoints
 * included), response tokens per second of RL wall time, held-out system and Solver accuracy at
 * the end (and at the start), and where the time went (mean rollout and update seconds a step,
 * trainer idle, rollout waits, staleness). Then per seed the speed-up (sync time / pipeline time)
 * and the accuracy difference, and, over the seeds, the sync runs' seed-to-seed spread.
 *
 * The machines this runs on may be shared, and a busy core slows the two-process pipeline more
 * than the one-process baseline: each run's line gives the CPU time of its own processes and of
 * every other process meanwhile (from /proc), and a warning follows when others used more than
 * a tenth of a core; the load average before and after is printed too. `--wait-idle S` waits up
 * to S seconds before each run for a moment when other processes use less than a tenth of a core.
 * Before and after the runs it measures how much two busy processes get done compared with one
 * (a plain compute loop): no two-process pipeline can beat that ratio here.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { openStore, type Store } from '../src-main/engine/store';
import { benchDatabase, DATABASE_OPTIONS } from './database';
import { createRunManager } from '../src-main/runner/manager';

interface RunFigures {
  mode: string;
  seed: number;
  runId: number;
  status: string;
  steps: number;
  turns: number;
  solverTurns: number;
  tokens: number;
  rlSeconds: number;
  totalSeconds: number;
  tokensPerS: number;
  accuracy: number | null;
  solverAccuracy: number | null;
  accuracyAtStart: number | null;
  rolloutS: number;
  updateS: number;
  trainerIdleS: number;
  rolloutWaitS: number;
  /** Seconds a step the rollout spent computing its share of the trainer's gradients (pipeline.gradient_share). */
  rolloutGradientS: number;
  maxStaleness: number;
  /** CPU seconds of this run's processes (this one and its workers), and of every other process meanwhile. */
  cpuSeconds: number | null;
  otherCpuSeconds: number | null;
}

/**
 * CPU time from /proc (Linux): all CPUs' busy time, and this process's own time plus that of its
 * exited children (the run's workers). Null where /proc is not there.
 */
/** A compute-bound loop for `ms` milliseconds that prints its passes per second. */
const spinScript = (ms: number) =>
  `const a=new Float32Array(1<<18).map((_,i)=>i%7);let s=0,n=0;const t0=Date.now();` +
  `while(Date.now()-t0<${ms}){for(let i=0;i<a.length;i++)s+=a[i]*1.0001;n++}console.log(n/${ms / 1000},s>0)`;

function spinRate(ms: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', spinScript(ms)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve(Number.parseFloat(out)));
  });
}

/**
 * How much two busy processes get done here compared with one: the ceiling of any two-process
 * speed-up on this machine at this moment. On a virtual machine whose two CPUs share a host with
 * others it is often well under 2 (1.3–2.0 seen on the development machine within minutes).
 */
async function parallelCapacity(): Promise<number> {
  // Alternated, because the host's speed drifts within seconds: one, two, one, two.
  let one = 0;
  let two = 0;
  for (let round = 0; round < 2; round++) {
    one += await spinRate(1500);
    const [a, b] = await Promise.all([spinRate(1500), spinRate(1500)]);
    two += a + b;
  }
  return two / one;
}

function cpuSnapshot(): { busy: number; own: number } | null {
  try {
    const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    const busy = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + (cpu[7] ?? 0);
    const self = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = self.slice(self.lastIndexOf(')') + 2).split(' ').map(Number);
    // Fields 14–17 of /proc/PID/stat (utime, stime, cutime, cstime), counted from the state field (3).
    const own = fields[11] + fields[12] + fields[13] + fields[14];
    return { busy: busy / CLOCK_TICKS, own: own / CLOCK_TICKS };
  } catch {
    return null;
  }
}
const CLOCK_TICKS = 100;

/** Cores' worth of CPU that other processes use, sampled over `ms`. */
async function othersLoad(ms: number): Promise<number | null> {
  const a = cpuSnapshot();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = cpuSnapshot();
  return a && b ? (b.busy - a.busy - (b.own - a.own)) / (ms / 1000) : null;
}

/** Wait (up to `seconds`) until other processes leave the CPUs nearly idle; returns their last load. */
async function waitIdle(seconds: number, log: (line: string) => void): Promise<number | null> {
  const end = Date.now() + seconds * 1000;
  let load = await othersLoad(2000);
  let said = false;
  while (load !== null && load > 0.1 && Date.now() < end) {
    if (!said) log(`  waiting for other processes to leave the CPUs idle (they use ${load.toFixed(2)} cores)…`);
    said = true;
    await new Promise((resolve) => setTimeout(resolve, 5000));
    load = await othersLoad(2000);
  }
  return load;
}

function meanOf(store: Store, runId: number, key: string): number {
  const items = store.metrics.series(runId, key).items;
  return items.length ? items.reduce((a, p) => a + p.value, 0) / items.length : 0;
}

function valueAt(store: Store, runId: number, key: string, step: number): number | null {
  return store.metrics.series(runId, key).items.find((p) => p.step === step)?.value ?? null;
}

function figures(store: Store, runId: number, mode: string, seed: number, steps: number, cpu: { own: number; other: number } | null): RunFigures {
  const run = store.runs.get(runId)!;
  const timeline = store.events.timeline(runId);
  // RL wall time: from the end of the starting evaluation (the pipeline's rollout may already
  // have begun during it) to the last update.
  const rl = timeline.filter((s) => s.kind === 'segment' || s.kind === 'update');
  // (The pipeline splits an evaluation between its two processes: the later end counts.)
  const startEval = timeline.filter((s) => s.kind === 'eval' && s.step === 0);
  const rlStart = Math.max(Math.min(...rl.map((s) => s.startedAt)), ...startEval.map((s) => s.endedAt));
  const rlSeconds = (Math.max(...rl.filter((s) => s.kind === 'update').map((s) => s.endedAt)) - rlStart) / 1000;
  const counts = store.db
    .prepare(
      `SELECT COUNT(*) AS turns, SUM(t.agent = 'solver') AS solver, SUM(t.token_count) AS tokens
       FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND e.split = 'train'`,
    )
    .get(runId) as { turns: number; solver: number; tokens: number };
  const staleness = store.metrics.series(runId, 'pipeline/staleness').items.map((p) => p.value);
  return {
    mode,
    seed,
    runId,
    status: run.status,
    steps,
    turns: counts.turns,
    solverTurns: counts.solver,
    tokens: counts.tokens,
    rlSeconds,
    totalSeconds: ((run.endedAt ?? Date.now()) - (run.startedAt ?? run.createdAt)) / 1000,
    tokensPerS: counts.tokens / rlSeconds,
    accuracy: valueAt(store, runId, 'eval/system/accuracy', steps),
    solverAccuracy: valueAt(store, runId, 'eval/solver/accuracy', steps),
    accuracyAtStart: valueAt(store, runId, 'eval/system/accuracy', 0),
    rolloutS: meanOf(store, runId, 'perf/rollout_s'),
    updateS: meanOf(store, runId, 'perf/update_s'),
    trainerIdleS: meanOf(store, runId, 'pipeline/trainer_idle_s'),
    rolloutWaitS: meanOf(store, runId, 'pipeline/rollout_wait_s'),
    rolloutGradientS: meanOf(store, runId, 'pipeline/rollout_gradient_s'),
    maxStaleness: staleness.length ? Math.max(...staleness) : 0,
    cpuSeconds: cpu?.own ?? null,
    otherCpuSeconds: cpu?.other ?? null,
  };
}

const fixed = (v: number | null, digits: number) => (v === null || !Number.isFinite(v) ? '—' : v.toFixed(digits));

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      preset: { type: 'string', default: 'quick' },
      steps: { type: 'string', default: '30' },
      seeds: { type: 'string', default: '1,2' },
      staleness: { type: 'string' },
      modes: { type: 'string', default: 'sync,pipeline' },
      ...DATABASE_OPTIONS,
      json: { type: 'boolean', default: false },
      'wait-idle': { type: 'string', default: '0' },
      'gradient-share': { type: 'string' },
      'gradient-parts': { type: 'string' },
    },
  });
  const waitIdleS = Number(values['wait-idle']);
  const steps = Number(values.steps);
  const seeds = values.seeds.split(',').map(Number);
  const modes = values.modes.split(',') as ('sync' | 'pipeline')[];
  const gradientShare = values['gradient-share'] === undefined ? undefined : Number(values['gradient-share']);
  const gradientParts = values['gradient-parts'] === undefined ? undefined : Number(values['gradient-parts']);
  if (
    !Number.isInteger(steps) ||
    steps < 1 ||
    seeds.some((s) => !Number.isInteger(s)) ||
    modes.some((m) => m !== 'sync' && m !== 'pipeline') ||
    (gradientShare !== undefined && !(gradientShare >= 0 && gradientShare <= 0.9)) ||
    (gradientParts !== undefined && !(Number.isInteger(gradientParts) && gradientParts >= 2 && gradientParts <= 64))
  ) {
    throw new Error(
      'usage: bench pipeline [--preset quick] [--steps N] [--seeds 1,2] [--staleness K] [--gradient-share X (0–0.9)] [--gradient-parts N (2–64)] [--modes sync,pipeline] [--wait-idle SECONDS] [--db PATH] [--keep] [--json]',
    );
  }
  const database = benchDatabase(values, 'pipeline');
  const databasePath = database.path;
  const store = openStore(databasePath);
  const manager = createRunManager({ store, databasePath });
  const log = (line: string) => (values.json ? process.stderr.write(`${line}\n`) : console.log(line));
  const load0 = os.loadavg();
  log(`bench pipeline: preset ${values.preset}, ${steps} steps, seeds ${seeds.join(', ')}${gradientShare !== undefined ? `, gradient share ${gradientShare}` : ''}${gradientParts !== undefined ? `, gradient parts ${gradientParts}` : ''}, ${os.cpus().length} CPUs, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);

  const capacityBefore = await parallelCapacity();
  log(`  machine: two busy processes do ${capacityBefore.toFixed(2)}× the work of one (the ceiling of a two-process speed-up right now)`);
  const results: RunFigures[] = [];
  try {
    for (const seed of seeds) {
      for (const mode of modes) {
        const config: Record<string, unknown> = {
          seed,
          optimization: { steps, checkpoint_every: 0 },
          eval: { every: 0 },
          pipeline: {
            mode,
            ...(values.staleness !== undefined ? { max_staleness: Number(values.staleness) } : {}),
            ...(gradientShare !== undefined ? { gradient_share: gradientShare } : {}),
            ...(gradientParts !== undefined ? { gradient_parts: gradientParts } : {}),
          },
        };
        if (waitIdleS > 0) await waitIdle(waitIdleS, log);
        const t0 = Date.now();
        const cpu0 = cpuSnapshot();
        const { runId } = await manager.start({ preset: values.preset, config, name: `bench ${mode} seed ${seed}` });
        await manager.waitForExit(runId);
        const cpu1 = cpuSnapshot();
        const cpu = cpu0 && cpu1 ? { own: cpu1.own - cpu0.own, other: Math.max(0, cpu1.busy - cpu0.busy - (cpu1.own - cpu0.own)) } : null;
        const f = figures(store, runId, mode, seed, steps, cpu);
        results.push(f);
        log(
          `  ${mode.padEnd(8)} seed ${seed}: ${f.status}, RL ${fixed(f.rlSeconds, 1)} s (run ${fixed(f.totalSeconds, 1)} s, ${((Date.now() - t0) / 1000).toFixed(1)} s with process start), ` +
            `${fixed(f.tokensPerS, 0)} tok/s, held-out system ${fixed(f.accuracy, 3)} (start ${fixed(f.accuracyAtStart, 3)}), solver ${fixed(f.solverAccuracy, 3)}; ` +
            `per step rollout ${fixed(f.rolloutS, 2)} s, update ${fixed(f.updateS, 2)} s, trainer idle ${fixed(f.trainerIdleS, 2)} s, rollout wait ${fixed(f.rolloutWaitS, 2)} s, rollout's gradient share ${fixed(f.rolloutGradientS, 2)} s, max staleness ${f.maxStaleness}; ` +
            `CPU ${fixed(f.cpuSeconds, 1)} s (${fixed(f.cpuSeconds === null ? null : f.cpuSeconds / f.totalSeconds, 2)} cores), other processes ${fixed(f.otherCpuSeconds, 1)} s`,
        );
      }
    }
  } finally {
    store.close();
    database.release();
  }
  const load1 = os.loadavg();
  const capacityAfter = await parallelCapacity();

  const pairs = seeds.flatMap((seed) => {
    const sync = results.find((r) => r.seed === seed && r.mode === 'sync');
    const pipe = results.find((r) => r.seed === seed && r.mode === 'pipeline');
    return sync && pipe ? [{ seed, sync, pipe }] : [];
  });
  const syncAcc = results.filter((r) => r.mode === 'sync' && r.accuracy !== null).map((r) => r.accuracy!);
  const spread = syncAcc.length > 1 ? Math.max(...syncAcc) - Math.min(...syncAcc) : null;
  const sum = (list: RunFigures[], key: 'rlSeconds' | 'totalSeconds') => list.reduce((a, r) => a + r[key], 0);
  const summary = {
    speedupRl: pairs.map((p) => ({ seed: p.seed, ratio: p.sync.rlSeconds / p.pipe.rlSeconds })),
    speedupTotal: pairs.map((p) => ({ seed: p.seed, ratio: p.sync.totalSeconds / p.pipe.totalSeconds })),
    overallRl: pairs.length ? sum(pairs.map((p) => p.sync), 'rlSeconds') / sum(pairs.map((p) => p.pipe), 'rlSeconds') : null,
    overallTotal: pairs.length ? sum(pairs.map((p) => p.sync), 'totalSeconds') / sum(pairs.map((p) => p.pipe), 'totalSeconds') : null,
    accuracyDiff: pairs.map((p) => ({ seed: p.seed, pipelineMinusSync: p.pipe.accuracy !== null && p.sync.accuracy !== null ? p.pipe.accuracy - p.sync.accuracy : null })),
    syncSeedSpread: spread,
    loadavg: [load0, load1],
    parallelCapacity: [capacityBefore, capacityAfter],
  };
  if (values.json) {
    console.log(JSON.stringify({ preset: values.preset, steps, seeds, gradientShare: gradientShare ?? null, gradientParts: gradientParts ?? null, results, summary }));
    return;
  }
  console.log('');
  for (const p of pairs) {
    console.log(
      `seed ${p.seed}: speed-up ${(p.sync.rlSeconds / p.pipe.rlSeconds).toFixed(2)}× RL wall time (${p.sync.rlSeconds.toFixed(1)} s → ${p.pipe.rlSeconds.toFixed(1)} s), ` +
        `${(p.sync.totalSeconds / p.pipe.totalSeconds).toFixed(2)}× whole run; held-out system accuracy sync ${fixed(p.sync.accuracy, 3)}, pipeline ${fixed(p.pipe.accuracy, 3)}`,
    );
  }
  if (summary.overallRl !== null) console.log(`all seeds: speed-up ${summary.overallRl.toFixed(2)}× RL wall time, ${summary.overallTotal!.toFixed(2)}× whole run`);
  if (spread !== null) console.log(`sync seed-to-seed spread of held-out system accuracy: ${spread.toFixed(3)} (max − min over seeds ${seeds.join(', ')})`);
  const busy = results.filter((r) => r.otherCpuSeconds !== null && r.otherCpuSeconds > 0.1 * r.totalSeconds);
  if (busy.length) console.log(`warning: other processes used more than a tenth of a core during ${busy.map((r) => `${r.mode} seed ${r.seed}`).join(', ')}; those figures are not clean`);
  console.log(`load average before ${load0.map((l) => l.toFixed(2)).join(' ')}, after ${load1.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`two busy processes did ${capacityBefore.toFixed(2)}× the work of one before the runs, ${capacityAfter.toFixed(2)}× after: the ceiling of the speed-up on this machine`);
}

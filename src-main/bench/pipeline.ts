/**
 * `npm run bench -- pipeline [--preset quick] [--steps N] [--seeds 1,2] [--staleness K] [--modes sync,pipeline]
 *                           [--db PATH] [--keep] [--json]`
 *
 * The same config and seed trained in `sync` mode (one worker process: every agent's rollouts,
 * then the updates) and in `pipeline` mode (a rollout worker and a trainer worker, each agent's
 * turns trained as soon as the agent finishes), back to back, through the run manager as
 * `marsrl run` starts them, for the same number of steps (so the same number of Solver samples).
 * The preset's runs start from its shipped checkpoints; evaluation runs at the start and the end
 * only (eval.every = 0), on the preset's held-out problems.
 *
 * Per run it prints: the RL wall time (first segment decoded → last update applied, from the
 * run's timeline), the whole run's wall time (process start, both evaluations and checkpoints
 * included), response tokens per second of RL wall time, held-out system and Solver accuracy at
 * the end (and at the start), and where the time went (mean rollout and update seconds a step,
 * trainer idle, rollout waits, staleness). Then per seed the speed-up (sync time / pipeline time)
 * and the accuracy difference, and, over the seeds, the sync runs' seed-to-seed spread.
 *
 * The machines this runs on may be shared: the load average before and after is printed, since a
 * busy core slows the two-process pipeline more than the one-process baseline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openStore, type Store } from '../engine/store';
import { createRunManager } from '../runner/manager';

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
  maxStaleness: number;
}

function meanOf(store: Store, runId: number, key: string): number {
  const items = store.metrics.series(runId, key).items;
  return items.length ? items.reduce((a, p) => a + p.value, 0) / items.length : 0;
}

function valueAt(store: Store, runId: number, key: string, step: number): number | null {
  return store.metrics.series(runId, key).items.find((p) => p.step === step)?.value ?? null;
}

function figures(store: Store, runId: number, mode: string, seed: number, steps: number): RunFigures {
  const run = store.runs.get(runId)!;
  const timeline = store.events.timeline(runId);
  const rl = timeline.filter((s) => s.kind === 'segment' || s.kind === 'update');
  const rlSeconds = (Math.max(...rl.map((s) => s.endedAt)) - Math.min(...rl.map((s) => s.startedAt))) / 1000;
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
    maxStaleness: staleness.length ? Math.max(...staleness) : 0,
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
      db: { type: 'string' },
      keep: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const steps = Number(values.steps);
  const seeds = values.seeds.split(',').map(Number);
  const modes = values.modes.split(',') as ('sync' | 'pipeline')[];
  if (!Number.isInteger(steps) || steps < 1 || seeds.some((s) => !Number.isInteger(s)) || modes.some((m) => m !== 'sync' && m !== 'pipeline')) {
    throw new Error('usage: bench pipeline [--preset quick] [--steps N] [--seeds 1,2] [--staleness K] [--modes sync,pipeline] [--db PATH] [--keep] [--json]');
  }
  const dir = values.db ? path.dirname(path.resolve(values.db)) : fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-pipeline-'));
  const databasePath = values.db ? path.resolve(values.db) : path.join(dir, 'bench.db');
  const store = openStore(databasePath);
  const manager = createRunManager({ store, databasePath });
  const log = (line: string) => (values.json ? process.stderr.write(`${line}\n`) : console.log(line));
  const load0 = os.loadavg();
  log(`bench pipeline: preset ${values.preset}, ${steps} steps, seeds ${seeds.join(', ')}, ${os.cpus().length} CPUs, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);

  const results: RunFigures[] = [];
  try {
    for (const seed of seeds) {
      for (const mode of modes) {
        const config: Record<string, unknown> = {
          seed,
          optimization: { steps, checkpoint_every: 0 },
          eval: { every: 0 },
          pipeline: { mode, ...(values.staleness !== undefined ? { max_staleness: Number(values.staleness) } : {}) },
        };
        const t0 = Date.now();
        const { runId } = await manager.start({ preset: values.preset, config, name: `bench ${mode} seed ${seed}` });
        await manager.waitForExit(runId);
        const f = figures(store, runId, mode, seed, steps);
        results.push(f);
        log(
          `  ${mode.padEnd(8)} seed ${seed}: ${f.status}, RL ${fixed(f.rlSeconds, 1)} s (run ${fixed(f.totalSeconds, 1)} s, ${((Date.now() - t0) / 1000).toFixed(1)} s with process start), ` +
            `${fixed(f.tokensPerS, 0)} tok/s, held-out system ${fixed(f.accuracy, 3)} (start ${fixed(f.accuracyAtStart, 3)}), solver ${fixed(f.solverAccuracy, 3)}; ` +
            `per step rollout ${fixed(f.rolloutS, 2)} s, update ${fixed(f.updateS, 2)} s, trainer idle ${fixed(f.trainerIdleS, 2)} s, rollout wait ${fixed(f.rolloutWaitS, 2)} s, max staleness ${f.maxStaleness}`,
        );
      }
    }
  } finally {
    store.close();
    if (!values.keep && !values.db) fs.rmSync(dir, { recursive: true, force: true });
  }
  const load1 = os.loadavg();

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
  };
  if (values.json) {
    console.log(JSON.stringify({ preset: values.preset, steps, seeds, results, summary }));
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
  console.log(`load average before ${load0.map((l) => l.toFixed(2)).join(' ')}, after ${load1.map((l) => l.toFixed(2)).join(' ')}`);
}

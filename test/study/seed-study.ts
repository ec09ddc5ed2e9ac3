/**
 * A finished 2×2 study of small fake runs, for the study, server and end-to-end tests: runs with
 * resolved `quick` configs, per-agent and evaluation metrics written through the store's
 * BatchWriter (the way the trainer writes), and the study rows linking them. Values are a
 * deterministic function of the config and seed — decoupled rewards a little more accurate,
 * global normalization with Corrector gradient spikes — so charts and tables have something to
 * show and tests can predict them.
 */
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { Store } from '../../src-main/engine/store';
import { expandMatrix, parseMatrix } from '../../src-main/engine/study/matrix';
import { createStudy } from '../../src-main/engine/study/runner';

export const SEEDED_AGENTS = ['solver', 'verifier1', 'corrector1'] as const;

export interface SeededStudy {
  studyId: number;
  runIds: number[];
}

/** Deterministic "noise" in [−1, 1] from integers. */
const wiggle = (a: number, b: number) => Math.sin(a * 12.9898 + b * 78.233) % 1;

export function seedStudy(store: Store, options: { seeds?: number[]; steps?: number; name?: string; start?: number } = {}): SeededStudy {
  const seeds = options.seeds ?? [1, 2];
  const steps = options.steps ?? 20;
  const matrix = parseMatrix({
    name: options.name ?? 'seeded-2x2',
    preset: 'quick',
    axes: { 'reward.scheme': ['decoupled', 'shared'], 'advantage.mode': ['agentwise', 'global'] },
    seeds,
    concurrency: 2,
  });
  const cells = expandMatrix(matrix);
  const studyId = createStudy(store, matrix, cells);
  const writer = store.writer({ flushIntervalMs: 0 });
  const runIds: number[] = [];
  let t0 = options.start ?? Date.UTC(2026, 0, 5, 9, 0, 0);
  for (const cell of cells) {
    const config = resolveConfig(deepMerge(presetDocument('quick'), cell.overrides));
    const runId = store.runs.create({ name: `seeded ${cell.label}`, preset: 'quick', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: cell.seed }, t0);
    store.runs.setStatus(runId, 'running', null, t0 + 1000);
    const decoupled = config.reward.scheme === 'decoupled';
    const global = config.advantage.mode === 'global';
    for (let step = 0; step < steps; step++) {
      const wallTime = 2 + step * 6 + cell.seed;
      for (const [a, agent] of SEEDED_AGENTS.entries()) {
        const spike = global && agent === 'corrector1' && step % 7 === 5 ? 5 : 1;
        writer.metric({ runId, step, wallTime, key: `${agent}/grad_norm`, value: (1 + 0.2 * wiggle(step + a, cell.seed)) * spike });
        writer.metric({ runId, step, wallTime, key: `${agent}/inflation`, value: global ? [0.8, 1.1, 1.6][a] : 1 });
        writer.metric({ runId, step, wallTime, key: `${agent}/samples`, value: [64, 16, 16][a] });
        writer.metric({ runId, step, wallTime, key: `${agent}/reward/mean`, value: 0.5 + 0.02 * step * (decoupled ? 1 : 0.5) });
      }
      writer.metric({ runId, step, wallTime, key: 'system/accuracy', value: Math.min(1, 0.6 + step * 0.01 * (decoupled ? 1.2 : 1) + 0.03 * wiggle(step, cell.seed)) });
      writer.metric({ runId, step, wallTime, key: 'perf/tokens_per_s', value: 900 + 20 * cell.seed });
      if (step % 5 === 0 || step === steps - 1) {
        const acc = 0.6 + 0.008 * step * (decoupled ? 1.25 : 1) - (global ? 0.01 : 0) + 0.005 * cell.seed;
        writer.metric({ runId, step, wallTime, key: 'eval/system/accuracy', value: acc });
        writer.metric({ runId, step, wallTime, key: 'eval/solver/accuracy', value: acc - 0.04 });
        writer.metric({ runId, step, wallTime, key: 'eval/system/avg@4', value: acc - 0.1 });
        writer.metric({ runId, step, wallTime, key: 'eval/system/pass@4', value: Math.min(1, acc + 0.1) });
        writer.metric({ runId, step, wallTime, key: 'eval/verifier/precision', value: 0.8 });
        writer.metric({ runId, step, wallTime, key: 'eval/verifier/recall', value: decoupled ? 0.4 : 0.3 });
        writer.metric({ runId, step, wallTime, key: 'eval/corrector/fix_rate', value: 0.5 });
      }
    }
    writer.flush();
    store.runs.setStatus(runId, 'done', null, t0 + 1000 + steps * 6000);
    store.studies.setCellRun(studyId, cell.cellIndex, runId);
    runIds.push(runId);
    t0 += 60_000;
  }
  writer.close();
  store.studies.setStatus(studyId, 'running', null, options.start ?? Date.UTC(2026, 0, 5, 9, 0, 0));
  store.studies.setStatus(studyId, 'done', null, t0);
  return { studyId, runIds };
}

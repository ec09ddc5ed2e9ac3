/**
 * Attempts (issue #17): a run really killed mid-step and resumed redoes the steps after its last
 * checkpoint; the killed attempt's rows of those steps stay in the store, marked superseded, and
 * no reader or export shows them unless asked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runExport, type ExportOptions } from '../../src-main/engine/export';
import type { Store } from '../../src-main/engine/store';
import { createRunManager } from '../../src-main/runner/manager';
import { duck } from '../export/duck';
import { runsDatabase } from '../helpers/runs-db';
import { tinyConfig } from '../training/tiny';

let store: Store;
let databasePath: string;
let runId: number;
const database = runsDatabase();
const STEPS = 5;
const PROBLEMS_PER_STEP = 2;

beforeAll(async () => {
  ({ store, databasePath } = database);
  // Checkpoints after steps 1 and 3; killed right after step 2 reported, so the resume loads the
  // checkpoint of step 1 and redoes step 2, whose rows (and evaluation at step 3, if written) the
  // killed attempt had committed.
  const config = tinyConfig({
    optimization: { steps: STEPS, checkpoint_every: 2, minibatch_size: 16 },
    eval: { every: 1, k: 2, problems: 3 },
    rollout: { problems_per_step: PROBLEMS_PER_STEP, solver_group: 3, select_k: 2, verifier_group: 2, corrector_group: 2, rounds: 2, max_response_tokens: 48, selection: 'adaptive' },
  });
  let killed = false;
  const manager = createRunManager({
    store,
    databasePath,
    onWorkerMessage: (message) => {
      if (message.type === 'progress' && message.progress.phase === 'rl' && message.progress.step === 3 && !killed) {
        killed = true;
        process.kill(store.runs.get(message.runId)!.workerPid!, 'SIGKILL');
      }
    },
  });
  ({ runId } = await manager.start({ config: config as unknown as Record<string, unknown>, name: 'killed and resumed' }));
  await manager.waitForExit(runId);
  expect(killed).toBe(true);
  expect(store.runs.get(runId)!.status).toBe('interrupted');
  await manager.resume(runId);
  await manager.waitForExit(runId);
  expect(store.runs.get(runId)!.status).toBe('done');
}, 240_000);

function liveTurnIds(): number[] {
  return (store.db.prepare('SELECT id FROM turns WHERE run_id = ? AND superseded_by IS NULL ORDER BY id').all(runId) as { id: number }[]).map((r) => r.id);
}

/**
 * "step/split" → the set of attempts among the rows. The evaluation at step s is made after step
 * s − 1 (of the weights it left), so a resume from the checkpoint of step 1 redoes training step 2
 * but keeps the evaluation at step 2: per step and split there is one attempt.
 */
function attemptsByStep(rows: Record<string, unknown>[]): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  for (const r of rows) {
    const key = `${Number(r.step)}/${String(r.split)}`;
    out.set(key, (out.get(key) ?? new Set()).add(Number(r.attempt)));
  }
  return out;
}

let outCounter = 0;
async function exportRows(format: ExportOptions['format'], container: 'jsonl' | 'parquet', includeSuperseded = false): Promise<Record<string, unknown>[]> {
  const out = path.join(path.dirname(databasePath), `export-${++outCounter}.${container}`);
  await runExport(store, { runs: [runId], format, container, out, filters: { correct: 'any', formatValid: 'any', includeSuperseded } });
  if (container === 'jsonl') return fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  return duck(`SELECT * FROM '${out}'`);
}

describe('attempts of a killed and resumed run', () => {
  it('records two attempts and marks the killed attempt\'s rows of the redone step superseded, keeping them', () => {
    expect(store.runs.get(runId)!.attempt).toBe(2);
    expect(store.runs.attempts(runId).map((a) => [a.attempt, a.resumedFromStep])).toEqual([
      [1, null],
      [2, 2],
    ]);
    const supersededTrain = store.db.prepare("SELECT step, attempt, superseded_by AS by FROM episodes WHERE run_id = ? AND split = 'train' AND superseded_by IS NOT NULL").all(runId) as { step: number; attempt: number; by: number }[];
    // Step 2 was committed by attempt 1 before the kill; attempt 2 redid it.
    expect(supersededTrain.filter((e) => e.step === 2)).toHaveLength(PROBLEMS_PER_STEP);
    expect(supersededTrain.every((e) => e.attempt === 1 && e.by === 2 && e.step >= 2)).toBe(true);
    // Every step has exactly one live attempt's training episodes.
    const live = store.db.prepare("SELECT step, COUNT(*) AS n, COUNT(DISTINCT attempt) AS attempts FROM episodes WHERE run_id = ? AND split = 'train' AND superseded_by IS NULL GROUP BY step ORDER BY step").all(runId) as { step: number; n: number; attempts: number }[];
    expect(live).toEqual(Array.from({ length: STEPS }, (_, step) => ({ step, n: PROBLEMS_PER_STEP, attempts: 1 })));
    // The evaluation at step 2 was written before the checkpoint of step 1: it stays live, from attempt 1.
    const evalAt2 = store.db.prepare("SELECT attempt, superseded_by AS by FROM episodes WHERE run_id = ? AND split = 'test' AND step = 2").all(runId) as { attempt: number; by: number | null }[];
    expect(evalAt2.length).toBeGreaterThan(0);
    expect(evalAt2.every((e) => e.attempt === 1 && e.by === null)).toBe(true);
    // Counts (marsrl show, the run page) are the live attempt's, with the superseded ones apart.
    const counts = store.runs.counts(runId);
    expect(counts.turns).toBe(liveTurnIds().length);
    expect(counts.supersededTurns).toBe((store.db.prepare('SELECT COUNT(*) AS n FROM turns WHERE run_id = ? AND superseded_by IS NOT NULL').get(runId) as { n: number }).n);
    expect(counts.supersededTurns).toBeGreaterThan(0);
    expect(store.integrityCheck()).toEqual(['ok']);
  });

  it('metrics of the redone step are the redo\'s; the killed attempt\'s values are kept aside', () => {
    const key = store.db.prepare("SELECT id FROM metric_keys WHERE key = 'solver/reward/mean'").get() as { id: number };
    const row = store.db.prepare('SELECT attempt FROM metrics WHERE run_id = ? AND key_id = ? AND step = 2').get(runId, key.id) as { attempt: number };
    expect(row.attempt).toBe(2);
    const kept = store.db.prepare('SELECT attempt, superseded_by AS by FROM superseded_metrics WHERE run_id = ? AND key_id = ? AND step = 2').all(runId, key.id);
    expect(kept).toEqual([{ attempt: 1, by: 2 }]);
    expect(store.metrics.series(runId, 'solver/reward/mean').items.map((p) => p.step)).toEqual([0, 1, 2, 3, 4]);
  });

  it('the trajectory browser queries show the live attempt unless asked', () => {
    const step2 = store.trajectories.pageTurns({ runId, step: 2, limit: 1000 }).items;
    expect(step2.length).toBeGreaterThan(0);
    // Live turns of step 2: the redo's training turns, and attempt 1's evaluation at step 2 (made
    // from the checkpoint's weights before the kill, so not redone).
    const splitOf = (episodeId: number | null) => (episodeId === null ? 'train' : store.trajectories.getEpisode(episodeId)!.split);
    expect(new Set(step2.filter((t) => splitOf(t.episodeId) === 'train').map((t) => t.attempt))).toEqual(new Set([2]));
    expect(step2.filter((t) => t.attempt === 1).every((t) => splitOf(t.episodeId) === 'test')).toBe(true);
    const all = store.trajectories.pageTurns({ runId, step: 2, limit: 1000, includeSuperseded: true }).items;
    expect(new Set(all.map((t) => t.attempt))).toEqual(new Set([1, 2]));
    expect(all.filter((t) => t.attempt === 1 && splitOf(t.episodeId) === 'train').every((t) => t.supersededBy === 2)).toBe(true);
    const episodes = store.trajectories.pageEpisodes({ runId, step: 2, split: 'train' }).items;
    expect(episodes.map((e) => e.attempt)).toEqual(Array(PROBLEMS_PER_STEP).fill(2));
    expect(store.trajectories.pageEpisodes({ runId, step: 2, split: 'train', includeSuperseded: true }).items).toHaveLength(2 * PROBLEMS_PER_STEP);
  });

  it.each(['jsonl', 'parquet'] as const)('every export format (%s) holds exactly one attempt per step, the live one, each row naming it', async (container) => {
    const live = liveTurnIds();
    const trajectories = await exportRows('trajectories', container);
    expect(trajectories.map((r) => Number(r.turn_id)).sort((a, b) => a - b)).toEqual(live);
    // Preference pairs of this tiny run all tie (no pair to form); test/store/attempts-migration
    // checks the pairs export on a store with rewards that differ.
    for (const [format, rows] of [
      ['trajectories', trajectories],
      ['sft', await exportRows('sft', container)],
    ] as const) {
      expect(rows.length, format).toBeGreaterThan(0);
      const byStep = attemptsByStep(rows);
      for (let step = 0; step < STEPS; step++) expect(byStep.has(`${step}/train`), `${format} step ${step}`).toBe(true);
      for (const [key, attempts] of byStep) expect([...attempts], `${format} ${key}`).toHaveLength(1);
      expect([...byStep.get('2/train')!], format).toEqual([2]);
      expect(rows.every((r) => r.superseded_by === null), format).toBe(true);
    }
    const withOld = await exportRows('trajectories', container, true);
    expect(withOld.length).toBeGreaterThan(trajectories.length);
    expect([...attemptsByStep(withOld).get('2/train')!].sort()).toEqual([1, 2]);
    expect(withOld.filter((r) => Number(r.attempt) === 1 && Number(r.step) === 2 && r.split === 'train').every((r) => Number(r.superseded_by) === 2)).toBe(true);
  }, 60_000);
});

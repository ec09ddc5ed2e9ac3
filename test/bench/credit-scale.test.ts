/**
 * Counterfactual credit at scale (issue 40): a seeded run of about 24,000 trained turns (200
 * steps × 12 problems, ~10 turns each). Measures one turn's credit query, the whole run's
 * divergence (every group scored under 2 schemes × 5 modes) and a counterfactual export, prints
 * the figures, and holds them to bounds that leave room for a slow shared CI core. Reproduce:
 *   npx vitest run test/bench/credit-scale.test.ts
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { createStudioService } from '../../src-main/api/service';
import { runExport } from '../../src-main/engine/export';
import { openStore, type Store } from '../../src-main/engine/store';
import { creditOfGroup, scoringOptionsOf, turnCounterfactual } from '../../src-main/engine/rl/credit-run';
import { CreditRepo } from '../../src-main/engine/store';
import type { CreditDivergence, StudioApi } from '#shared/contract';
import { seedCreditRun } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let service: StudioApi;
let runId: number;
let turnIds: number[];

beforeAll(() => {
  tmp = tempDir('marsrl-credit-scale-');
  const databasePath = path.join(tmp.dir, 'scale.db');
  store = openStore(databasePath);
  runId = seedCreditRun(store, { mode: 'global', steps: 200, problemsPerStep: 12 });
  turnIds = (store.db.prepare('SELECT id FROM turns WHERE run_id = ? ORDER BY id').all(runId) as { id: number }[]).map((r) => r.id);
  service = createStudioService({ store, databasePath, transport: 'direct' });
}, 120_000);
afterAll(() => {
  store.close();
  tmp.cleanup();
});

const ms = (started: number) => performance.now() - started;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe('counterfactual credit on ~24,000 turns', () => {
  it('answers a turn in milliseconds, the run’s divergence and a counterfactual export in seconds', async () => {
    expect(turnIds.length).toBeGreaterThan(20_000);
    const queries: number[] = [];
    for (let k = 0; k < 200; k++) {
      const id = turnIds[Math.floor((k * turnIds.length) / 200)];
      const started = performance.now();
      await callStudio(service, 'getCounterfactualCredit', [id]);
      queries.push(ms(started));
    }
    let started = performance.now();
    const repo = new CreditRepo(store.db);
    const groups = [...repo.runGroups(runId)];
    const readMs = ms(started);
    started = performance.now();
    const options = scoringOptionsOf(store.runs.get(runId)!.config);
    for (const group of groups) creditOfGroup(group, options);
    const scoringMs = ms(started);
    started = performance.now();
    const divergence = (await callStudio(service, 'getCreditDivergence', [runId])) as CreditDivergence;
    const divergenceMs = ms(started);
    started = performance.now();
    const exported = await runExport(store, { runs: [runId], format: 'trajectories', out: path.join(tmp.dir, 'scale.jsonl'), counterfactual: true });
    const exportMs = ms(started);
    started = performance.now();
    await runExport(store, { runs: [runId], format: 'trajectories', out: path.join(tmp.dir, 'plain.jsonl') });
    const plainExportMs = ms(started);

    console.log(
      [
        `credit at scale: ${turnIds.length} turns, ${groups.length} groups, ${divergence.steps.length} steps`,
        `  getCounterfactualCredit (one turn, over dispatch): median ${median(queries).toFixed(2)} ms, max ${Math.max(...queries).toFixed(2)} ms (200 turns)`,
        `  read every group (store/credit.ts runGroups): ${readMs.toFixed(0)} ms`,
        `  scoring every group under 2 schemes × 5 modes (rl/counterfactual.ts): ${scoringMs.toFixed(0)} ms`,
        `  getCreditDivergence (read + score + aggregate): ${divergenceMs.toFixed(0)} ms`,
        `  trajectories export with counterfactual columns: ${exportMs.toFixed(0)} ms (${exported.rows} rows) vs ${plainExportMs.toFixed(0)} ms without`,
      ].join('\n'),
    );
    expect(divergence.turns).toBe(turnIds.length);
    expect(divergence.maxStoredDifference).toBeLessThan(1e-12);
    expect(turnCounterfactual(store, turnIds[0])).not.toBeNull();
    expect(median(queries)).toBeLessThan(20);
    expect(divergenceMs).toBeLessThan(15_000);
  }, 180_000);
});

/**
 * The renderer's counterfactual-credit parts without a browser (issue 40): the turn panel's table
 * (the run's scheme first, its own cell marked, Δ = stored − alternative), the divergence chart's
 * alternatives and lines (one per agent, the run's own std dashed beside an alternative's), and
 * the export form's counterfactual flag (trajectories only), built from a real service answer.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CounterfactualCredit, CreditDivergence } from '#shared/contract';
import { createStudioService } from '../../src-main/api/service';
import { openStore, type Store } from '../../src-main/engine/store';
import { creditAlternatives, creditChartOption, defaultAlternative } from '../../src-renderer/src/charts/creditOption';
import { creditTable } from '../../src-renderer/src/util/credit';
import { buildExportRequest, emptyForm } from '../../src-renderer/src/util/exportForm';
import { validateOptions, type ExportOptions } from '../../src-main/engine/export/options';
import { seedCreditRun } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let credit: CounterfactualCredit;
let divergence: CreditDivergence;

beforeAll(async () => {
  tmp = tempDir();
  const databasePath = path.join(tmp.dir, 'r.db');
  store = openStore(databasePath);
  const runId = seedCreditRun(store, { scheme: 'shared', mode: 'agent-std', steps: 3, problemsPerStep: 2 });
  const service = createStudioService({ store, databasePath, transport: 'direct' });
  const corrector = store.db.prepare("SELECT id FROM turns WHERE run_id = ? AND agent = 'corrector1' ORDER BY id LIMIT 1").get(runId) as { id: number };
  credit = await service.getCounterfactualCredit(corrector.id);
  divergence = await service.getCreditDivergence(runId);
});
afterAll(() => {
  store.close();
  tmp.cleanup();
});

describe('the turn panel’s counterfactual table', () => {
  it('puts the run’s scheme first, marks its own cell, and gives Δ as stored − alternative', () => {
    const table = creditTable(credit);
    expect(table.schemes).toEqual(['shared', 'decoupled']);
    expect(table.rows.map((r) => r.label)).toEqual(['reward', ...credit.modes]);
    expect(table.rows[0].cells.map((c) => c.value)).toEqual([credit.rewards.shared, credit.rewards.decoupled]);
    const own = table.rows.flatMap((r) => r.cells.filter((c) => c.own && r.kind === 'advantage').map((c) => ({ mode: r.label, value: c.value })));
    expect(own).toEqual([{ mode: 'agent-std', value: credit.advantages.shared['agent-std'] }]);
    expect(table.reproduced).toBe(true);
    for (const row of table.rows.slice(1)) expect(row.delta).toBeCloseTo(credit.stored.advantage - credit.advantages.shared[row.label]!, 12);
    expect(table.rows.find((r) => r.label === 'agent-std')!.delta).toBeCloseTo(0, 12);
  });

  it('says so when the own cell does not give the stored value', () => {
    const tampered = { ...credit, stored: { ...credit.stored, advantage: credit.stored.advantage + 0.5 } };
    expect(creditTable(tampered).reproduced).toBe(false);
    // A run made elsewhere: its own scheme · mode is not computed, so nothing is claimed.
    expect(creditTable({ ...credit, reproducible: false }).reproduced).toBeNull();
  });
});

describe('the credit-divergence chart', () => {
  it('offers every scheme × mode, the run’s scheme first and its own marked; agent-wise first', () => {
    const alternatives = creditAlternatives(divergence);
    expect(alternatives).toHaveLength(divergence.schemes.length * divergence.modes.length);
    expect(alternatives[0].scheme).toBe('shared');
    expect(alternatives.filter((a) => a.own).map((a) => a.label)).toEqual(['agent-std (run)']);
    expect(defaultAlternative(divergence)).toMatchObject({ scheme: 'shared', mode: 'agentwise' });
  });

  it('draws one line per agent of the chosen alternative, the run’s own std dashed beside it', () => {
    const alternative = creditAlternatives(divergence).find((a) => a.scheme === 'shared' && a.mode === 'global')!;
    const diff = creditChartOption(divergence, alternative, 'diff') as { series: { name: string; data: [number, number | null][] }[] };
    expect(diff.series.map((s) => s.name)).toEqual(divergence.agents);
    const line = divergence.series.find((s) => s.scheme === 'shared' && s.mode === 'global' && s.agent === 'solver')!;
    expect(diff.series.find((s) => s.name === 'solver')!.data).toEqual(divergence.steps.map((step, k) => [step, line.meanAbsDiff[k]]));
    const std = creditChartOption(divergence, alternative, 'std') as { series: { name: string; lineStyle: { type?: string } }[] };
    expect(std.series.filter((s) => s.lineStyle.type === 'dashed').map((s) => s.name)).toEqual(divergence.agents.map((a) => `${a} (run)`));
  });
});

describe('the export form’s counterfactual columns', () => {
  it('asks for them on trajectories only, and the engine accepts what the form builds', () => {
    const out = path.join(tmp.dir, 'x.jsonl');
    const built = buildExportRequest({ ...emptyForm(), runs: [1], out, counterfactual: true }).request!;
    expect(built.counterfactual).toBe(true);
    expect(validateOptions({ ...built, runs: [1] } as ExportOptions).counterfactual).toBe(true);
    expect(buildExportRequest({ ...emptyForm(), runs: [1], out, format: 'sft', counterfactual: true }).request).not.toHaveProperty('counterfactual');
    expect(buildExportRequest({ ...emptyForm(), runs: [1], out }).request).not.toHaveProperty('counterfactual');
  });
});

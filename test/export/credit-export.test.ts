/**
 * The export's counterfactual columns (issue 40): `reward_<scheme>` and `advantage_<mode>` on every
 * trajectory row equal the StudioApi's credit of the turn and a plain-loop recomputation; the
 * run's own mode's column equals the stored `advantage`; Parquet read by DuckDB gives the same;
 * `marsrl export --counterfactual` writes them; asking for them on another format names the field.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport, ExportError } from '../../src-main/engine/export';
import { ADVANTAGE_MODES } from '../../src-main/engine/config/schema';
import { openStore, type Store } from '../../src-main/engine/store';
import { turnCounterfactual } from '../../src-main/engine/rl/credit-run';
import { loopAdvantages, loopGroups, loopRewards, loopRows } from '../helpers/credit-loop';
import { marsrlInProcess } from '../helpers/cli';
import { seedCreditRun } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';
import { duck } from './duck';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let db: string;
let runId: number;
beforeAll(() => {
  tmp = tempDir();
  db = path.join(tmp.dir, 'studio.db');
  store = openStore(db);
  runId = seedCreditRun(store, { mode: 'agent-mean', steps: 3, problemsPerStep: 3 });
});
afterAll(() => {
  store.close();
  tmp.cleanup();
});

const col = (mode: string) => `advantage_${mode.replace(/-/g, '_')}`;

describe('export with counterfactual columns', () => {
  it('writes every turn’s reward under each scheme and advantage under each mode, as the plain loop gives them', async () => {
    const out = path.join(tmp.dir, 'credit.jsonl');
    const result = await runExport(store, { runs: [runId], format: 'trajectories', out, counterfactual: true });
    const rows = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, number>);
    const stored = loopRows(store.db, runId);
    expect(result.rows).toBe(stored.length);
    const byId = new Map(rows.map((r) => [r.turn_id, r]));
    for (const group of loopGroups(stored)) {
      const shared = loopRewards(group, 'shared', 0);
      group.forEach((turn, i) => {
        const row = byId.get(turn.id)!;
        expect(row.reward_decoupled).toBe(turn.reward);
        expect(row.reward_shared).toBe(shared[i]);
        expect(row[col('agent-mean')]).toBeCloseTo(row.advantage, 12);
        for (const mode of ADVANTAGE_MODES) expect(row[col(mode)]).toBeCloseTo(loopAdvantages(group, group.map((g) => g.reward), mode)[i], 9);
        expect(row[col('agentwise')]).toBe(turnCounterfactual(store, turn.id)!.advantages.decoupled.agentwise);
      });
    }
    expect(fs.readFileSync(`${out}.card.md`, 'utf8')).toContain('`advantage_no_std`');
  });

  it('writes the same columns into Parquet, as DuckDB reads them', async () => {
    const out = path.join(tmp.dir, 'credit.parquet');
    await runExport(store, { runs: [runId], format: 'trajectories', out, counterfactual: true });
    const rows = await duck(`SELECT turn_id, advantage, advantage_agent_mean, advantage_global, reward_shared FROM read_parquet('${out}') ORDER BY turn_id`);
    expect(rows.length).toBe(loopRows(store.db, runId).length);
    for (const row of rows) {
      const credit = turnCounterfactual(store, row.turn_id as number)!;
      expect(row.advantage_agent_mean).toBeCloseTo(row.advantage as number, 12);
      expect(row.advantage_global).toBe(credit.advantages.decoupled.global);
      expect(row.reward_shared).toBe(credit.rewards.shared);
    }
  });

  it('leaves the columns out unless asked, and refuses them for a format without one row per turn', async () => {
    const plain = path.join(tmp.dir, 'plain.jsonl');
    await runExport(store, { runs: [runId], format: 'trajectories', out: plain });
    expect(Object.keys(JSON.parse(fs.readFileSync(plain, 'utf8').split('\n')[0]) as object)).not.toContain('reward_shared');
    const refused = await runExport(store, { runs: [runId], format: 'sft', out: path.join(tmp.dir, 'x.jsonl'), counterfactual: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ExportError);
    expect((refused as ExportError).field).toBe('counterfactual');
    expect((refused as Error).message).toContain('trajectories format only');
  });

  it('marsrl export --counterfactual writes them too', async () => {
    const out = path.join(tmp.dir, 'cli.jsonl');
    const result = await marsrlInProcess(db, ['export', String(runId), '--format', 'trajectories', '--out', out, '--counterfactual']);
    expect(result.code).toBe(0);
    const first = JSON.parse(fs.readFileSync(out, 'utf8').split('\n')[0]) as Record<string, number>;
    expect(first[col('agent-mean')]).toBeCloseTo(first.advantage, 12);
    expect(first).toHaveProperty('reward_shared');
  });
});

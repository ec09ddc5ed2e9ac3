/**
 * `marsrl credit RUN [--turn ID] [--json]` (issue 40), in process over a seeded store: the JSON is
 * the StudioApi's answer, the table shows the turn's row of every scheme with the run's own cell
 * marked and equal to the stored advantage, and bad flags name the flag and the fix.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CounterfactualCredit, CreditDivergence } from '#shared/contract';
import { openStore } from '../../src-main/engine/store';
import { marsrlInProcess } from '../helpers/cli';
import { loopRows, type LoopRow } from '../helpers/credit-loop';
import { seedCreditRun } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let db: string;
let runId: number;
let otherRunId: number;
let rows: LoopRow[];
let otherRows: LoopRow[];
beforeAll(() => {
  tmp = tempDir();
  db = path.join(tmp.dir, 'studio.db');
  const store = openStore(db);
  runId = seedCreditRun(store, { name: 'credit-global', mode: 'global', steps: 3, problemsPerStep: 2 });
  otherRunId = seedCreditRun(store, { name: 'credit-agentwise', mode: 'agentwise', steps: 2, problemsPerStep: 2, seed: 2 });
  rows = loopRows(store.db, runId);
  otherRows = loopRows(store.db, otherRunId);
  store.close();
});
afterAll(() => tmp.cleanup());

const marsrl = (...args: string[]) => marsrlInProcess(db, args);

describe('marsrl credit', () => {
  it('prints a turn’s credit, the run’s own cell marked and equal to the stored advantage', async () => {
    const row = rows.find((r) => r.agent === 'corrector1') ?? rows[0];
    const json = await marsrl('credit', String(runId), '--turn', String(row.id), '--json');
    expect(json.code).toBe(0);
    const credit = JSON.parse(json.out) as CounterfactualCredit;
    expect(credit.advantages.decoupled.global).toBeCloseTo(row.advantage, 12);
    const text = await marsrl('credit', 'credit-global', '--turn', String(row.id));
    expect(text.code).toBe(0);
    expect(text.out).toContain(`turn ${row.id} (${row.agent}`);
    const decoupledLine = text.out.split('\n').find((l) => l.startsWith('decoupled *'))!;
    expect(decoupledLine).toContain(`${Number(row.advantage.toPrecision(4))} *`);
    expect(text.out).toMatch(/^shared\s/m);
  });

  it('prints the run’s divergence per agent and alternative; --json gives every step', async () => {
    const text = await marsrl('credit', String(runId));
    expect(text.code).toBe(0);
    expect(text.out).toContain(`${rows.length} trained turns`);
    expect(text.out).toMatch(/decoupled · global \(run\)\s+corrector1\s+0\s/);
    expect(text.out).toMatch(/decoupled · agentwise\s+verifier1/);
    const json = JSON.parse((await marsrl('credit', String(otherRunId), '--json')).out) as CreditDivergence;
    expect(json).toMatchObject({ runId: otherRunId, mode: 'agentwise', turns: otherRows.length, steps: [0, 1] });
  });

  it('names the flag and the fix for bad input', async () => {
    const bad = await marsrl('credit', String(runId), '--turn', 'abc');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--turn must be an integer');
    const missing = await marsrl('credit');
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('credit needs a RUN');
    const elsewhere = await marsrl('credit', String(runId), '--turn', String(otherRows[0].id));
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.err).toContain(`turn ${otherRows[0].id} belongs to run ${otherRunId}, not run ${runId}`);
    const none = await marsrl('credit', String(runId), '--turn', '999999');
    expect(none.err).toContain('--turn: turn 999999 does not exist or has no advantage');
    const noRun = await marsrl('credit', 'nope');
    expect(noRun.code).toBe(1);
    expect(noRun.err).toContain('No run "nope"');
  });
});

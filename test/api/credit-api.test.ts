/**
 * Counterfactual credit over the StudioApi (issue 40) on seeded stores whose stored rewards and
 * advantages were computed in plain loops (test/helpers/seed/credit.ts): for a run made with each
 * mode the run's own cell reproduces every stored value, every other cell equals the plain loop,
 * the divergence per step and agent equals a hand aggregation, and bad payloads are refused over
 * dispatch and over HTTP naming the field.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CounterfactualCredit, CreditDivergence, StudioErrorShape } from '#shared/contract';
import { callStudio } from '../../src-main/api/dispatch';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { ADVANTAGE_MODES } from '../../src-main/engine/config/schema';
import { openStore, type Store } from '../../src-main/engine/store';
import { createStudioServer, type StudioServer } from '../../src-main/server/server';
import { loopAdvantages, loopGroups, loopRewards, loopRows } from '../helpers/credit-loop';
import { seedCreditRun } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';
import { api } from '../server/http';
import type { StudioApi } from '#shared/contract';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let service: StudioApi;
let server: StudioServer;
const runs: { scheme: 'decoupled' | 'shared'; mode: string; id: number }[] = [];

beforeAll(async () => {
  tmp = tempDir('marsrl-credit-api-');
  const databasePath = path.join(tmp.dir, 'credit.db');
  store = openStore(databasePath);
  for (const mode of ADVANTAGE_MODES) runs.push({ scheme: 'decoupled', mode, id: seedCreditRun(store, { mode, steps: 4, problemsPerStep: 3, seed: runs.length + 1 }) });
  runs.push({ scheme: 'shared', mode: 'global', id: seedCreditRun(store, { scheme: 'shared', mode: 'global', steps: 4, problemsPerStep: 3, seed: 9 }) });
  const hub = new EventHub();
  service = createStudioService({ store, databasePath, transport: 'http', hub });
  server = await createStudioServer({ service, hub, port: 0, rendererDir: tmp.dir, log: () => {} });
});

afterAll(async () => {
  await server?.close();
  store?.close();
  tmp?.cleanup();
});

describe('getCounterfactualCredit on seeded runs of every mode', () => {
  it('reproduces the stored values under the run’s own scheme and mode, and the plain loop everywhere else', async () => {
    for (const run of runs) {
      const rows = loopRows(store.db, run.id);
      for (const group of loopGroups(rows)) {
        const other = run.scheme === 'shared' ? 'decoupled' : 'shared';
        const otherRewards = loopRewards(group, other, 0);
        for (const [i, row] of group.entries()) {
          const credit = (await callStudio(service, 'getCounterfactualCredit', [row.id])) as CounterfactualCredit;
          expect(credit).toMatchObject({ turnId: row.id, runId: run.id, scheme: run.scheme, mode: run.mode, rewardMatches: true });
          expect(credit.group.map((g) => g.turnId)).toEqual(group.map((g) => g.id));
          expect(credit.advantages[run.scheme][run.mode]).toBeCloseTo(row.advantage, 12);
          expect(credit.rewards[other]).toBe(otherRewards[i]);
          for (const mode of ADVANTAGE_MODES) {
            expect(credit.advantages[run.scheme][mode]).toBeCloseTo(loopAdvantages(group, group.map((g) => g.reward), mode)[i], 9);
            expect(credit.advantages[other][mode]).toBeCloseTo(loopAdvantages(group, otherRewards, mode)[i], 9);
          }
        }
      }
    }
  });

  it('gives per step and agent the mean |actual − alternative| and the alternative’s std, as a hand aggregation', async () => {
    const run = runs.find((r) => r.mode === 'global')!;
    const divergence = (await callStudio(service, 'getCreditDivergence', [run.id])) as CreditDivergence;
    const rows = loopRows(store.db, run.id);
    expect(divergence).toMatchObject({ runId: run.id, scheme: 'decoupled', mode: 'global', turns: rows.length, rewardMismatches: 0, reproducible: true });
    expect(divergence.maxStoredDifference).toBeLessThan(1e-12);
    expect(divergence.steps).toEqual([0, 1, 2, 3]);
    const hand = new Map<string, number[][]>();
    for (const group of loopGroups(rows)) {
      const alt = loopAdvantages(group, group.map((g) => g.reward), 'agentwise');
      group.forEach((row, i) => {
        const key = `${row.step}|${row.agent}`;
        hand.set(key, [...(hand.get(key) ?? []), [Math.abs(row.advantage - alt[i]), alt[i]]]);
      });
    }
    const line = divergence.series.find((s) => s.scheme === 'decoupled' && s.mode === 'agentwise' && s.agent === 'corrector1')!;
    divergence.steps.forEach((step, k) => {
      const cells = hand.get(`${step}|corrector1`);
      if (!cells) return expect(line.meanAbsDiff[k]).toBeNull();
      const mean = cells.reduce((a, c) => a + c[0], 0) / cells.length;
      const m = cells.reduce((a, c) => a + c[1], 0) / cells.length;
      const std = Math.sqrt(cells.reduce((a, c) => a + (c[1] - m) ** 2, 0) / cells.length);
      expect(line.meanAbsDiff[k]).toBeCloseTo(mean, 9);
      expect(line.std[k]).toBeCloseTo(std, 6);
    });
    // The run's own line is 0 everywhere; an alternative is not.
    const own = divergence.series.filter((s) => s.scheme === 'decoupled' && s.mode === 'global');
    expect(own.flatMap((s) => s.meanAbsDiff).every((v) => v === null || v < 1e-12)).toBe(true);
    expect(line.meanAbsDiff.some((v) => v !== null && v > 0.01)).toBe(true);
  });

  it('answers the same over HTTP as `marsrl serve` serves it', async () => {
    const [row] = loopRows(store.db, runs[0].id);
    const response = await api(server.port, 'getCounterfactualCredit', [row.id]);
    expect(response.status).toBe(200);
    expect(response.json<{ result: CounterfactualCredit }>().result).toEqual(await service.getCounterfactualCredit(row.id));
    const divergence = await api(server.port, 'getCreditDivergence', [runs[0].id]);
    expect(divergence.status).toBe(200);
    expect(divergence.json<{ result: CreditDivergence }>().result.series.length).toBeGreaterThan(0);
  });
});

describe('a run made elsewhere (its own reward and advantage names, correctness partly unknown)', () => {
  it('applies every mode to its stored rewards, recomputes the Studio’s schemes where it can, and claims no reproduction', async () => {
    const id = seedCreditRun(store, { name: 'imported-like', mode: 'global', steps: 2, problemsPerStep: 2, seed: 21 });
    store.db.prepare("UPDATE rewards SET scheme = 'verl:reward' WHERE run_id = ?").run(id);
    store.db.prepare("UPDATE advantages SET mode = 'verl:advantage' WHERE run_id = ?").run(id);
    const rows = loopRows(store.db, id);
    const [first, second] = loopGroups(rows);
    store.db.prepare('UPDATE turns SET correct = NULL WHERE id = ?').run(second[0].id);
    const credit = await service.getCounterfactualCredit(first[1].id);
    expect(credit).toMatchObject({ scheme: 'verl:reward', mode: 'verl:advantage', reproducible: false, rewardMatches: null });
    expect(credit.schemes).toEqual(['verl:reward', 'decoupled', 'shared']);
    expect(credit.rewards['verl:reward']).toBe(first[1].reward);
    for (const mode of ADVANTAGE_MODES) expect(credit.advantages['verl:reward'][mode]).toBeCloseTo(loopAdvantages(first, first.map((g) => g.reward), mode)[1], 9);
    expect(credit.rewards.shared).toBe(loopRewards(first, 'shared', 0)[1]);
    expect(credit.note).toContain('not a scheme and mode the Studio computes');
    const unknown = await service.getCounterfactualCredit(second[1].id);
    expect(unknown.rewards.decoupled).toBeNull();
    expect(unknown.advantages.shared.global).toBeNull();
    expect(unknown.advantages['verl:reward'].global).not.toBeNull();
    expect(unknown.note).toContain('no stored correctness');
    const divergence = await service.getCreditDivergence(id);
    expect(divergence).toMatchObject({ reproducible: false, schemes: ['verl:reward', 'decoupled', 'shared'], turns: rows.length });
  });
});

describe('bad requests name the field and the fix', () => {
  const rejection = async (method: string, args: unknown) => {
    try {
      await callStudio(service, method, args);
    } catch (error) {
      return error as StudioErrorShape;
    }
    throw new Error('expected a rejection');
  };

  it('refuses a turn id that is not a positive integer, a missing one and an extra argument', async () => {
    expect(await rejection('getCounterfactualCredit', ['12'])).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('getCounterfactualCredit.0: a turn id') });
    expect(await rejection('getCounterfactualCredit', [1.5])).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('a turn id is a whole number') });
    expect(await rejection('getCounterfactualCredit', [-3])).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('a turn id is positive') });
    expect(await rejection('getCounterfactualCredit', [])).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('getCounterfactualCredit') });
    expect(await rejection('getCreditDivergence', [{ runId: 1 }])).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('getCreditDivergence.0') });
  });

  it('says a turn does not exist, or is held out, and a run does not exist', async () => {
    expect(await rejection('getCounterfactualCredit', [999_999])).toMatchObject({ code: 'not_found', message: expect.stringContaining('turn 999999 does not exist or has no advantage') });
    expect(await rejection('getCreditDivergence', [999_999])).toMatchObject({ code: 'not_found', message: 'run 999999 does not exist' });
    const http = await api(server.port, 'getCounterfactualCredit', ['x']);
    expect(http.status).toBe(400);
    expect(http.body).toContain('getCounterfactualCredit.0');
  });

  it('gives an empty divergence for a run with no trained turns', async () => {
    const empty = store.runs.create({ name: 'empty', config: {}, codeVersion: 'test', seed: 1 });
    const divergence = await service.getCreditDivergence(empty);
    expect(divergence).toMatchObject({ turns: 0, groups: 0, steps: [], series: [] });
  });
});

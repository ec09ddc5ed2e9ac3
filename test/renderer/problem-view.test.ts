/**
 * The problem view's logic (issue 40) without a browser: the grid of steps × runs and the compact
 * trees, checked against plain loops over a real answer of the StudioApi on seeded runs; the
 * outcome marks, credit numbers and the step picker by hand table; the route's round trip; and the
 * problems store over the real service (filters, paging, a stale answer dropped).
 */
import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProblemEpisodes, StudioApi, StudioBridge } from '#shared/contract';
import { createStudioService } from '../../src-main/api/service';
import { provideStudioClient } from '../../src-renderer/src/api/client';
import { useProblemsStore } from '../../src-renderer/src/stores/problems';
import { compactTurnRows, creditText, outcomeText, parseStepList, problemGrid, toggleStep, verdictWord } from '../../src-renderer/src/util/problemGrid';
import { storeInTemp } from '../helpers/runs-db';
import { seedProblems, type SeededProblems } from '../helpers/seed';

const db = storeInTemp('problem-view.db');
let seeded: SeededProblems;
let service: StudioApi;
let runIds: number[];

beforeAll(() => {
  seeded = seedProblems(db.store, { problems: 9, heldOut: 3, steps: [0, 10, 20, 30] });
  runIds = seeded.runs.map((r) => r.id);
  service = createStudioService({ store: db.store, databasePath: db.databasePath, transport: 'direct' });
});

async function viewOf(matchIndex: number, steps?: number[]): Promise<ProblemEpisodes> {
  const problemId = seeded.episodes.find((e) => e.runId === runIds[0] && e.matchKey === seeded.problems[matchIndex].matchKey)!.problemId;
  return service.getProblemEpisodes({ runIds, problemId, ...(steps ? { steps } : {}) });
}

describe('the grid of one problem', () => {
  it('has a row per shown step and a cell per run, each holding that run’s episodes at that step', async () => {
    const view = await viewOf(4, [0, 20, 30]);
    const grid = problemGrid(view);
    expect(grid.map((r) => r.step)).toEqual([0, 20, 30]);
    for (const row of grid) {
      expect(row.cells.map((c) => c.runId)).toEqual(runIds);
      for (const cell of row.cells) {
        const want = seeded.episodes.filter((e) => e.runId === cell.runId && e.step === row.step && e.matchKey === seeded.problems[4].matchKey).map((e) => e.episodeId);
        expect(cell.episodes.map((e) => e.episode.id)).toEqual(want);
        expect(cell.empty).toBe(want.length ? null : 'no episode at this step');
      }
    }
  });

  it('says "not in this run" for the run that lacks the problem, and "no episode at this step" for a step it has not', async () => {
    const last = seeded.problems.length - 1;
    const grid = problemGrid(await viewOf(last, [5, 10]));
    expect(grid.map((r) => r.cells.map((c) => c.empty))).toEqual([
      ['no episode at this step', 'not in this run'],
      [null, 'not in this run'],
    ]);
  });

  it('orders each episode as a tree: every turn after its parent, at its parent’s depth + 1, siblings by sample', async () => {
    const view = await viewOf(2);
    for (const e of view.episodes) {
      const rows = compactTurnRows(e.turns);
      expect(rows.map((r) => r.turn.id).sort()).toEqual(e.turns.map((t) => t.id).sort());
      rows.forEach((row, i) => {
        const parentAt = rows.findIndex((r) => r.turn.id === row.turn.parentTurnId);
        if (row.turn.parentTurnId === null) expect(row.depth).toBe(0);
        else {
          expect(parentAt).toBeLessThan(i);
          expect(row.depth).toBe(rows[parentAt].depth + 1);
        }
        expect(row.tone).toBe(row.turn.correct ? 'good' : 'bad');
        expect(row.text.length).toBeLessThanOrEqual(34);
      });
      const roots = rows.filter((r) => r.depth === 0).map((r) => r.turn.sampleIndex);
      expect(roots).toEqual([...roots].sort((a, b) => a - b));
    }
  });
});

describe('what a cell and the list say', () => {
  it('reads verdicts as words and credit as two decimals with a true minus', () => {
    expect([verdictWord('verifier1', 'approve'), verdictWord('verifier2', 'reject'), verdictWord('solver', '0123'), verdictWord('corrector1', null)]).toEqual(['approves', 'rejects', '0123', 'unparsed']);
    expect([creditText(null), creditText(1), creditText(-0.7071), creditText(0.001), creditText(-0.001), creditText(1.2076)]).toEqual(['—', '1.00', '−0.71', '0.00', '0.00', '1.21']);
  });

  it('marks each run’s last outcome, or says the run lacks the problem', () => {
    expect(outcomeText(null)).toEqual({ mark: '—', detail: 'not in this run', tone: 'dim' });
    expect(outcomeText({ runId: 1, problemId: 2, episodes: 4, solved: 3, lastStep: 30, lastCorrect: true })).toEqual({ mark: '✓', detail: 'step 30 · 3/4 solved', tone: 'good' });
    expect(outcomeText({ runId: 1, problemId: 2, episodes: 0, solved: 0, lastStep: null, lastCorrect: null }).mark).toBe('·');
  });

  it('reads the step picker’s text and toggles a step, never emptying the rows', () => {
    expect(parseStepList('20, 0 10,,10')).toEqual([0, 10, 20]);
    expect(parseStepList('0, x')).toBeNull();
    expect(parseStepList('-1')).toBeNull();
    expect(toggleStep([0, 20], 10)).toEqual([0, 10, 20]);
    expect(toggleStep([0, 10, 20], 10)).toEqual([0, 20]);
    expect(toggleStep([10], 10)).toEqual([10]);
  });
});

describe('the problem route', () => {
  it('round-trips runs, problem, turn, steps and the list filters through the URL', async () => {
    Object.assign(globalThis, { window: { location: { hash: '' }, addEventListener: () => {} } });
    const { hrefOf, parseHash } = await import('../../src-renderer/src/router');
    const route = { name: 'problem' as const, runs: [3, 4], problem: 17, turn: null, steps: [0, 10, 20], differs: true, split: 'test' as const };
    expect(parseHash(hrefOf(route))).toEqual(route);
    expect(parseHash('#/problem?runs=4,x,4,0&turn=311&steps=20,oops,0&split=dev')).toEqual({ name: 'problem', runs: [4], problem: null, turn: 311, steps: [0, 20], differs: false, split: null });
  });
});

describe('the problems store over the real service', () => {
  beforeEach(() => {
    provideStudioClient({ ...service, onEvent: () => () => {} } as StudioBridge);
    setActivePinia(createPinia());
  });
  afterAll(() => provideStudioClient(null));

  it('lists held-out first, filters the differing ones, and opens a problem from a turn', async () => {
    const store = useProblemsStore();
    await store.open(runIds, { differs: false, split: null });
    expect(store.items).toHaveLength(seeded.problems.length);
    expect(store.items.slice(0, 3).every((r) => r.split === 'test')).toBe(true);
    const differing = store.items.filter((r) => r.differs).map((r) => r.key);
    await store.open(runIds, { differs: true, split: null });
    expect(store.items.map((r) => r.key)).toEqual(differing);
    const turn = seeded.episodes.find((e) => e.runId === runIds[1] && e.step === 10)!;
    await store.openProblem({ problem: null, turn: turn.turns[1].id }, [10, 30]);
    expect(store.view?.steps).toEqual([10, 30]);
    expect(store.view?.episodes.some((e) => e.episode.id === turn.episodeId)).toBe(true);
  });

  it('keeps the answer of the latest request when an older one arrives after it', async () => {
    const store = useProblemsStore();
    await store.open(runIds, { differs: false, split: null });
    const ids = store.items.map((r) => r.runs[0]?.problemId).filter((id): id is number => id !== undefined);
    // The first problem's answer comes late, after the second's.
    const late: StudioApi['getProblemEpisodes'] = async (query) => {
      if (query.problemId === ids[0]) await new Promise((resolve) => setTimeout(resolve, 60));
      return service.getProblemEpisodes(query);
    };
    provideStudioClient({ ...service, getProblemEpisodes: late, onEvent: () => () => {} } as StudioBridge);
    const slow = store.openProblem({ problem: ids[0], turn: null }, []);
    const fast = store.openProblem({ problem: ids[1], turn: null }, []);
    await Promise.all([slow, fast]);
    expect(store.view?.runs[0].problemId).toBe(ids[1]);
  });

  it('shows the service’s refusal as the error and clears the view', async () => {
    const store = useProblemsStore();
    await store.open([runIds[0]], { differs: false, split: null });
    const ofSecond = seeded.episodes.find((e) => e.runId === runIds[1])!.problemId;
    await store.openProblem({ problem: ofSecond, turn: null }, []);
    expect(store.view).toBeNull();
    expect(store.error).toMatch(/not among runIds/);
  });
});

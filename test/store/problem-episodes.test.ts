/**
 * One problem, many episodes (issue 40): the store's reads (each served by an index) and the
 * matching across runs, checked against plain loops over what the seeder wrote.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { listProblemOutcomes, matchProblems, problemEpisodes, ProblemRequestError, spreadSteps } from '../../src-main/engine/compare';
import type { Store } from '../../src-main/engine/store';
import { PROBLEM_EPISODE_SQL, ProblemEpisodesRepo, type ProblemRecord } from '../../src-main/engine/store/problem-episodes';
import { runsDatabase } from '../helpers/runs-db';
import { seedProblems, type SeededProblems } from '../helpers/seed';

const db = runsDatabase();
let store: Store;
let seeded: SeededProblems;
let repo: ProblemEpisodesRepo;

beforeAll(() => {
  store = db.store;
  seeded = seedProblems(store, { problems: 12, heldOut: 3, steps: [0, 5, 10, 15] });
  repo = new ProblemEpisodesRepo(store.db);
});

/** The last outcome of each (run, match key), by a plain loop over the seeded episodes in write order. */
function lastOutcomes(): Map<string, { step: number; correct: boolean; episodes: number; solved: number }> {
  const out = new Map<string, { step: number; correct: boolean; episodes: number; solved: number }>();
  for (const e of seeded.episodes) {
    const key = `${e.runId}:${e.matchKey}`;
    const seen = out.get(key) ?? { step: -1, correct: false, episodes: 0, solved: 0 };
    if (e.step >= seen.step) Object.assign(seen, { step: e.step, correct: e.correct });
    seen.episodes += 1;
    seen.solved += e.correct ? 1 : 0;
    out.set(key, seen);
  }
  return out;
}

describe('problem episode reads', () => {
  it('use an index for every query, never a scan of a table', () => {
    for (const [name, sql] of Object.entries(PROBLEM_EPISODE_SQL)) {
      const plan = (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array((sql.match(/\?/g) ?? []).length).fill(1)) as { detail: string }[]).map((r) => r.detail);
      for (const step of plan) expect(step, `${name}: ${plan.join(' | ')}`).not.toMatch(/^SCAN (?!.*USING)/);
      expect(plan.some((d) => /USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY/.test(d)), `${name}: ${plan.join(' | ')}`).toBe(true);
    }
  });

  it("fold each problem's episodes as a plain loop does: count, solved, last step and its outcome", () => {
    const expected = lastOutcomes();
    for (const run of seeded.runs) {
      const folded = repo.outcomesOfRun(run.id);
      const problems = repo.problemsOfRun(run.id);
      expect(folded.size).toBe(problems.length);
      for (const p of problems) {
        const matchKey = seeded.problems.find((q) => q.question === p.question)!.matchKey;
        const want = expected.get(`${run.id}:${matchKey}`)!;
        expect(folded.get(p.id)).toEqual({ episodes: want.episodes, solved: want.solved, lastStep: want.step, lastCorrect: want.correct });
      }
    }
  });

  it("list a problem's episodes in step order with their turn counts", () => {
    const run = seeded.runs[1];
    const p = repo.problemsOfRun(run.id)[4];
    const want = seeded.episodes.filter((e) => e.problemId === p.id).sort((a, b) => a.step - b.step);
    const got = repo.episodesOfProblem(p);
    expect(got.map((e) => [e.id, e.step, e.correct, e.turnCount])).toEqual(want.map((e) => [e.episodeId, e.step, e.correct, e.turns.length]));
    expect(got.every((e) => e.question === p.question && e.reference === p.answer)).toBe(true);
  });
});

describe('problems matched across runs', () => {
  it('by id, else by text, held-out first, with the last problem in the first run only', () => {
    const matched = matchProblems(seeded.runs.map((r) => repo.problemsOfRun(r.id)));
    expect(matched).toHaveLength(seeded.problems.length);
    const splits = matched.map((m) => m.identity.split);
    expect(splits.indexOf('train')).toBe(seeded.problems.filter((p) => p.split === 'test').length);
    expect(splits.lastIndexOf('test')).toBeLessThan(splits.indexOf('train'));
    for (const problem of seeded.problems) {
      const m = matched.find((x) => x.perRun.some((p) => p?.question === problem.question))!;
      expect(m.perRun.map((p) => p?.problemKey ?? null)).toEqual(problem.keys);
      expect(m.matchedBy).toEqual(problem.keys.map((k, i) => (k === null ? null : i > 0 && k !== problem.keys[0] ? 'text' : 'id')));
    }
  });

  it('match by text only across whitespace, never across splits or into a run that has the problem already', () => {
    const p = (runId: number, id: number, split: 'train' | 'test', key: string, question: string): ProblemRecord => ({ id, runId, split, family: 'sort', problemKey: key, question, answer: '' });
    const matched = matchProblems([
      [p(1, 1, 'train', 'a', 'sort  123'), p(1, 2, 'train', 'b', 'sort 9'), p(1, 3, 'test', 'c', 'sort 5')],
      [p(2, 4, 'train', 'x', ' sort 123 '), p(2, 5, 'train', 'b', 'sort 9'), p(2, 6, 'train', 'y', 'sort 9'), p(2, 7, 'train', 'z', 'sort 5')],
    ]);
    const rows = matched.map((m) => m.perRun.map((q) => q?.id ?? null));
    // Held-out c first; a↔x by text; b↔b by id; y (same text as b, but run 2 has b already) alone; z (train) not matched to c (test).
    expect(rows).toEqual([[3, null], [1, 4], [2, 5], [null, 6], [null, 7]]);
  });

  it('orders keys that are whole numbers numerically, others as strings', () => {
    const keys = ['10', '9', 'b', '007', 'a2', '0', '8'];
    const matched = matchProblems([keys.map((key, i) => ({ id: i + 1, runId: 1, split: 'train' as const, family: 'math', problemKey: key, question: `q${key}`, answer: '' }))]);
    expect(matched.map((m) => m.identity.problemKey)).toEqual(['0', '007', '8', '9', '10', 'a2', 'b']);
  });

  it('says which outcomes differ, as a plain loop over the last outcomes does', () => {
    const expected = lastOutcomes();
    const page = listProblemOutcomes(store, { runIds: seeded.runs.map((r) => r.id), limit: 1000 });
    expect(page.total).toBe(seeded.problems.length);
    let differing = 0;
    for (const row of page.items) {
      const problem = seeded.problems.find((q) => q.question === row.question)!;
      const outcomes = seeded.runs.map((r, i) => (problem.keys[i] === null ? null : expected.get(`${r.id}:${problem.matchKey}`)!.correct));
      const known = outcomes.filter((o) => o !== null);
      const differs = known.length >= 2 && known.some((o) => o !== known[0]);
      expect(row.differs, problem.matchKey).toBe(differs);
      expect(row.runs.map((o) => o?.lastCorrect ?? null)).toEqual(outcomes);
      differing += differs ? 1 : 0;
    }
    expect(differing).toBeGreaterThan(0);
    expect(page.counts).toEqual({ problems: seeded.problems.length, heldOut: 3, differing });
    const only = listProblemOutcomes(store, { runIds: seeded.runs.map((r) => r.id), differs: true, split: 'train', limit: 2 });
    expect(only.total).toBe(page.items.filter((r) => r.differs && r.split === 'train').length);
    expect(only.items.every((r) => r.differs && r.split === 'train')).toBe(true);
    const next = listProblemOutcomes(store, { runIds: seeded.runs.map((r) => r.id), differs: true, split: 'train', limit: 2, cursor: only.nextCursor! });
    expect(next.items[0]?.key).toBe(page.items.filter((r) => r.differs && r.split === 'train')[2]?.key);
  });
});

describe("one problem's episodes", () => {
  it('across the steps of both runs, with the rewards and advantages each run stored', () => {
    const problem = seeded.problems[5];
    const anchor = repo.problemByKey(seeded.runs[0].id, problem.split, problem.matchKey)!;
    const view = problemEpisodes(store, { runIds: seeded.runs.map((r) => r.id), problemId: anchor.id });
    expect(view.allSteps).toEqual(seeded.steps);
    expect(view.steps).toEqual(seeded.steps);
    expect(view.runs.map((r) => r.label)).toEqual(['decoupled / agentwise', 'shared / global']);
    const want = seeded.episodes.filter((e) => e.matchKey === problem.matchKey);
    expect(view.episodes.map((e) => e.episode.id).sort()).toEqual(want.map((e) => e.episodeId).sort());
    for (const e of view.episodes) {
      const w = want.find((x) => x.episodeId === e.episode.id)!;
      expect(e.turns.map((t) => [t.id, t.agent, t.reward, t.correct])).toEqual(w.turns.map((t) => [t.id, t.agent, t.reward, t.correct]));
      e.turns.forEach((t, i) => expect(t.advantage).toBeCloseTo(w.turns[i].advantage, 9));
    }
  });

  it('from a turn, matched by text where the second run has another key; the steps asked for', () => {
    const problem = seeded.problems[0];
    const turn = seeded.episodes.find((e) => e.runId === seeded.runs[1].id && e.matchKey === problem.matchKey && e.step === 10)!.turns[3];
    const view = problemEpisodes(store, { runIds: seeded.runs.map((r) => r.id), turnId: turn.id, steps: [10, 0] });
    expect(view.steps).toEqual([0, 10]);
    expect(view.runs.map((r) => r.matchedBy)).toEqual(['text', 'id']);
    expect(view.problem.matchedBy).toBe('text');
    expect(view.episodes.map((e) => `${e.runId}@${e.step}`).sort()).toEqual(seeded.runs.flatMap((r) => [`${r.id}@0`, `${r.id}@10`]).sort());
  });

  it('refuses a problem of another run, and names missing problems and turns', () => {
    const other = repo.problemsOfRun(seeded.runs[1].id)[2];
    expect(() => problemEpisodes(store, { runIds: [seeded.runs[0].id], problemId: other.id })).toThrow(/belongs to run \d+, which is not among runIds/);
    expect(() => problemEpisodes(store, { runIds: [seeded.runs[0].id], problemId: 999_999 })).toThrow(ProblemRequestError);
    expect(() => problemEpisodes(store, { runIds: [seeded.runs[0].id], turnId: 999_999 })).toThrow(/turn 999999 does not exist/);
  });

  it('spreads the default steps evenly, first and last included', () => {
    expect(spreadSteps([0, 1, 2], 8)).toEqual([0, 1, 2]);
    expect(spreadSteps([0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 3)).toEqual([0, 50, 100]);
    expect(spreadSteps([0, 10, 20, 30, 40], 4)).toEqual([0, 10, 30, 40]);
    expect(spreadSteps([3, 7], 1)).toEqual([7]);
  });
});

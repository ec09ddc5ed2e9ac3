/**
 * The trajectory browser's episode filters (issue 18), checked against a plain loop over every
 * episode's turns of a seeded run: the SQL and the definition must pick the same episodes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { EpisodePageQuery, Store } from '../../src-main/engine/store';
import { runsDatabase } from '../helpers/runs-db';
import { seedStudio, type Seeded } from '../helpers/seed';

const db = runsDatabase();
let store: Store;
let seeded: Seeded;

beforeAll(() => {
  store = db.store;
  seeded = seedStudio(store);
});

type Episode = { id: number; step: number; split: string; correct: boolean | null; question: string; turns: ReturnType<Store['trajectories']['episodeTurns']> };

function allEpisodes(runId: number): Episode[] {
  const out: Episode[] = [];
  let after = 0;
  for (;;) {
    const page = store.trajectories.pageEpisodes({ runId, afterId: after, limit: 1000 });
    for (const e of page.items) out.push({ id: e.id, step: e.step, split: e.split, correct: e.correct, question: e.question ?? '', turns: store.trajectories.episodeTurns(e.id) });
    if (page.nextCursor === null) return out;
    after = page.nextCursor;
  }
}

const ids = (query: Omit<EpisodePageQuery, 'runId'>) => store.trajectories.pageEpisodes({ runId: seeded.done.id, limit: 1000, ...query }).items.map((e) => e.id);

describe('episode filters', () => {
  it('pick the episodes the definitions pick', () => {
    const episodes = allEpisodes(seeded.done.id);
    expect(episodes.length).toBeGreaterThan(20);
    const byId = (e: Episode) => e.id;
    const turnOf = (e: Episode, id: number | null) => e.turns.find((t) => t.id === id);
    const corrector = (e: Episode, change: (input: boolean | null, output: boolean | null) => boolean) =>
      e.turns.some((c) => {
        if (!c.agent.startsWith('corrector')) return false;
        const verdict = turnOf(e, c.parentTurnId);
        const input = verdict ? turnOf(e, verdict.parentTurnId) : undefined;
        return input !== undefined && change(input.correct, c.correct);
      });
    const expected: [Omit<EpisodePageQuery, 'runId'>, number[]][] = [
      [{ outcome: 'solved' }, episodes.filter((e) => e.correct === true).map(byId)],
      [{ outcome: 'unsolved' }, episodes.filter((e) => e.correct === false).map(byId)],
      [{ verifier: 'false_approve' }, episodes.filter((e) => e.turns.some((t) => t.agent.startsWith('verifier') && t.parsed === 'approve' && t.correct === false)).map(byId)],
      [{ verifier: 'false_reject' }, episodes.filter((e) => e.turns.some((t) => t.agent.startsWith('verifier') && t.parsed === 'reject' && t.correct === false)).map(byId)],
      [{ corrector: 'fixed' }, episodes.filter((e) => corrector(e, (i, o) => i === false && o === true)).map(byId)],
      [{ corrector: 'broke' }, episodes.filter((e) => corrector(e, (i, o) => i === true && o === false)).map(byId)],
      [{ corrector: 'unchanged' }, episodes.filter((e) => corrector(e, (i, o) => i !== null && i === o)).map(byId)],
      [{ stepFrom: 20, stepTo: 40 }, episodes.filter((e) => e.step >= 20 && e.step <= 40).map(byId)],
      [{ latestStep: true, split: 'train' }, episodes.filter((e) => e.step === Math.max(...episodes.filter((x) => x.split === 'train').map((x) => x.step))).map(byId)],
      [{ outcome: 'unsolved', corrector: 'fixed', stepFrom: 10 }, episodes.filter((e) => e.correct === false && e.step >= 10 && corrector(e, (i, o) => i === false && o === true)).map(byId)],
    ];
    for (const [query, want] of expected) {
      expect(ids(query), JSON.stringify(query)).toEqual(want);
    }
    // Every filter that has a definition above picks some episodes and leaves some out here, so
    // none of the comparisons is trivially empty or everything.
    for (const [query, want] of expected.slice(0, 7)) {
      expect(want.length, JSON.stringify(query)).toBeGreaterThan(0);
      expect(want.length, JSON.stringify(query)).toBeLessThan(episodes.length);
    }
  });

  it('searches questions, prompts and outputs, with % and _ taken literally', () => {
    const episodes = allEpisodes(seeded.done.id);
    const target = episodes[5];
    const digits = target.question.replace(/^sort /, '');
    expect(ids({ search: digits })).toEqual(episodes.filter((e) => e.question.includes(digits) || e.turns.some((t) => t.text.includes(digits) || t.prompt.includes(digits))).map((e) => e.id));
    expect(ids({ search: digits })).toContain(target.id);
    expect(ids({ search: 'V:no' }).length).toBe(episodes.filter((e) => e.turns.some((t) => t.text.includes('V:no') || t.prompt.includes('V:no'))).length);
    expect(ids({ search: '%' })).toEqual([]);
    expect(ids({ search: '_' })).toEqual([]);
  });
});

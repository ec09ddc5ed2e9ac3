import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store, type TurnRow } from '../../src-main/engine/store';
import { Rng } from '../../src-main/engine/util/rng';
import { episodeRow, turnRow } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';

const AGENTS = ['solver', 'verifier1', 'corrector1', 'verifier2'];
const TOTAL_TURNS = 100_000;

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let runId: number;
/** What we wrote, by id, to compare against what comes back. */
const written = new Map<number, { agent: string; step: number; text: string; reward: number; correct: boolean }>();

beforeAll(() => {
  tmp = tempDir();
  store = openStore(path.join(tmp.dir, 'turns.db'));
  runId = store.runs.create({ name: 'paging', config: { seed: 1 }, codeVersion: 'test', seed: 1 });
  const rng = new Rng(11, 'turns');
  const writer = store.writer({ maxPending: 7_777, flushIntervalMs: 0 });
  let step = 0;
  let count = 0;
  while (count < TOTAL_TURNS) {
    const episodeId = writer.newId('episodes');
    writer.episode(episodeRow({ id: episodeId, runId, step }));
    let parent: number | null = null;
    for (let i = 0; i < 10 && count < TOTAL_TURNS; i++, count++) {
      const id = writer.newId('turns');
      const agent = AGENTS[rng.int(0, AGENTS.length - 1)];
      const text = `t${id}-${rng.int(0, 1e6)}`;
      const reward = rng.int(0, 4) / 4;
      const correct = rng.next() < 0.5;
      written.set(id, { agent, step, text, reward, correct });
      writer.turn(turnRow({ id, runId, episodeId, step, agent, parentTurnId: parent, sampleIndex: i, prompt: 'p', text, correct }));
      writer.reward({ turnId: id, runId, value: reward, components: { correctness: reward }, scheme: 'decoupled' });
      parent = id;
    }
    step++;
  }
  writer.close();
});

afterAll(() => {
  store.close();
  tmp.cleanup();
});

function walk(query: Omit<Parameters<Store['trajectories']['pageTurns']>[0], 'afterId'>) {
  const ids: number[] = [];
  let cursor: number | undefined;
  let pages = 0;
  for (;;) {
    const page = store.trajectories.pageTurns({ ...query, afterId: cursor });
    pages++;
    for (const t of page.items) ids.push(t.id);
    if (page.nextCursor === null) break;
    cursor = page.nextCursor;
  }
  return { ids, pages };
}

describe('turns: batched writes and keyset pages', () => {
  it('reads back all 100k turns in id order, none lost, none repeated, with their rewards', () => {
    expect(store.runs.counts(runId).turns).toBe(TOTAL_TURNS);
    const { ids, pages } = walk({ runId, limit: 997 });
    expect(pages).toBe(Math.ceil(TOTAL_TURNS / 997));
    expect(ids.length).toBe(TOTAL_TURNS);
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
    expect(new Set(ids)).toEqual(new Set(written.keys()));
    const sample = store.trajectories.pageTurns({ runId, afterId: ids[5000] - 1, limit: 50 }).items;
    for (const t of sample) {
      const w = written.get(t.id)!;
      expect([t.agent, t.step, t.text, t.reward, t.correct]).toEqual([w.agent, w.step, w.text, w.reward, w.correct]);
    }
  });

  it('filters by agent, step, correctness and reward and still pages completely', () => {
    const expectIds = (pred: (w: { agent: string; step: number; reward: number; correct: boolean }) => boolean) =>
      [...written.entries()].filter(([, w]) => pred(w)).map(([id]) => id).sort((a, b) => a - b);
    expect(walk({ runId, agent: 'verifier2', limit: 500 }).ids).toEqual(expectIds((w) => w.agent === 'verifier2'));
    expect(walk({ runId, step: 777, limit: 3 }).ids).toEqual(expectIds((w) => w.step === 777));
    expect(walk({ runId, agent: 'solver', correct: false, minReward: 0.5, limit: 400 }).ids).toEqual(
      expectIds((w) => w.agent === 'solver' && !w.correct && w.reward >= 0.5),
    );
  });

  it('returns an episode as a tree through parent ids', () => {
    const first = store.trajectories.pageTurns({ runId, limit: 1 }).items[0];
    const turns = store.trajectories.episodeTurns(first.episodeId!);
    expect(turns.length).toBe(10);
    expect(turns[0].parentTurnId).toBeNull();
    for (let i = 1; i < turns.length; i++) expect(turns[i].parentTurnId).toBe(turns[i - 1].id);
  });

  it('gives two connections disjoint id blocks', () => {
    const other = openStore(store.path);
    const a = Array.from({ length: 5000 }, () => store.ids.next('turns'));
    const b = Array.from({ length: 5000 }, () => other.ids.next('turns'));
    const all = new Set([...a, ...b, ...written.keys()]);
    expect(all.size).toBe(a.length + b.length + written.size);
    other.close();
  });

  it('flushes on its timer, and turns a non-finite metric into a warning event', async () => {
    const writer = store.writer({ maxPending: 1_000_000, flushIntervalMs: 20 });
    writer.metric({ runId, step: 1, wallTime: 1, key: 'solver/loss', value: 0.5 });
    writer.metric({ runId, step: 2, wallTime: 2, key: 'solver/loss', value: Number.NaN });
    expect(store.metrics.series(runId, 'solver/loss').items).toEqual([]);
    await new Promise((r) => setTimeout(r, 80));
    expect(store.metrics.series(runId, 'solver/loss').items).toEqual([{ step: 1, wallTime: 1, value: 0.5 }]);
    const events = store.events.events(runId).items;
    expect(events.some((e) => e.kind === 'non_finite_metric' && e.message.includes('NaN'))).toBe(true);
    writer.close();
  });

  it('inserts parents first within a batch, whatever order rows were queued in', () => {
    const writer = store.writer({ maxPending: 1_000_000, flushIntervalMs: 0 });
    const episodeId = writer.newId('episodes');
    const turnId = writer.newId('turns');
    writer.advantage({ turnId, runId, value: 1.5, mode: 'agentwise', groupKey: 'g', mu: 0, sigma: 1, weight: 0.75 });
    writer.reward({ turnId, runId, value: 1, components: { correctness: 1 }, scheme: 'shared' });
    writer.turn({
      id: turnId, runId, episodeId, step: 0, agent: 'solver', policyId: 'solver', round: 0, groupId: 0, parentTurnId: null, sampleIndex: 0,
      prompt: 'p', text: 'late parent', tokenCount: 1, parsed: null, correct: true, formatValid: true, policyVersionMin: 0, policyVersionMax: 0, createdAt: 0,
    });
    writer.episode({ id: episodeId, runId, step: 0, problemId: null, split: 'train', finalAnswer: null, correct: null, rounds: 0, meta: null });
    writer.episodeOutcome(episodeId, '42', true, 1);
    expect(writer.flush()).toBe(5);
    const turn = store.trajectories.getTurn(turnId)!;
    expect([turn.text, turn.reward, turn.advantage, turn.advantageMode, turn.advantageWeight]).toEqual(['late parent', 1, 1.5, 'agentwise', 0.75]);
    expect(store.trajectories.getEpisode(episodeId)).toMatchObject({ finalAnswer: '42', correct: true, rounds: 1 });
  });

  it('rolls back a whole batch when one row is bad, keeping earlier batches', () => {
    const before = store.runs.counts(runId).turns;
    const writer = store.writer({ maxPending: 1_000_000, flushIntervalMs: 0 });
    const id = writer.newId('turns');
    const good: TurnRow = {
      id, runId, episodeId: null, step: 0, agent: 'solver', policyId: 'solver', round: 0, groupId: 0, parentTurnId: null, sampleIndex: 0,
      prompt: 'p', text: 'x', tokenCount: 1, parsed: null, correct: null, formatValid: true, policyVersionMin: 0, policyVersionMax: 0, createdAt: 0,
    };
    writer.turn(good);
    writer.turn({ ...good, id: writer.newId('turns'), parentTurnId: 987_654_321 });
    expect(() => writer.flush()).toThrow(/FOREIGN KEY/);
    expect(store.runs.counts(runId).turns).toBe(before);
  });
});

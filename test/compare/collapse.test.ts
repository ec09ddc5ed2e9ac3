/**
 * Agents collapsed to one output (issue 35). The rule against hand tables at its edges; the
 * store's counts against the real turns of two quick-preset runs (test/fixtures/collapse-quick.json:
 * the shared-reward run's Verifier rejected everything, the decoupled run's did not); and what
 * Compare says about them: the flag, and that one seed per side is not evidence.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { collapseFlags, collapseFromCounts, compareRuns, compareWarnings, MIN_CLASS, MIN_OUTPUTS, type RunData } from '../../src-main/engine/compare';
import { likeRunsMatrix } from '../../src-main/engine/study/like';
import { expandMatrix, parseMatrix } from '../../src-main/engine/study/matrix';
import { type AgentOutputCounts, type Store } from '../../src-main/engine/store';
import { quickRunRows, writeQuickRunTurns } from '../helpers/seed';
import { runsDatabase } from '../helpers/runs-db';

const verifier = (over: Partial<AgentOutputCounts['verifiers'][number]>) => ({ agent: 'verifier1', approvals: 0, rejections: 0, rightApproved: 0, rightRejected: 0, wrongApproved: 0, wrongRejected: 0, ...over });
const counts = (over: Partial<AgentOutputCounts>): AgentOutputCounts => ({ steps: [10, 19], verifiers: [], correctors: [], ...over });

describe('collapseFromCounts', () => {
  it('a Verifier that rejects 95% of everything, right solutions too, is flagged with its numbers', () => {
    // 100 verdicts: 95 rejections; of 40 right solutions 38 rejected (95%); of 60 wrong ones 57 rejected.
    const v = verifier({ approvals: 5, rejections: 95, rightApproved: 2, rightRejected: 38, wrongApproved: 3, wrongRejected: 57 });
    const [flag] = collapseFromCounts(counts({ verifiers: [v] }));
    expect(flag).toEqual({
      agent: 'verifier1',
      kind: 'rejects-everything',
      share: 0.95,
      count: 100,
      steps: [10, 19],
      message: 'verifier1 rejects nearly everything: 95 of 100 verdicts (95.0%) in steps 10–19, 38 of the 40 right solutions among them; precision 0.600, recall 0.950',
    });
  });

  it('rejecting nearly everything is not a collapse when what it rejects is wrong', () => {
    // 96% rejections, but of 20 right solutions it rejected only 4: it reads its input.
    expect(collapseFromCounts(counts({ verifiers: [verifier({ approvals: 16, rejections: 384, rightApproved: 16, rightRejected: 4, wrongRejected: 380 })] }))).toEqual([]);
    // Just under the bar: 94 of 100.
    expect(collapseFromCounts(counts({ verifiers: [verifier({ approvals: 6, rejections: 94, rightApproved: 2, rightRejected: 38, wrongApproved: 4, wrongRejected: 56 })] }))).toEqual([]);
  });

  it('needs enough outputs, and enough of the class that decides', () => {
    expect(collapseFromCounts(counts({ verifiers: [verifier({ rejections: MIN_OUTPUTS - 1, rightRejected: 10, wrongRejected: MIN_OUTPUTS - 11 })] }))).toEqual([]);
    expect(collapseFromCounts(counts({ verifiers: [verifier({ rejections: 50, rightRejected: MIN_CLASS - 1, wrongRejected: 50 - MIN_CLASS + 1 })] }))).toEqual([]);
    expect(collapseFromCounts(counts({ verifiers: [verifier({ rejections: 50, rightRejected: MIN_CLASS, wrongRejected: 50 - MIN_CLASS })] }))).toHaveLength(1);
  });

  it('a Verifier that approves everything, wrong solutions included', () => {
    const [flag] = collapseFromCounts(counts({ steps: [7, 7], verifiers: [verifier({ approvals: 30, rightApproved: 24, wrongApproved: 6 })] }));
    expect(flag.kind).toBe('approves-everything');
    expect(flag.message).toBe('verifier1 approves nearly everything: 30 of 30 verdicts (100.0%) at step 7, 6 of the 6 wrong solutions among them; precision undefined, recall 0.000');
  });

  it('a Corrector that returns its input, wrong inputs included', () => {
    const c = { agent: 'corrector1', repairs: 40, unchanged: 39, wrongInputs: 30, wrongUnchanged: 29 };
    expect(collapseFromCounts(counts({ correctors: [c] }))).toEqual([
      expect.objectContaining({ kind: 'returns-input', share: 39 / 40, message: 'corrector1 returns its input: 39 of 40 repairs (97.5%) in steps 10–19 give back the answer they were given, 29 of the 30 wrong ones among them' }),
    ]);
    // Keeping right answers and fixing wrong ones is the job.
    expect(collapseFromCounts(counts({ correctors: [{ ...c, unchanged: 39, wrongUnchanged: 20 }] }))).toEqual([]);
  });
});

/** A run holding the fixture's turns, written as the trainer writes them. */
function storedRun(store: Store, name: 'shared' | 'decoupled'): number {
  const runId = store.runs.create({ name, config: { reward: { scheme: name } }, codeVersion: 't', seed: 1 });
  const writer = store.writer({ maxPending: 100_000, flushIntervalMs: 0 });
  writeQuickRunTurns(writer, runId, quickRunRows(name));
  writer.close();
  return runId;
}

describe('on the turns of two real quick runs', () => {
  const db = runsDatabase();
  let store: Store;
  let shared: number;
  let decoupled: number;
  beforeAll(() => {
    store = db.store;
    shared = storedRun(store, 'shared');
    decoupled = storedRun(store, 'decoupled');
  });

  it("flags the shared run's Verifier, which rejects everything", () => {
    expect(collapseFlags(store, shared)).toEqual([
      {
        agent: 'verifier1',
        kind: 'rejects-everything',
        share: 1,
        count: 605,
        steps: [50, 59],
        message: 'verifier1 rejects nearly everything: 605 of 605 verdicts (100.0%) in steps 50–59, 224 of the 224 right solutions among them; precision 0.630, recall 1.000',
      },
    ]);
  });

  it("raises nothing on the decoupled run's Verifier (it rejects half, and few right ones)", () => {
    const counted = store.diagnostics.agentOutputCounts(decoupled, 10);
    const v = counted.verifiers[0];
    expect(v.rejections / (v.approvals + v.rejections)).toBeLessThan(0.6);
    expect(counted.correctors[0].repairs).toBeGreaterThan(MIN_OUTPUTS);
    expect(collapseFlags(store, decoupled)).toEqual([]);
  });

  it('Compare says one seed per side is not evidence, with the study that would make it so, and names the collapse', () => {
    const asData = (runId: number, scheme: string, accuracy: number): RunData => ({
      runId, name: scheme, status: 'done', seed: 1, config: { reward: { scheme } }, startedAt: 0, endedAt: 1,
      series: { 'eval/system/accuracy': [{ step: 60, wallTime: 1, value: accuracy }] },
    });
    const runs = [asData(decoupled, 'decoupled', 0.895), asData(shared, 'shared', 0.97)];
    const flags = new Map(runs.map((r) => [r.runId, collapseFlags(store, r.runId)]));
    const warnings = compareWarnings(compareRuns(runs), flags);
    expect(warnings).toEqual([
      {
        kind: 'one-seed',
        message: `Each side is one run of one seed (run ${decoupled}: seed 1; run ${shared}: seed 1), so a difference between them is not evidence: runs of one config differ from seed to seed, and one run per side cannot tell by how much. Run each config with more seeds, then compare the groups:`,
        command: `marsrl study --like ${decoupled},${shared} --seeds 3`,
        runIds: [decoupled, shared],
      },
      expect.objectContaining({ kind: 'collapse', runIds: [shared], message: expect.stringMatching(/^Run \d+ \(shared\): verifier1 rejects nearly everything: 605 of 605/) }),
    ]);
    // Grouped by the config that differs, each side still one seed: said per side.
    const grouped = compareWarnings(compareRuns(runs, { groupBy: ['reward.scheme'] }), new Map());
    expect(grouped[0].message).toMatch(/^Seeds behind each side — decoupled: 1 seed \(1\); shared: 1 seed \(1\)\. Every side is one seed/);
    // Two seeds a side: nothing to warn about.
    const twoSeeds = [...runs, { ...asData(901, 'decoupled', 0.9), seed: 2 }, { ...asData(902, 'shared', 0.96), seed: 2 }];
    expect(compareWarnings(compareRuns(twoSeeds, { groupBy: ['reward.scheme'] }), new Map())).toEqual([]);
  });
});

describe('marsrl study --like', () => {
  const base = { seed: 1, name: 'x', task: { family: 'sort' }, reward: { scheme: 'decoupled' }, optimization: { steps: 5 } };
  it('one differing path becomes the axis, over seeds 1..N, the first run the baseline', () => {
    const doc = likeRunsMatrix([{ id: 3, name: 'a', preset: 'quick', config: base }, { id: 4, name: 'b', preset: 'quick', config: { ...base, seed: 9, reward: { scheme: 'shared' } } }], 3);
    expect(doc).toEqual({ name: 'like-3-4', preset: 'quick', base: { task: { family: 'sort' }, reward: { scheme: 'decoupled' }, optimization: { steps: 5 } }, axes: { 'reward.scheme': ['decoupled', 'shared'] }, seeds: 3, baseline: { 'reward.scheme': 'decoupled' } });
    const cells = expandMatrix(parseMatrix(doc));
    expect(cells.map((c) => [c.values['reward.scheme'], c.seed])).toEqual([['decoupled', 1], ['decoupled', 2], ['decoupled', 3], ['shared', 1], ['shared', 2], ['shared', 3]]);
    expect(cells.every((c) => c.config.optimization.steps === 5)).toBe(true);
  });
  it('several differing paths: one variant per run, labelled by what differs; the same config twice is refused', () => {
    const other = { ...base, reward: { scheme: 'shared' }, optimization: { steps: 7 } };
    const doc = likeRunsMatrix([{ id: 3, name: 'a', preset: null, config: base }, { id: 4, name: 'b', preset: null, config: other }], 2) as { axes: { variant: { label: string }[] } };
    expect(doc.axes.variant.map((v) => v.label)).toEqual(['run 3: optimization.steps=5, reward.scheme=decoupled', 'run 4: optimization.steps=7, reward.scheme=shared']);
    expect(expandMatrix(parseMatrix(doc)).map((c) => c.config.optimization.steps)).toEqual([5, 5, 7, 7]);
    expect(() => likeRunsMatrix([{ id: 3, name: 'a', preset: null, config: base }, { id: 5, name: 'c', preset: null, config: { ...base, seed: 2 } }], 2)).toThrow(/same config \(they differ only in seed\)/);
  });
});

/**
 * `marsrl rejudge` on a run whose stored verdicts were made by a planted checker (issue #34): the
 * issue-#14 rules, re-stated here as a small function that compares only what follows the last `=`
 * and otherwise the text. Every turn's verdict under today's checker is written out by hand in the
 * table below, so the test knows which verdicts must be listed as changed.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toRunDetail } from '../../src-main/api/views';
import { rejudgeRun, RejudgeError } from '../../src-main/engine/rejudge';
import { openStore, type Store } from '../../src-main/engine/store';
import { judgeMathAnswer, MATH_CHECKER_FULL_VERSION, stopCheckerThread } from '../../src-main/engine/tasks/math-answer';
import { rejudgeCommand } from '../../src-main/cli/commands/rejudge';
import { showCommand } from '../../src-main/cli/commands/runs';
import { marsrl } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

/** The planted checker: the right-hand side of the last `=`, then the text without spaces and `$`. */
function plantedChecker(reference: string, response: string): boolean {
  const box = /\\boxed\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}/.exec(response)?.[1] ?? response;
  const side = (s: string) => s.slice(s.lastIndexOf('=') + 1).replace(/[\s$]/g, '');
  return side(reference) === side(box);
}

/** [reference, Solver response, right under today's checker (judged by hand), split] */
const SOLUTIONS: [string, string, boolean, 'train' | 'test'][] = [
  ['2x + z = 1', 'So \\boxed{1}', false, 'train'], // planted: right (only the right-hand side)
  ['5x - 7y + 11z + 4 = 0', '\\boxed{x + y - z + 2 = 0}', false, 'train'], // planted: right (both end in = 0)
  ['20', 'MATH omits the sign: \\boxed{20\\%}', true, 'train'], // planted: wrong (text differs)
  ['7', 'Adding, \\boxed{7}', true, 'train'], // both right
  ['\\frac{1}{2}', '\\boxed{\\frac{2}{5}}', false, 'train'], // both wrong
  ['(r+5)^2', '\\boxed{(r+5)(r+5)}', true, 'test'], // planted: wrong (text differs)
];

let tmp: ReturnType<typeof tempDir>;
let dbPath: string;
let runId: number;
const solverTurn: number[] = [];
const verifierTurn: number[] = [];
let supersededTurn: number;

function seed(store: Store): void {
  runId = store.runs.create({ name: 'planted', config: { task: { family: 'math' } }, codeVersion: 'test', seed: 1, status: 'done', checkerVersion: 'math-answer/1 (planted: right-hand sides)' });
  const writer = store.writer({ flushIntervalMs: 0 });
  const now = Date.now();
  SOLUTIONS.forEach(([reference, response, , split], i) => {
    const problemId = writer.newId('problems');
    writer.problem({ id: problemId, runId, split, family: 'math', problemKey: `math:p${i}`, question: `problem ${i}`, answer: reference, meta: null });
    const episodeId = writer.newId('episodes');
    writer.episode({ id: episodeId, runId, step: i, problemId, split, finalAnswer: null, correct: null, rounds: 1, meta: null });
    const planted = plantedChecker(reference, response);
    const turn = (agent: string, parent: number | null, text: string, parsed: string | null, correct: boolean) => {
      const id = writer.newId('turns');
      writer.turn({ id, runId, episodeId, step: i, agent, policyId: agent.replace(/\d+$/, ''), round: agent === 'solver' ? 0 : 1, groupId: 0, parentTurnId: parent, sampleIndex: 0, prompt: `problem ${i}`, text, tokenCount: 10, parsed, correct, formatValid: true, policyVersionMin: 0, policyVersionMax: 0, createdAt: now });
      writer.reward({ turnId: id, runId, value: correct ? 1 : 0, components: { correctness: correct ? 1 : 0 }, scheme: 'decoupled' });
      return id;
    };
    const solver = turn('solver', null, response, response.match(/\\boxed\{(.*)\}$/)?.[1] ?? null, planted);
    solverTurn.push(solver);
    // A Verifier that approves every solution: right exactly when the solution is.
    verifierTurn.push(turn('verifier1', solver, 'Checked.\nVerdict: correct', 'approve', planted));
  });
  writer.close();
  // A turn a resume threw away: never re-judged, never listed.
  supersededTurn = solverTurn[0] + 1000;
  store.db
    .prepare("INSERT INTO turns (id, run_id, episode_id, step, agent, policy_id, round, group_id, sample_index, prompt, text, token_count, parsed, correct, format_valid, policy_version_min, policy_version_max, created_at, superseded_by) SELECT ?, run_id, episode_id, step, agent, policy_id, round, group_id, 1, prompt, text, token_count, parsed, correct, format_valid, 0, 0, created_at, 2 FROM turns WHERE id = ?")
    .run(supersededTurn, solverTurn[0]);
}

beforeAll(() => {
  tmp = tempDir();
  dbPath = path.join(tmp.dir, 'rejudge.db');
  const store = openStore(dbPath);
  seed(store);
  const other = store.runs.create({ name: 'sorting', config: { task: { family: 'sort' } }, codeVersion: 'test', seed: 1, status: 'done' });
  const running = store.runs.create({ name: 'busy', config: { task: { family: 'math' } }, codeVersion: 'test', seed: 1, status: 'running' });
  expect([other, running]).toEqual([runId + 1, runId + 2]);
  store.close();
});

afterAll(() => {
  stopCheckerThread();
  tmp.cleanup();
});

/** The turns whose planted verdict differs from today's, each Solver turn with the Verifier that judged it. */
function expectedChanges(): number[] {
  const ids: number[] = [];
  SOLUTIONS.forEach(([reference, response, today], i) => {
    if (plantedChecker(reference, response) !== today) ids.push(solverTurn[i], verifierTurn[i]);
  });
  return ids.sort((a, b) => a - b);
}

describe('rejudge a run judged by a planted checker', () => {
  it('a dry run lists exactly the changed verdicts (turn, old, new, reference, answer) and writes nothing', () => {
    const store = openStore(dbPath);
    try {
      const before = store.db.prepare('SELECT id, correct FROM turns ORDER BY id').all();
      const report = rejudgeRun(store, runId, { write: false });
      expect(expectedChanges().length).toBe(8); // four of the six solutions, each with its Verifier turn
      expect(report.changed.map((c) => c.turnId).sort((a, b) => a - b)).toEqual(expectedChanges());
      expect(report.turnsChecked).toBe(SOLUTIONS.length * 2);
      expect(report.judgedVersions).toEqual(['math-answer/1 (planted: right-hand sides)']);
      const first = report.changed.find((c) => c.turnId === solverTurn[0])!;
      expect(first).toMatchObject({ oldCorrect: true, newCorrect: false, reference: '2x + z = 1', answer: '1', agent: 'solver', split: 'train' });
      expect(first.reason).toMatch(/equation/);
      expect(report.changed.find((c) => c.turnId === verifierTurn[0])).toMatchObject({ oldCorrect: true, newCorrect: false, answer: 'approve' });
      expect(report.changed.find((c) => c.turnId === solverTurn[5])).toMatchObject({ oldCorrect: false, newCorrect: true, split: 'test' });
      expect(report.tallies['train/solver']).toEqual({ turns: 5, before: 3, after: 2 });
      expect(report.rejudgeId).toBeNull();
      expect(store.rejudges.list(runId)).toEqual([]);
      expect(store.db.prepare('SELECT id, correct FROM turns ORDER BY id').all()).toEqual(before);
    } finally {
      store.close();
    }
  });

  it('without --dry-run it records the re-judgement beside the run and rewrites no stored verdict or reward', () => {
    const store = openStore(dbPath);
    try {
      const turns = store.db.prepare('SELECT id, correct, parsed FROM turns ORDER BY id').all();
      const rewards = store.db.prepare('SELECT turn_id, value FROM rewards ORDER BY turn_id').all();
      const report = rejudgeRun(store, runId, { write: true });
      const [recorded] = store.rejudges.list(runId);
      expect(recorded).toMatchObject({ id: report.rejudgeId, changed: 8, turnsChecked: 12, judgedVersion: 'math-answer/1 (planted: right-hand sides)' });
      expect(recorded.checkerVersion).toMatch(/^math-answer\/\d+ \(compute-engine /);
      expect(store.rejudges.changes(recorded.id).map((c) => c.turnId)).toEqual(expectedChanges());
      expect(store.events.latestOfKind(runId, 'rejudged')?.message).toMatch(/8 verdicts changed/);
      expect(store.db.prepare('SELECT id, correct, parsed FROM turns ORDER BY id').all()).toEqual(turns);
      expect(store.db.prepare('SELECT turn_id, value FROM rewards ORDER BY turn_id').all()).toEqual(rewards);
      // The run page and `marsrl show` read it from the run's detail.
      const detail = toRunDetail(store, store.runs.get(runId)!);
      expect(detail.checker).toMatchObject({ versions: ['math-answer/1 (planted: right-hand sides)'], today: recorded.checkerVersion, latestRejudge: { id: recorded.id, changed: 8, turnsChecked: 12 } });
      expect(toRunDetail(store, store.runs.get(runId + 1)!).checker).toBeNull();
    } finally {
      store.close();
    }
  });

  it("a run judged by today's checker re-judges with no change", () => {
    const store = openStore(dbPath);
    try {
      const today = store.runs.create({ name: 'today', config: { task: { family: 'math' } }, codeVersion: 'test', seed: 1, status: 'done', checkerVersion: MATH_CHECKER_FULL_VERSION });
      const writer = store.writer({ flushIntervalMs: 0 });
      SOLUTIONS.forEach(([reference, response, , split], i) => {
        const problemId = writer.newId('problems');
        writer.problem({ id: problemId, runId: today, split, family: 'math', problemKey: `math:t${i}`, question: `problem ${i}`, answer: reference, meta: null });
        const episodeId = writer.newId('episodes');
        writer.episode({ id: episodeId, runId: today, step: i, problemId, split, finalAnswer: null, correct: null, rounds: 0, meta: null });
        const judged = judgeMathAnswer(reference, response);
        writer.turn({ id: writer.newId('turns'), runId: today, episodeId, step: i, agent: 'solver', policyId: 'solver', round: 0, groupId: 0, parentTurnId: null, sampleIndex: 0, prompt: '', text: response, tokenCount: 5, parsed: judged.answer, correct: judged.correct, formatValid: true, policyVersionMin: 0, policyVersionMax: 0, createdAt: Date.now() });
      });
      writer.close();
      const report = rejudgeRun(store, today, { write: false });
      expect(report.turnsChecked).toBe(SOLUTIONS.length);
      expect(report.judgedVersions).toEqual([MATH_CHECKER_FULL_VERSION]);
      expect(report.changed).toEqual([]);
    } finally {
      store.close();
    }
  });

  it('refuses a run of another family and a run still running, naming why', () => {
    const store = openStore(dbPath);
    try {
      expect(() => rejudgeRun(store, runId + 1, { write: false })).toThrow(RejudgeError);
      expect(() => rejudgeRun(store, runId + 1, { write: false })).toThrow(/"sort" run/);
      expect(() => rejudgeRun(store, runId + 2, { write: false })).toThrow(/running: re-judge it once it has finished/);
    } finally {
      store.close();
    }
  });

  it('marsrl rejudge RUN --dry-run lists the same turns as the engine (child process), and show names the checkers', async () => {
    const json = marsrl(['rejudge', String(runId), '--dry-run', '--json', '--db', dbPath]);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as { changed: { turnId: number }[]; dryRun: boolean };
    expect(report.dryRun).toBe(true);
    expect(report.changed.map((c) => c.turnId).sort((a, b) => a - b)).toEqual(expectedChanges());
    // The text forms, in this process (a child process each would cost seconds).
    const out: string[] = [];
    const ctx = { env: {}, out: (t: string) => out.push(t), err: (t: string) => out.push(t) };
    expect(await rejudgeCommand.run(['planted', '--dry-run', '--db', dbPath], ctx)).toBe(0);
    const text = out.join('\n');
    expect(text).toMatch(/8 verdicts changed/);
    expect(text).toMatch(new RegExp(`^${solverTurn[0]}\\s+train\\s+0\\s+solver\\s+right\\s+wrong\\s+2x \\+ z = 1`, 'm'));
    expect(text).toMatch(/Dry run: nothing was written/);
    out.length = 0;
    expect(await showCommand.run([String(runId), '--db', dbPath], ctx)).toBe(0);
    expect(out.join('\n')).toMatch(/checker {4}math-answer\/1 \(planted: right-hand sides\)\n\s+today's is math-answer\/\d+/);
    expect(out.join('\n')).toMatch(/rejudged .*: 8 of 12 verdicts changed/);
  });
});

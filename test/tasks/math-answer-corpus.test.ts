/**
 * The math answer checker against the judged cases of nine public graders' own test suites
 * (issue #34): the shared corpus (test/fixtures/math-answer-cases.jsonl, copied from
 * testdata/math-answer-cases.jsonl) and the cases of the same files collected apart
 * (math-answer-extra-cases.jsonl), each with its repository, commit, file and line.
 *
 * A case is judged as the Studio judges a turn: `judgeMathAnswer(gold, prediction)`, the gold read
 * as a reference (its box or "final answer is" statement when it is a worked solution), the
 * prediction as a response (extraction, then comparison). The cases whose source rule the Studio
 * deliberately does not follow are listed, each with its rule and reason, in
 * math-answer-not-followed.json; every other case must agree with its source.
 *
 * "Each case alone" here means: a freshly built compute-engine per case, in this process (the
 * checker's thread is not used), on a deterministic sample of the cases that reach the engine; the
 * full corpus alone runs in `npm run bench -- math-answer --alone` (about 0.2 s a case).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { judgeMathAnswer, MATH_CHECKER_VERSION, stopCheckerThread } from '../../src-main/engine/tasks/math-answer';
import { RewoundEngine } from '../../src-main/engine/tasks/math-answer/engine';

interface Case {
  id: string;
  source_repo: string;
  source_path: string;
  line: number;
  gold: string;
  prediction: string | null;
  expected: boolean;
}

interface NotFollowed {
  rules: Record<string, string>;
  cases: { id: string; rule: string; source: string; expected: boolean }[];
}

const fixtures = path.join(__dirname, '..', 'fixtures');
const load = (name: string): Case[] =>
  fs
    .readFileSync(path.join(fixtures, name), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Case);
const SHARED = load('math-answer-cases.jsonl');
const EXTRA = load('math-answer-extra-cases.jsonl');
const ALL = [...SHARED, ...EXTRA];
const TABLE = JSON.parse(fs.readFileSync(path.join(fixtures, 'math-answer-not-followed.json'), 'utf8')) as NotFollowed;
const NOT_FOLLOWED = new Map(TABLE.cases.map((c) => [c.id, c]));

/**
 * Fingerprints of every verdict on both fixtures, by checker version. A change of any verdict
 * changes the fingerprint: bump MATH_CHECKER_VERSION (math-answer.ts) and add its line here, so
 * runs judged by the old rules can be told apart and re-judged (`marsrl rejudge`).
 */
const FINGERPRINTS: Record<string, string> = {
  'math-answer/2': 'ad71277e88fa7398',
};

const judge = (c: Case) => judgeMathAnswer(c.gold, c.prediction ?? '').correct;

/** The verdicts in fixture order, computed once (the corpus takes a few seconds). */
const IN_ORDER = new Map(ALL.map((c) => [c.id, judge(c)]));

afterAll(() => stopCheckerThread());

function figures(cases: Case[]) {
  const followed = cases.filter((c) => !NOT_FOLLOWED.has(c.id));
  const disagree = followed.filter((c) => IN_ORDER.get(c.id) !== c.expected);
  const falsePositives = disagree.filter((c) => IN_ORDER.get(c.id) === true);
  return { followed: followed.length, agree: followed.length - disagree.length, disagree, falsePositives };
}

const describeCase = (c: Case) => `${c.id} ${c.source_repo} ${c.source_path}:${c.line} gold=${JSON.stringify(c.gold.slice(-80))} prediction=${JSON.stringify((c.prediction ?? '').slice(-80))} expected ${c.expected}`;

describe.each([
  ['the shared corpus', SHARED, 276],
  ['the cases collected apart', EXTRA, 300],
] as const)('%s', (_name, cases, atLeast) => {
  it(`holds at least ${atLeast} judged cases, each with its source`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(atLeast);
    for (const c of cases) {
      expect(c.source_repo).toMatch(/^[\w.-]+\/[\w.-]+$/);
      expect(c.line).toBeGreaterThan(0);
      expect(typeof c.expected).toBe('boolean');
    }
  });

  it('accepts no answer its source rejects, outside the table of rules not followed', () => {
    expect(figures(cases).falsePositives.map(describeCase)).toEqual([]);
  });

  it('agrees with its source on at least 97% of the cases outside the table', () => {
    const f = figures(cases);
    console.info(`${_name}: ${f.agree}/${f.followed} agree outside the table (${((100 * f.agree) / f.followed).toFixed(1)}%), ${cases.length - f.followed} in the table, ${f.falsePositives.length} false positives`);
    // The disagreements are listed on failure: each is a rule to fix, never a case to special-case.
    expect(f.agree / f.followed, f.disagree.map(describeCase).join('\n')).toBeGreaterThanOrEqual(0.97);
  });
});

describe('the table of rules not followed', () => {
  it('names a known rule for each case, and every case in it does disagree with its source', () => {
    const ids = new Set(ALL.map((c) => c.id));
    for (const entry of TABLE.cases) {
      expect(ids.has(entry.id), entry.id).toBe(true);
      expect(TABLE.rules[entry.rule], `${entry.id}: rule ${entry.rule}`).toBeTypeOf('string');
      const c = ALL.find((x) => x.id === entry.id)!;
      expect(c.expected).toBe(entry.expected);
      // A case the checker now agrees on leaves the table.
      expect(IN_ORDER.get(entry.id), `${entry.id} agrees with its source now: remove it from the table`).toBe(!c.expected);
    }
  });
});

describe('purity: the same verdicts in any order', () => {
  it('gives every verdict again in a shuffled order (a seeded permutation)', () => {
    const order = [...ALL];
    let seed = 34;
    for (let i = order.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      const j = seed % (i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
    const changed = order.filter((c) => judge(c) !== IN_ORDER.get(c.id)).map((c) => c.id);
    expect(changed).toEqual([]);
  });

  it('gives the same verdicts with a freshly built engine for each case alone (a sample, including the pair that leaked under issue #14)', () => {
    const leaky = ['0192', '0323'];
    const sample = [...leaky, ...ALL.filter((c, i) => i % 9 === 0).map((c) => c.id)];
    const changed: string[] = [];
    for (const id of sample) {
      const c = ALL.find((x) => x.id === id)!;
      const alone = judgeMathAnswer(c.gold, c.prediction ?? '', { engine: new RewoundEngine() }).correct;
      if (alone !== IN_ORDER.get(id)) changed.push(id);
    }
    expect(sample.length).toBeGreaterThanOrEqual(20);
    expect(changed).toEqual([]);
  });
});

describe('the checker version', () => {
  it('names the verdicts it gives: any change of verdict changes the fingerprint and needs a new version', () => {
    const hash = createHash('sha256');
    for (const c of ALL) hash.update(`${c.id}:${IN_ORDER.get(c.id) ? 1 : 0};`);
    expect({ version: MATH_CHECKER_VERSION, fingerprint: hash.digest('hex').slice(0, 16) }).toEqual({ version: MATH_CHECKER_VERSION, fingerprint: FINGERPRINTS[MATH_CHECKER_VERSION] });
  });
});

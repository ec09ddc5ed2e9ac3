/**
 * The checker's verdicts are functions of (reference, response) alone, within a time budget
 * (issue #34). Under issue #14 one compute-engine per process remembered what it inferred: after an
 * answer containing `(11,7)or(7,11)` (read as `r(7,11)`, a function), `(r+5)(r+5)` against
 * `(r+5)^2` was rejected for the rest of the process. Here that state is planted directly and the
 * rewound engine is shown to forget it; the corpus test checks whole-corpus order independence.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { compareMathAnswers, onCheckerIncident, stopCheckerThread } from '../../src-main/engine/tasks/math-answer';
import { RewoundEngine } from '../../src-main/engine/tasks/math-answer/engine';
import { JudgeThread, type Incident } from '../../src-main/engine/tasks/math-answer/thread';

afterAll(() => stopCheckerThread());

describe('a rewound engine forgets what earlier comparisons taught it', () => {
  it('without the rewind the planted inference changes the verdict; with it the verdict is the fresh one', () => {
    expect(new RewoundEngine().judge('(r+5)^2', '(r+5)(r+5)', 2000).equal).toBe(true); // a fresh engine

    const leaky = new RewoundEngine(undefined, false);
    leaky.engine.parse('r(7,11)'); // what issue #14's checker made the engine do: r is now a function
    expect(leaky.judge('(r+5)^2', '(r+5)(r+5)', 2000).equal).toBe(false);

    const rewound = new RewoundEngine();
    rewound.engine.parse('r(7,11)');
    expect(rewound.judge('(r+5)^2', '(r+5)(r+5)', 2000).equal).toBe(true);
    expect(rewound.judge('$(11,7)or(7,11)$', '(7,11),\\ (11,7)', 2000).equal).toBe(true);
    expect(rewound.judge('(r+5)^2', '(r+5)(r+5)', 2000).equal).toBe(true);
  });

  it('through the public path, the pair of issue #14 in either order', () => {
    expect(compareMathAnswers('(r+5)^2', '(r+5)(r+5)').equal).toBe(true);
    expect(compareMathAnswers('(11,7)or(7,11)', '(7,11),\\ (11,7)').equal).toBe(true);
    expect(compareMathAnswers('(r+5)^2', '(r+5)(r+5)').equal).toBe(true);
  });
});

describe('a time budget per comparison', () => {
  it('past the hard bound the answer is wrong, the timeout is reported, and the next comparison runs on a fresh thread', () => {
    const incidents: Incident[] = [];
    // softShare 100: the engine's own limit never fires first, so the caller's bound is what stops it.
    const thread = new JudgeThread((i) => incidents.push(i), 100);
    try {
      const slow = '((((((((((x+1)^2+1)^2+1)^2+1)^2+1)^2+1)^2+1)^2+1)^2+1)^2+1)^2';
      expect(thread.judge('x', 'x', 5000).equal).toBe(true); // the thread is up
      const started = performance.now();
      const verdict = thread.judge(slow, `${slow}+0`, 1);
      expect(performance.now() - started).toBeLessThan(1000);
      expect(verdict).toMatchObject({ equal: false, timedOut: true });
      expect(verdict.reason).toMatch(/timeout/);
      expect(incidents.map((i) => i.kind)).toEqual(['thread-restart', 'timeout']);
      expect(thread.judge('\\frac{1}{2}', '0.5', 30_000).equal).toBe(true);
    } finally {
      thread.stop();
    }
  });

  it('the engine’s own limit stops a long computation and keeps the thread', () => {
    const incidents: Incident[] = [];
    const off = onCheckerIncident((i) => incidents.push(i));
    try {
      // 10^4 terms of 9999 digits each: the engine's deadline checks stop it.
      const verdict = compareMathAnswers('5', '\\sum_{k=1}^{9999} k^{9999}', { budgetMs: 400 });
      expect(verdict).toMatchObject({ equal: false, timedOut: true });
      expect(incidents.some((i) => i.kind === 'timeout')).toBe(true);
      expect(compareMathAnswers('2\\sqrt{2}', '\\sqrt{8}').equal).toBe(true);
    } finally {
      off();
    }
  });

  it('inputs whose exact value would take minutes are refused before the engine sees them', () => {
    for (const tower of ['9^{9^{9^{9}}}', '10^{10^{10}}', '100000!', '\\sum_{k=1}^{10^{9}} k']) {
      const started = performance.now();
      const verdict = compareMathAnswers('5', tower);
      expect(verdict.equal).toBe(false);
      expect(verdict.reason).toMatch(/too costly/);
      expect(performance.now() - started).toBeLessThan(1000);
    }
  });
});

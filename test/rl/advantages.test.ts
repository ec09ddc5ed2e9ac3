import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  computeAdvantages,
  DEFAULT_ADVANTAGE_OPTIONS,
  getAdvantage,
  inflationFactors,
  listAdvantages,
  meanInflationFactors,
  registerAdvantage,
  type AdvantageOptions,
  type AdvantageTurn,
  type SingleSampleRule,
  type StdConvention,
} from '../../src-main/engine/rl/advantages';
import { ADVANTAGE_MODES } from '../../src-main/engine/config/schema';
import { Rng } from '../../src-main/engine/util/rng';

const EPS = 1e-6;
const CONVENTIONS: StdConvention[] = ['unbiased', 'population'];
const RULES: SingleSampleRule[] = ['zero', 'verl'];

function options(std: StdConvention, singleSample: SingleSampleRule, eps = EPS): AdvantageOptions {
  return { std, singleSample, eps };
}

function values(mode: string, turns: AdvantageTurn[], opts: AdvantageOptions): number[] {
  return getAdvantage(mode)(turns, opts).map((a) => a.value);
}

/** Element-wise |actual − expected| ≤ max(1e-6, 1e-9·|expected|) (relative for the ε-sized blow-ups). */
function expectClose(actual: number[], expected: number[], label: string) {
  expect(actual.length, label).toBe(expected.length);
  const mismatches = actual
    .map((value, i) => ({ i, value, expected: expected[i] }))
    .filter(({ value, expected: e }) => !(Math.abs(value - e) <= Math.max(1e-6, 1e-9 * Math.abs(e))));
  expect(mismatches, label).toEqual([]);
}

const turns = (agent: string, rewards: number[]): AdvantageTurn[] => rewards.map((reward) => ({ agent, reward }));

interface FixtureCase {
  name: string;
  turns: AdvantageTurn[];
  expected: Record<string, Record<StdConvention, Record<SingleSampleRule, number[]>>>;
}
// Solver rewards {0, 2}: μ_s = 1, population σ_s = 1, unbiased σ_s = √2.
// Verifier rewards {10, 30}: μ_v = 20, population σ_v = 10, unbiased σ_v = 10√2.
// Pooled {0, 2, 10, 30}: μ = 10.5, Σ(R − μ)² = 110.25 + 72.25 + 0.25 + 380.25 = 563,
// population σ = √(563/4), unbiased σ = √(563/3).
const scaled = [...turns('solver', [0, 2]), ...turns('verifier1', [10, 30])];

const fixture = JSON.parse(readFileSync(path.join(import.meta.dirname, '../fixtures/advantages.json'), 'utf8')) as {
  eps: number;
  cases: FixtureCase[];
};

describe('advantages against the shared reference values (test/fixtures/advantages.json)', () => {
  it('uses the fixture ε, which is also the config default', () => {
    expect(fixture.eps).toBe(EPS);
    expect(DEFAULT_ADVANTAGE_OPTIONS).toEqual({ std: 'unbiased', singleSample: 'zero', eps: EPS });
  });

  it('covers the four Dr. MAS modes, both std conventions and both single-sample rules in every case', () => {
    for (const c of fixture.cases) {
      expect(Object.keys(c.expected).sort()).toEqual(['agent-mean', 'agent-std', 'agentwise', 'global']);
    }
  });

  for (const c of fixture.cases) {
    for (const mode of ['global', 'agentwise', 'agent-mean', 'agent-std']) {
      for (const std of CONVENTIONS) {
        for (const rule of RULES) {
          it(`${c.name}: ${mode}, ${std}, ${rule}`, () => {
            expectClose(values(mode, c.turns, options(std, rule, fixture.eps)), c.expected[mode][std][rule], `${c.name}/${mode}/${std}/${rule}`);
          });
        }
      }
    }
  }
});

describe('advantages: hand-computed tables', () => {
  it('a group of one: zero gives 0 in every mode; verl gives the raw reward (÷ (1 + ε) where it divides)', () => {
    const group = turns('solver', [0.7]);
    for (const std of CONVENTIONS) {
      for (const mode of ADVANTAGE_MODES) {
        expect(values(mode, group, options(std, 'zero'))).toEqual([0]);
      }
      for (const mode of ['global', 'agentwise', 'agent-mean', 'agent-std']) {
        expectClose(values(mode, group, options(std, 'verl')), [0.7 / (1 + EPS)], `${mode}/${std}/verl`);
      }
      expectClose(values('no-std', group, options(std, 'verl')), [0.7], `no-std/${std}/verl`);
    }
    // The reported statistics say what happened: zero keeps the sample as μ and has no σ; verl uses μ 0, σ 1.
    const [zero] = getAdvantage('agentwise')(group, options('unbiased', 'zero'), 'p1');
    expect(zero).toEqual({ value: 0, mu: 0.7, sigma: 0, groupKey: 'p1' });
    const [verl] = getAdvantage('agentwise')(group, options('unbiased', 'verl'), 'p1');
    expect(verl.mu).toBe(0);
    expect(verl.sigma).toBe(1);
  });

  it('equal rewards (σ = 0): every mode gives 0, never NaN or ε-sized blow-ups', () => {
    const group = [...turns('solver', [0.5, 0.5, 0.5]), ...turns('verifier1', [0.5, 0.5, 0.5])];
    for (const mode of ADVANTAGE_MODES) {
      for (const std of CONVENTIONS) {
        for (const rule of RULES) {
          const result = getAdvantage(mode)(group, options(std, rule));
          expect(result.map((a) => a.value), `${mode}/${std}/${rule}`).toEqual([0, 0, 0, 0, 0, 0]);
          expect(result.every((a) => a.mu === 0.5)).toBe(true);
          if (mode !== 'no-std') expect(result.every((a) => a.sigma === 0)).toBe(true);
        }
      }
    }
  });

  // `scaled` (above): solver {0, 2}, verifier1 {10, 30}.
  const table: Record<string, Record<StdConvention, number[]>> = {
    global: {
      population: [-10.5, -8.5, -0.5, 19.5].map((d) => d / (Math.sqrt(563 / 4) + EPS)),
      unbiased: [-10.5, -8.5, -0.5, 19.5].map((d) => d / (Math.sqrt(563 / 3) + EPS)),
    },
    agentwise: {
      population: [-1 / (1 + EPS), 1 / (1 + EPS), -10 / (10 + EPS), 10 / (10 + EPS)],
      unbiased: [-1 / (Math.SQRT2 + EPS), 1 / (Math.SQRT2 + EPS), -10 / (10 * Math.SQRT2 + EPS), 10 / (10 * Math.SQRT2 + EPS)],
    },
    'agent-mean': {
      population: [-1, 1, -10, 10].map((d) => d / (Math.sqrt(563 / 4) + EPS)),
      unbiased: [-1, 1, -10, 10].map((d) => d / (Math.sqrt(563 / 3) + EPS)),
    },
    'agent-std': {
      population: [-10.5 / (1 + EPS), -8.5 / (1 + EPS), -0.5 / (10 + EPS), 19.5 / (10 + EPS)],
      unbiased: [-10.5 / (Math.SQRT2 + EPS), -8.5 / (Math.SQRT2 + EPS), -0.5 / (10 * Math.SQRT2 + EPS), 19.5 / (10 * Math.SQRT2 + EPS)],
    },
    'no-std': { population: [-1, 1, -10, 10], unbiased: [-1, 1, -10, 10] },
  };

  for (const [mode, byStd] of Object.entries(table)) {
    it(`agents with 10× different reward scales: ${mode}`, () => {
      for (const std of CONVENTIONS) {
        for (const rule of RULES) expectClose(values(mode, scaled, options(std, rule)), byStd[std], `${mode}/${std}/${rule}`);
      }
    });
  }

  it('agentwise puts both agents on one scale while global lets the large-scale agent dominate', () => {
    const agentwise = values('agentwise', scaled, options('population', 'zero'));
    expect(Math.abs(agentwise[0])).toBeCloseTo(Math.abs(agentwise[2]), 5);
    const global = values('global', scaled, options('population', 'zero'));
    expect(global[0]).toBeLessThan(0); // the solver's better sample still gets a negative advantage
    expect(global[1]).toBeLessThan(0);
  });

  it('reports the baseline and scale it used', () => {
    const result = getAdvantage('agent-std')(scaled, options('population', 'zero'), 'q7');
    expect(result[0]).toMatchObject({ mu: 10.5, sigma: 1, groupKey: 'q7' });
    expect(result[3].sigma).toBeCloseTo(10, 12);
    const noStd = getAdvantage('no-std')(scaled, options('population', 'zero'));
    expect(noStd.map((a) => [a.mu, a.sigma])).toEqual([[1, 1], [1, 1], [20, 1], [20, 1]]);
  });

  it('an agent with one turn: zero silences only the modes that use its one-sample statistic', () => {
    const group = [...turns('solver', [1, 0, 0]), ...turns('corrector1', [1])];
    // μ = 0.5 over 4; population σ = 0.5.
    expect(values('global', group, options('population', 'zero'))[3]).toBeCloseTo(0.5 / (0.5 + EPS), 9);
    for (const mode of ['agentwise', 'agent-mean', 'agent-std', 'no-std']) {
      expect(values(mode, group, options('population', 'zero'))[3], mode).toBe(0);
    }
    expect(values('no-std', group, options('population', 'verl'))[3]).toBe(1);
  });
});

/**
 * A plain-loop reference, written from the formulas in the advantages.ts comment without sharing
 * any code with it: for each turn, scan the group for the statistics it needs.
 */
function referenceAdvantage(mode: string, group: AdvantageTurn[], opts: AdvantageOptions): number[] {
  const meanOf = (xs: number[]) => {
    let s = 0;
    for (const x of xs) s += x;
    return s / xs.length;
  };
  const stdOf = (xs: number[]) => {
    const m = meanOf(xs);
    let s = 0;
    for (const x of xs) s += (x - m) * (x - m);
    return Math.sqrt(s / (opts.std === 'unbiased' ? xs.length - 1 : xs.length));
  };
  const out: number[] = [];
  for (const turn of group) {
    const all: number[] = [];
    const own: number[] = [];
    for (const other of group) {
      all.push(other.reward);
      if (other.agent === turn.agent) own.push(other.reward);
    }
    const baselineSet = mode === 'global' || mode === 'agent-std' ? all : own;
    const scaleSet = mode === 'no-std' ? null : mode === 'global' || mode === 'agent-mean' ? all : own;
    const single = baselineSet.length === 1 || (scaleSet !== null && scaleSet.length === 1);
    if (single && opts.singleSample === 'zero') {
      out.push(0);
      continue;
    }
    const mu = baselineSet.length === 1 ? 0 : meanOf(baselineSet);
    if (scaleSet === null) {
      out.push(turn.reward - mu);
      continue;
    }
    const sigma = scaleSet.length === 1 ? 1 : stdOf(scaleSet);
    out.push((turn.reward - mu) / (sigma + opts.eps));
  }
  return out;
}

function randomGroup(rng: Rng): AdvantageTurn[] {
  const agents = ['solver', 'verifier1', 'corrector1', 'verifier2'].slice(0, rng.int(1, 4));
  const size = rng.int(1, 12);
  const binary = rng.next() < 0.5;
  const scale = rng.pick([1, 10, 100]);
  const group: AdvantageTurn[] = [];
  for (let i = 0; i < size; i++) {
    const reward = binary ? rng.int(0, 1) : Math.round(rng.normal() * scale * 100) / 100;
    group.push({ agent: rng.pick(agents), reward });
  }
  return group;
}

describe('advantages: vectorised implementation against a plain loop on random groups', () => {
  it('agrees in every mode, convention and rule', () => {
    const rng = new Rng(2024, 'advantages-cross-check');
    for (let trial = 0; trial < 400; trial++) {
      const group = randomGroup(rng);
      for (const mode of ADVANTAGE_MODES) {
        for (const std of CONVENTIONS) {
          for (const rule of RULES) {
            const opts = options(std, rule);
            expectClose(values(mode, group, opts), referenceAdvantage(mode, group, opts), `trial ${trial} ${mode}/${std}/${rule}`);
          }
        }
      }
    }
  });
});

describe('advantage registry and batching', () => {
  it('lists the built-in modes, which match the config schema', () => {
    expect(listAdvantages().sort()).toEqual([...ADVANTAGE_MODES].sort());
  });

  it('fails on an unknown mode with the list of known ones', () => {
    expect(() => getAdvantage('grpo')).toThrow(/unknown advantage mode "grpo"; known modes: .*agentwise.*no-std/);
  });

  it('registers a new mode once', () => {
    registerAdvantage('test-raw', (group, _opts, groupKey = '') => group.map((t) => ({ value: t.reward, mu: 0, sigma: 1, groupKey })));
    expect(values('test-raw', turns('solver', [3]), DEFAULT_ADVANTAGE_OPTIONS)).toEqual([3]);
    expect(() => registerAdvantage('test-raw', getAdvantage('global'))).toThrow(/already registered/);
  });

  it('computeAdvantages normalizes each group key alone and keeps the input order', () => {
    const batch = [
      { groupKey: 'a', agent: 'solver', reward: 1 },
      { groupKey: 'b', agent: 'solver', reward: 5 },
      { groupKey: 'a', agent: 'solver', reward: 0 },
      { groupKey: 'b', agent: 'solver', reward: 7 },
      { groupKey: 'a', agent: 'verifier1', reward: 1 },
    ];
    const result = computeAdvantages(batch, 'global', options('population', 'zero'));
    const groupA = getAdvantage('global')([batch[0], batch[2], batch[4]], options('population', 'zero'), 'a');
    const groupB = getAdvantage('global')([batch[1], batch[3]], options('population', 'zero'), 'b');
    expect(result).toEqual([groupA[0], groupB[0], groupA[1], groupB[1], groupA[2]]);
    expect(result.map((r) => r.groupKey)).toEqual(['a', 'b', 'a', 'b', 'a']);
    // Group b alone: μ = 6, population σ = 1.
    expect(result[1].value).toBeCloseTo(-1 / (1 + EPS), 12);
  });

  it('rejects a non-finite reward and returns [] for an empty group', () => {
    expect(() => values('global', [{ agent: 'solver', reward: Number.NaN }], DEFAULT_ADVANTAGE_OPTIONS)).toThrow(/not finite/);
    expect(getAdvantage('agentwise')([], DEFAULT_ADVANTAGE_OPTIONS)).toEqual([]);
  });
});

const farCorrector = [...turns('solver', [1, 1, 1, 1, 1, 0]), ...turns('corrector1', [0, 0])];

describe('inflation factors (Dr. MAS Lemma 4.2)', () => {
  it('matches a hand-computed table: F_k = (σ_k² + (μ_k − μ)²) / σ²', () => {
    // Same group as above, population variances: σ² = 140.75, σ_s² = 1, σ_v² = 100, μ = 10.5.
    const f = inflationFactors(scaled);
    expect(f.solver).toBeCloseTo((1 + 9.5 ** 2) / 140.75, 12);
    expect(f.verifier1).toBeCloseTo((100 + 9.5 ** 2) / 140.75, 12);
  });

  it('a corrector with a far reward mean and few samples is inflated the most', () => {
    // Solver {1,1,1,1,1,0}, corrector {0,0}: μ = 5/8, σ² = 5/8 · 3/8 = 15/64.
    // Corrector: σ_k = 0, μ_k = 0 → (5/8)² / (15/64) = 5/3.
    // Solver: μ_k = 5/6, σ_k² = 5/36, μ_k − μ = 5/24 → (5/36 + 25/576) / (15/64) = 7/9.
    const f = inflationFactors(farCorrector);
    expect(f.corrector1).toBeCloseTo(5 / 3, 12);
    expect(f.solver).toBeCloseTo(7 / 9, 12);
  });

  it('reports 1 for every agent when all rewards are equal, and {} for no turns', () => {
    expect(inflationFactors([...turns('solver', [1, 1]), ...turns('verifier1', [1])])).toEqual({ solver: 1, verifier1: 1 });
    expect(inflationFactors([])).toEqual({});
  });

  it('weighted by sample counts, averages to exactly 1; each F_k ≤ N / n_k (random groups)', () => {
    const rng = new Rng(7, 'inflation');
    for (let trial = 0; trial < 300; trial++) {
      const group = randomGroup(rng);
      const f = inflationFactors(group);
      const counts = new Map<string, number>();
      for (const t of group) counts.set(t.agent, (counts.get(t.agent) ?? 0) + 1);
      let weighted = 0;
      for (const [agent, n] of counts) {
        weighted += n * f[agent];
        expect(f[agent]).toBeLessThanOrEqual(group.length / n + 1e-9);
      }
      expect(weighted / group.length).toBeCloseTo(1, 9);
    }
  });

  it('a single agent is never inflated', () => {
    expect(inflationFactors(turns('solver', [0, 1, 1])).solver).toBeCloseTo(1, 12);
  });

  it('meanInflationFactors averages per agent over the groups where it appears', () => {
    const batch = [
      ...farCorrector.map((t) => ({ ...t, groupKey: 'a' })),
      ...turns('solver', [0, 1]).map((t) => ({ ...t, groupKey: 'b' })),
    ];
    const mean = meanInflationFactors(batch);
    expect(mean.corrector1).toBeCloseTo(5 / 3, 12); // only in group a
    expect(mean.solver).toBeCloseTo((7 / 9 + 1) / 2, 12); // group b has the solver alone: 1
  });
});

/**
 * The turn panel's advantage explanation (issue 35): from the group's stored rewards alone it
 * must give the independent reference values (test/fixtures/advantages.json, every mode, std
 * convention and one-sample rule) and agree with the engine's own advantage code; the working
 * it shows must hold the numbers a reader recomputes by hand.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { explainAdvantage } from '../../src-main/engine/rl/explain';
import { computeAdvantages, type AdvantageOptions } from '../../src-main/engine/rl/advantages';
import type { AdvantageGroupRows } from '../../src-main/engine/store';

interface Case {
  name: string;
  turns: { agent: string; reward: number }[];
  expected: Record<string, Record<'unbiased' | 'population', Record<'zero' | 'verl', number[]>>>;
}
const fixture = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '..', 'fixtures', 'advantages.json'), 'utf8')) as { eps: number; cases: Case[] };

/** The rows the store gives for turn `i` of a case, as if every turn were written with `mode`. */
function groupOf(c: Case, i: number, mode: string, values: readonly number[]): AdvantageGroupRows {
  return {
    turnId: 100 + i,
    agent: c.turns[i].agent,
    reward: c.turns[i].reward,
    value: values[i],
    mode,
    groupKey: `0:${c.name}`,
    mu: 0,
    sigma: 0,
    weight: 1,
    members: c.turns.map((t, j) => ({ turnId: 100 + j, agent: t.agent, reward: t.reward, advantage: values[j] })),
  };
}

describe('explainAdvantage', () => {
  for (const c of fixture.cases) {
    for (const [mode, byStd] of Object.entries(c.expected)) {
      for (const std of ['unbiased', 'population'] as const) {
        for (const rule of ['zero', 'verl'] as const) {
          it(`${c.name}: ${mode}, ${std} std, single sample ${rule}`, () => {
            const options: AdvantageOptions = { std, singleSample: rule, eps: fixture.eps };
            const engine = computeAdvantages(c.turns.map((t) => ({ ...t, groupKey: 'g' })), mode, options);
            c.turns.forEach((_, i) => {
              const explained = explainAdvantage(groupOf(c, i, mode, engine.map((a) => a.value)), options);
              expect(explained.recomputed).toBeCloseTo(byStd[std][rule][i], 6);
              expect(explained.recomputed).toBeCloseTo(engine[i].value, 9);
              // The μ and σ shown are the ones the engine used.
              expect(explained.baseline.value).toBeCloseTo(engine[i].mu, 12);
              if (explained.scale) expect(explained.scale.value).toBeCloseTo(engine[i].sigma, 12);
            });
          });
        }
      }
    }
  }

  it('shows the group, its statistics and the formula with the numbers in', () => {
    // Agent-wise: verifier1's rewards 1, 0, 1, 1 → μ_k = 0.75, σ_k (unbiased) = 0.5.
    const members = [
      { turnId: 1, agent: 'solver', reward: 0, advantage: 0 },
      { turnId: 2, agent: 'verifier1', reward: 1, advantage: 0 },
      { turnId: 3, agent: 'verifier1', reward: 0, advantage: 0 },
      { turnId: 4, agent: 'verifier1', reward: 1, advantage: 0 },
      { turnId: 5, agent: 'verifier1', reward: 1, advantage: 0 },
    ];
    const explained = explainAdvantage(
      { turnId: 3, agent: 'verifier1', reward: 0, value: -1.5, mode: 'agentwise', groupKey: '0:k', mu: 0.75, sigma: 0.5, weight: 1, members },
      { std: 'unbiased', singleSample: 'zero', eps: 1e-6 },
    );
    expect(explained.formula).toBe('A = (R − μ_k) / (σ_k + ε)');
    expect(explained.baseline).toMatchObject({ scope: 'agent', symbol: 'μ_k', turnIds: [2, 3, 4, 5], count: 4, value: 0.75, working: '(1 + 0 + 1 + 1) / 4 = 0.75' });
    expect(explained.scale).toMatchObject({ scope: 'agent', symbol: 'σ_k', count: 4, value: 0.5 });
    expect(explained.scale!.working).toBe('√(((1 − 0.75)² + (0 − 0.75)² + (1 − 0.75)² + (1 − 0.75)²) / (4 − 1)) = 0.5');
    expect(explained.substituted).toBe('A = (0 − 0.75) / (0.5 + 0.000001) = -1.5');
    expect(explained.recomputed).toBeCloseTo(-0.75 / 0.500001, 12);
  });

  it('a class-balance weight is shown and applied', () => {
    const members = [
      { turnId: 1, agent: 'verifier1', reward: 1, advantage: 0 },
      { turnId: 2, agent: 'verifier1', reward: 0, advantage: 0 },
    ];
    const explained = explainAdvantage({ turnId: 1, agent: 'verifier1', reward: 1, value: 0, mode: 'no-std', groupKey: 'g', mu: 0.5, sigma: 1, weight: 2, members }, { std: 'unbiased', singleSample: 'zero', eps: 1e-6 });
    expect(explained.scale).toBeNull();
    expect(explained.formula).toBe('A = R − μ_k');
    expect(explained.substituted).toBe('A = (1 − 0.5) × 2 (class balance) = 1');
    expect(explained.recomputed).toBe(1);
  });
});

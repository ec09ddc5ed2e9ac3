/**
 * `advantage.verifier_class_balance` (issue #14): class-balanced weights against a hand-computed
 * table, and the scoring of a step with it against a plain loop written here from the definition
 * (w_c = N / (2 N_c) over one Verifier agent's turns of the step, the class being whether the
 * judged solution is right), in both the synchronous scoring and the pipeline's per-agent scoring.
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src-main/engine/preflight';
import { classBalanceWeights } from '../../src-main/engine/rl';
import type { RolloutEpisode, RolloutTurn } from '../../src-main/engine/training/rollout';
import { rolloutMetrics } from '../../src-main/engine/training/step-metrics';
import { scoreAgentTurns, scoreEpisodes, type ScoredEpisode } from '../../src-main/engine/training/scoring';
import type { Verdict } from '../../src-main/engine/agents';

describe('classBalanceWeights', () => {
  it('matches a hand-computed table', () => {
    // 1 right, 3 wrong: N = 4, w_right = 4 / (2·1) = 2, w_wrong = 4 / (2·3) = 2/3.
    expect(classBalanceWeights([true, false, false, false])).toEqual([2, 2 / 3, 2 / 3, 2 / 3]);
    // Unknown turns keep 1 and do not count: 2 right, 1 wrong → N = 3, w_right = 3/4, w_wrong = 3/2.
    expect(classBalanceWeights([null, true, false, true, null])).toEqual([1, 0.75, 1.5, 0.75, 1]);
    // Already balanced: every weight 1.
    expect(classBalanceWeights([true, false, false, true])).toEqual([1, 1, 1, 1]);
    // One class only, or nothing known: nothing to balance.
    expect(classBalanceWeights([false, false, false])).toEqual([1, 1, 1]);
    expect(classBalanceWeights([null, null])).toEqual([1, 1]);
    expect(classBalanceWeights([])).toEqual([]);
  });

  it('keeps the known turns’ total weight at N and gives each class half of it', () => {
    const classes = [true, false, false, false, false, true, false, null, false];
    const w = classBalanceWeights(classes);
    const sum = (pick: (c: boolean | null) => boolean) => w.reduce((a, x, i) => a + (pick(classes[i]) ? x : 0), 0);
    expect(sum((c) => c === true)).toBeCloseTo(4, 12);
    expect(sum((c) => c === false)).toBeCloseTo(4, 12);
  });
});

let nextIndex = 0;
function turn(agent: string, fields: Partial<RolloutTurn>): RolloutTurn {
  const role = agent.startsWith('verifier') ? 'verifier' : agent.startsWith('corrector') ? 'corrector' : 'solver';
  return {
    index: nextIndex++, agent, role, round: role === 'solver' ? 0 : 1, policyId: role, groupId: 0, sampleIndex: 0, parent: null, repairs: null,
    promptText: '', promptTokens: [], responseTokens: [1], behaviourLogProbs: [0], text: '', answer: null, verdict: null,
    formatValid: true, correct: false, segments: [], policyVersionMin: 0, policyVersionMax: 0, ...fields,
  };
}

/** A Verifier sample judging solution `parent` (its truth `solutionRight`) with `verdict` (null: unparseable). */
function verdictTurn(groupId: number, parent: number, solutionRight: boolean, verdict: Verdict | null): RolloutTurn {
  const correct = verdict !== null && (verdict === 'approve') === solutionRight;
  return turn('verifier1', { groupId, parent, verdict, correct, formatValid: verdict !== null });
}

/**
 * Two problems. Problem A: Solver samples 0 (right) and 1 (wrong); the Verifier judges both,
 * two samples each. Problem B: samples 0 and 1 both wrong; the Verifier judges both, and in one
 * group one sample's verdict did not parse: its class comes from its sibling's verdict.
 * Judged classes over the step: right 2 turns, wrong 6 turns → w_right = 8/4 = 2, w_wrong = 8/12.
 */
function episodes(): RolloutEpisode[] {
  nextIndex = 0;
  const a = [turn('solver', { correct: true }), turn('solver', { correct: false })];
  a.push(verdictTurn(1, 0, true, 'approve'), verdictTurn(1, 0, true, 'reject'), verdictTurn(2, 1, false, 'approve'), verdictTurn(2, 1, false, 'reject'));
  a.push(turn('corrector1', { groupId: 3, parent: 5, repairs: 1, correct: true }), turn('corrector1', { groupId: 3, parent: 5, repairs: 1, correct: false }));
  nextIndex = 0;
  const b = [turn('solver', { correct: false }), turn('solver', { correct: false })];
  b.push(verdictTurn(1, 0, false, 'reject'), verdictTurn(1, 0, false, 'approve'), verdictTurn(2, 1, false, null), verdictTurn(2, 1, false, 'reject'));
  const problem = (key: string) => ({ key, family: 'math', split: 'train' as const, question: 'q', answer: '1', meta: {} });
  return [
    { problem: problem('A'), turns: a, finalAnswer: null, correct: false, rounds: 1, chains: [] },
    { problem: problem('B'), turns: b, finalAnswer: null, correct: false, rounds: 1, chains: [] },
  ];
}

describe('scoring with advantage.verifier_class_balance', () => {
  const plain = resolveConfig({ reward: { scheme: 'decoupled' }, advantage: { mode: 'agentwise' } });
  const balanced = resolveConfig({ reward: { scheme: 'decoupled' }, advantage: { mode: 'agentwise', verifier_class_balance: true } });

  it('multiplies only the Verifier’s advantages, by the weight of the class of the solution each judged', () => {
    const eps = episodes();
    const before = scoreEpisodes(plain, eps);
    const after = scoreEpisodes(balanced, eps);
    // The plain loop: the class of each Verifier turn's judged solution, by hand from the fixture.
    const judged: Record<string, boolean[]> = { A: [true, true, false, false], B: [false, false, false, false] };
    const right = Object.values(judged).flat().filter(Boolean).length;
    const wrong = Object.values(judged).flat().length - right;
    const n = right + wrong;
    eps.forEach((episode, e) => {
      let v = 0;
      episode.turns.forEach((t, i) => {
        const b = before[e].advantages[i];
        const x = after[e].advantages[i];
        expect(x.mu).toBe(b.mu);
        expect(x.sigma).toBe(b.sigma);
        if (t.role !== 'verifier') {
          expect(x.value).toBe(b.value);
          expect(x.weight ?? 1).toBe(1);
          return;
        }
        const w = judged[episode.problem.key][v++] ? n / (2 * right) : n / (2 * wrong);
        expect(x.weight).toBeCloseTo(w, 12);
        expect(x.value).toBeCloseTo(b.value * w, 12);
      });
    });
    // Some weighted advantage is non-zero, so the check above is not vacuous.
    expect(after.flatMap((s) => s.advantages).filter((a) => a.weight !== undefined && a.weight !== 1 && a.value !== 0).length).toBeGreaterThan(0);
  });

  it('gives the pipeline’s per-agent scoring the same values as the whole step’s', () => {
    const eps = episodes();
    const whole = scoreEpisodes(balanced, eps);
    const byAgent: ScoredEpisode[] = eps.map(() => ({ rewards: [], advantages: [] }));
    for (const agent of ['solver', 'verifier1', 'corrector1']) {
      const batch = eps.flatMap((episode, e) => episode.turns.filter((t) => t.agent === agent).map((t) => ({ episode: e, turn: t })));
      scoreAgentTurns(balanced, eps, batch, byAgent);
    }
    expect(byAgent.map((s) => s.advantages.map((a) => [a.value, a.weight ?? 1]))).toEqual(whole.map((s) => s.advantages.map((a) => [a.value, a.weight ?? 1])));
  });

  it('reports the share of right solutions among those the Verifier judged', () => {
    const eps = episodes();
    // 2 of the 8 Verifier turns judged a right solution (problem A's sample 0, twice).
    expect(rolloutMetrics(balanced, eps, scoreEpisodes(balanced, eps))['verifier1/judged_right_share']).toBe(0.25);
  });

  it('is off by default', () => {
    expect(resolveConfig({}).advantage.verifier_class_balance).toBe(false);
    expect(scoreEpisodes(plain, episodes()).flatMap((s) => s.advantages).every((a) => a.weight === undefined)).toBe(true);
  });
});

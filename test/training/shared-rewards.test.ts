import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { RolloutEpisode, RolloutTurn } from '../../src-main/engine/training/rollout';
import { scoreEpisodes, trajectoryOutcomes } from '../../src-main/engine/training/scoring';

function turn(index: number, agent: string, correct: boolean, parent: number | null): RolloutTurn {
  const role = agent.startsWith('verifier') ? 'verifier' : agent.startsWith('corrector') ? 'corrector' : 'solver';
  return {
    index, agent, role, round: role === 'solver' ? 0 : 1, policyId: role, groupId: 0, sampleIndex: index, parent, repairs: null,
    promptText: '', promptTokens: [], responseTokens: [1], behaviourLogProbs: [0], text: '', answer: null, verdict: null,
    formatValid: true, correct, segments: [], policyVersionMin: 0, policyVersionMax: 0,
  };
}

/**
 * Solver samples 0 (wrong), 1 (right), 2 (wrong, never verified).
 * Chains: 0 → v3 (rejects, right) → c5 (fixes: right); 0 → v4 (approves, wrong); 1 → v6 (approves, right).
 */
function episode(): RolloutEpisode {
  const turns = [
    turn(0, 'solver', false, null),
    turn(1, 'solver', true, null),
    turn(2, 'solver', false, null),
    turn(3, 'verifier1', true, 0),
    turn(4, 'verifier1', false, 0),
    turn(5, 'corrector1', true, 3),
    turn(6, 'verifier1', true, 1),
  ];
  return { problem: { key: 'p', family: 'sort', split: 'train', question: 'q', answer: 'a', meta: {} }, turns, finalAnswer: 'a', correct: true, rounds: 1, chains: [[0, 3, 5], [0, 4], [1, 6]] };
}

describe('shared rewards: each turn shares its trajectory’s outcome', () => {
  it('follows the chains through each turn, by majority, a lone sample by itself', () => {
    // Turn 0 is in a right chain (fixed by c5) and a wrong one (approved as is): 1 of 2 → right.
    expect(trajectoryOutcomes(episode())).toEqual([true, true, false, true, false, true, true]);
  });

  it('gives a group rewards that differ, so normalized advantages are not all zero', () => {
    const config = resolveConfig({ reward: { scheme: 'shared' }, advantage: { mode: 'agentwise' } });
    const [scored] = scoreEpisodes(config, [episode()]);
    expect(scored.rewards.map((r) => r.value)).toEqual([1, 1, 0, 1, 0, 1, 1]);
    const solverAdvantages = scored.advantages.slice(0, 3).map((a) => a.value);
    expect(solverAdvantages.some((a) => a !== 0)).toBe(true);
    // Decoupled rewards are untouched: each turn's own correctness.
    const decoupled = scoreEpisodes(resolveConfig({ reward: { scheme: 'decoupled' } }), [episode()])[0];
    expect(decoupled.rewards.map((r) => r.value)).toEqual([0, 1, 0, 1, 0, 1, 1]);
  });
});

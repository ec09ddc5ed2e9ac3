import { describe, expect, it } from 'vitest';
import {
  computeRewards,
  DEFAULT_REWARD_OPTIONS,
  getReward,
  listRewards,
  registerReward,
  type RewardTurn,
} from '../../src-main/engine/rl/rewards';
import { REWARD_SCHEMES } from '../../src-main/engine/config/schema';

/**
 * A hand-built episode: two Solver samples, three Verifier1 judgements, one Corrector1 repair.
 * correct = "answer right" for solver/corrector, "verdict matches the truth" for the verifier.
 */
const episode: RewardTurn[] = [
  { agent: 'solver', role: 'solver', correct: true, formatValid: true },
  { agent: 'solver', role: 'solver', correct: false, formatValid: false }, // no A: marker
  { agent: 'verifier1', role: 'verifier', correct: true, formatValid: true }, // rejected a wrong solution
  { agent: 'verifier1', role: 'verifier', correct: false, formatValid: true }, // approved a wrong solution
  { agent: 'verifier1', role: 'verifier', correct: false, formatValid: false }, // no verdict
  { agent: 'corrector1', role: 'corrector', correct: true, formatValid: false }, // right answer, two A: markers
];

const values = (scheme: string, correct: boolean, formatPenalty: number) =>
  computeRewards(scheme, episode, { correct }, { formatPenalty }).map((r) => r.value);

describe('rewards: decoupled (MarsRL agent-specific)', () => {
  it('gives each turn 1 for its own correct output, 0 otherwise, whatever the episode outcome', () => {
    expect(values('decoupled', false, 0)).toEqual([1, 0, 1, 0, 0, 1]);
    expect(values('decoupled', true, 0)).toEqual([1, 0, 1, 0, 0, 1]);
  });

  it('subtracts the format penalty from invalid turns only', () => {
    const rewards = values('decoupled', false, 0.1);
    expect(rewards[0]).toBe(1);
    expect(rewards[1]).toBeCloseTo(-0.1, 12);
    expect(rewards[2]).toBe(1);
    expect(rewards[3]).toBe(0);
    expect(rewards[4]).toBeCloseTo(-0.1, 12);
    expect(rewards[5]).toBeCloseTo(0.9, 12);
  });
});

describe('rewards: shared (the episode outcome for every turn)', () => {
  it('gives every turn the outcome', () => {
    expect(values('shared', true, 0)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(values('shared', false, 0)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('still penalizes invalid formats turn by turn', () => {
    const rewards = values('shared', true, 0.25);
    expect(rewards).toEqual([1, 0.75, 1, 1, 0.75, 0.75]);
    expect(values('shared', false, 0.25)).toEqual([0, -0.25, 0, 0, -0.25, -0.25]);
  });
});

describe('rewards: role scales (reward.scale)', () => {
  const scaled = (scheme: string, correct: boolean, formatPenalty: number) =>
    computeRewards(scheme, episode, { correct }, { formatPenalty, roleScale: { verifier: 0.5, corrector: 4 } }).map((r) => r.value);

  it('a right turn earns its role’s scale; a wrong one 0; the penalty is not scaled', () => {
    // decoupled, by hand: solver 1 (scale 1 by default) | 0 − 0.1; verifier 0.5 | 0 | 0 − 0.1; corrector 4 − 0.1.
    const decoupled = scaled('decoupled', false, 0.1);
    [1, -0.1, 0.5, 0, -0.1, 3.9].forEach((v, i) => expect(decoupled[i]).toBeCloseTo(v, 12));
    // shared, right episode: every turn earns its role's scale, less its own penalty.
    const shared = scaled('shared', true, 0.1);
    [1, 0.9, 0.5, 0.5, 0.4, 3.9].forEach((v, i) => expect(shared[i]).toBeCloseTo(v, 12));
    expect(scaled('shared', false, 0)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('refuses a scale that is not a positive number, naming the role', () => {
    expect(() => computeRewards('decoupled', episode, { correct: true }, { formatPenalty: 0, roleScale: { corrector: 0 } })).toThrow(/reward scale of corrector must be a positive number/);
  });
});

describe('reward components and registry', () => {
  it('components name the parts, and they sum to the value', () => {
    for (const scheme of REWARD_SCHEMES) {
      const rewards = computeRewards(scheme, episode, { correct: true }, { formatPenalty: 0.5 });
      for (const reward of rewards) expect(reward.components.correctness + reward.components.format_penalty).toBe(reward.value);
      expect(rewards[1].components).toEqual({ correctness: scheme === 'shared' ? 1 : 0, format_penalty: -0.5 });
      expect(rewards[0].components).toEqual({ correctness: 1, format_penalty: 0 });
    }
  });

  it('defaults to no format penalty (the config default)', () => {
    expect(DEFAULT_REWARD_OPTIONS.formatPenalty).toBe(0);
    expect(computeRewards('decoupled', episode, { correct: false }).map((r) => r.value)).toEqual([1, 0, 1, 0, 0, 1]);
  });

  it('rejects a negative penalty', () => {
    expect(() => computeRewards('decoupled', episode, { correct: false }, { formatPenalty: -1 })).toThrow(/formatPenalty/);
  });

  it('lists the schemes of the config schema and fails on an unknown one with the known list', () => {
    expect(listRewards().slice(0, 2).sort()).toEqual([...REWARD_SCHEMES].sort());
    expect(() => getReward('marsrl')).toThrow(/unknown reward scheme "marsrl"; known schemes: decoupled, shared/);
  });

  it('registers a new scheme once', () => {
    registerReward('test-always-one', (turns) => turns.map(() => ({ value: 1, components: { correctness: 1, format_penalty: 0 } })));
    expect(computeRewards('test-always-one', episode, { correct: false }).every((r) => r.value === 1)).toBe(true);
    expect(() => registerReward('decoupled', getReward('shared'))).toThrow(/already registered/);
  });

  it('returns one reward per turn in order, and [] for no turns', () => {
    expect(computeRewards('shared', [], { correct: true })).toEqual([]);
    expect(computeRewards('decoupled', episode, { correct: true })).toHaveLength(episode.length);
  });
});

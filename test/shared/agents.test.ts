/**
 * Agent naming read leniently (src-shared/agents.ts): what the UI, the exports and the served pool
 * use for stored names, beside the strict parse test/agents/formats.test.ts pins.
 */
import { describe, expect, it } from 'vitest';
import { agentChain, compareAgents, hasRole, splitAgent } from '#shared/agents';

describe('splitAgent', () => {
  it.each([
    ['solver', 'solver', 0],
    ['verifier2', 'verifier', 2],
    ['corrector12', 'corrector', 12],
    ['system', 'system', 0],
    ['pool/ep1', 'pool/ep', 1],
  ])('%s is role %s, round %s', (agent, role, round) => {
    expect(splitAgent(agent)).toEqual({ role, round });
  });

  it('tells a role by the name without its round', () => {
    expect(hasRole('verifier3', 'verifier')).toBe(true);
    expect(hasRole('corrector1', 'verifier')).toBe(false);
    expect(hasRole('verifiers', 'verifier')).toBe(false);
  });
});

describe('compareAgents', () => {
  it('orders by round, then solver, verifier, corrector, and names of no role last, A→Z', () => {
    const shuffled = ['system', 'corrector2', 'verifier1', 'eval', 'solver', 'corrector1', 'verifier2', 'corrector10', 'verifier10'];
    expect([...shuffled].sort(compareAgents)).toEqual(['solver', 'verifier1', 'corrector1', 'verifier2', 'corrector2', 'verifier10', 'corrector10', 'eval', 'system']);
  });

  it('sorts a chain into itself', () => {
    const chain = agentChain(4);
    expect([...chain].reverse().sort(compareAgents)).toEqual(chain);
  });
});

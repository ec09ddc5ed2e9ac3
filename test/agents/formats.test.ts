import { describe, expect, it } from 'vitest';
import { agentChain, agentName, parseAgentName, roleOf, roundOf } from '#shared/agents';
import {
  correctorPrompt,
  FORMAT_CHARSET,
  parseSolution,
  parseVerdict,
  solverPrompt,
  verifierPrompt,
} from '../../src-main/engine/agents/formats';

const problem = { question: 'sort 3141' };

describe('prompts per role', () => {
  it('the Solver reads the question; the Verifier adds the final answer; the Corrector adds the verdict', () => {
    expect(solverPrompt(problem)).toBe('sort 3141');
    expect(verifierPrompt(problem, ' A:1134 ')).toBe('sort 3141|A:1134');
    // The Solver's working-out is not shown, only its final answer (the last A: wins).
    expect(verifierPrompt(problem, 'c:0210 A:1134')).toBe('sort 3141|A:1134');
    expect(verifierPrompt(problem, 'A:9 A:1134')).toBe('sort 3141|A:1134');
    expect(correctorPrompt(problem, 'A:1143', 'c:0210 V:no')).toBe('sort 3141|A:1143|V:no');
  });

  it('the Corrector is told V:no without a report (the no-Verifier control) and V:ok for an approval', () => {
    expect(correctorPrompt(problem, 'A:1143', null)).toBe('sort 3141|A:1143|V:no');
    expect(correctorPrompt(problem, 'A:1134', 'V:ok')).toBe('sort 3141|A:1134|V:ok');
  });

  it('uses only the characters of FORMAT_CHARSET beyond the question and solution', () => {
    const added = correctorPrompt({ question: '' }, '', 'V:ok') + correctorPrompt({ question: '' }, '', 'V:no') + 'A:';
    for (const ch of added) expect(FORMAT_CHARSET).toContain(ch);
  });
});

describe('parseSolution', () => {
  it.each([
    ['c:0210 A:1134', '1134', true],
    ['A:1134', '1134', true],
    ['A: 1134  ', '1134', true],
    ['A:3+5=8,8*7=56', '3+5=8,8*7=56', true],
    ['A:New York', 'New York', true],
    ['1134', null, false],
    ['', null, false],
    ['work A:', null, false],
    ['A:12 A:1134', '1134', false],
  ])('%j → answer %j, formatValid %j', (text, answer, formatValid) => {
    expect(parseSolution(text)).toEqual({ answer, formatValid });
  });
});

describe('parseVerdict', () => {
  it.each([
    ['c:1 1 o:1<2 V:ok', 'approve', true],
    ['x V:no', 'reject', true],
    ['V:no  ', 'reject', true],
    ['V:yes', null, false],
    ['nothing', null, false],
    ['V:okay', 'approve', false],
    ['V:no V:ok', 'approve', false],
    ['V:ok trailing', 'approve', false],
  ])('%j → verdict %j, formatValid %j', (text, verdict, formatValid) => {
    expect(parseVerdict(text)).toEqual({ verdict, formatValid });
  });
});

describe('agent names', () => {
  it('unrolls the chain solver → verifier1 → corrector1 → verifier2 → corrector2', () => {
    expect(agentChain(2)).toEqual(['solver', 'verifier1', 'corrector1', 'verifier2', 'corrector2']);
    expect(agentChain(0)).toEqual(['solver']);
  });

  it('names agents by role and round, and reads them back', () => {
    expect(agentName('solver', 0)).toBe('solver');
    expect(agentName('verifier', 1)).toBe('verifier1');
    expect(agentName('corrector', 12)).toBe('corrector12');
    for (const agent of agentChain(3)) {
      const { role, round } = parseAgentName(agent);
      expect(agentName(role, round)).toBe(agent);
      expect(roleOf(agent)).toBe(role);
      expect(roundOf(agent)).toBe(round);
    }
  });

  it('rejects rounds a role does not act in, and unknown names', () => {
    expect(() => agentName('solver', 1)).toThrow(/round 0/);
    expect(() => agentName('verifier', 0)).toThrow(/rounds 1, 2/);
    expect(() => agentName('corrector', -1)).toThrow(/non-negative/);
    for (const bad of ['verifier', 'verifier0', 'solver1', 'corrector01', 'judge1', 'Solver']) {
      expect(() => roleOf(bad), bad).toThrow(/unknown agent name/);
    }
  });
});

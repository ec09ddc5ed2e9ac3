/**
 * Prompt templates and the strict verdict parser (issue #14), on hand-written language-model
 * outputs — including the ones MarsRL's `"correct" in text` check gets wrong.
 */
import { describe, expect, it } from 'vitest';
import {
  CHARACTER_FORMAT,
  DEFAULT_PROMPTS,
  PROMPT_VARIABLES,
  chatPrompt,
  checkTemplate,
  parseStrictVerdict,
  renderTemplate,
  templateVariables,
  textFormatOf,
  verdictLine,
} from '../../src-main/engine/agents/prompts';
import { parseSolution, verifierPrompt } from '../../src-main/engine/agents/formats';
import { parseBoxedSolution, templatedFormat } from '../../src-main/engine/tasks/math-format';
import { ROLES } from '#shared/agents';

describe('templates', () => {
  it('finds variables and leaves LaTeX braces and escaped braces alone', () => {
    expect(templateVariables('Problem: {question}\n{solution} {question}')).toEqual(['question', 'solution']);
    expect(templateVariables('end with \\boxed{answer}; x^{n} and a_{i}')).toEqual([]);
    expect(templateVariables('{{question}} is literal')).toEqual([]);
    expect(renderTemplate('{{x}} \\boxed{answer} {question}!', { question: 'What is 2+2?' })).toBe('{x} \\boxed{answer} What is 2+2?!');
  });

  it('inserts values as written, without reading them as templates', () => {
    expect(renderTemplate('Q: {question}', { question: 'Is {solution} a variable?' })).toBe('Q: Is {solution} a variable?');
  });

  it('refuses an unknown variable, naming the role and the known ones', () => {
    expect(checkTemplate('solver', 'Solve {question} given {solution}')).toBe(
      'unknown template variable {solution}; the solver knows {question} (write {{ and }} for literal braces)',
    );
    expect(checkTemplate('corrector', '{question} {solution} {report} {answr}')).toMatch(/\{answr\}; the corrector knows \{question\}, \{solution\}, \{report\}/);
    expect(checkTemplate('verifier', '{question} {solution} {answer}')).toBeNull();
    expect(() => renderTemplate('{nope}', { question: 'q' })).toThrow(/names \{nope\}, which has no value; known: question/);
  });

  it('ships defaults that use only their role’s variables and ask for what the parsers read', () => {
    for (const role of ROLES) {
      expect(checkTemplate(role, DEFAULT_PROMPTS[role].system)).toBeNull();
      expect(checkTemplate(role, DEFAULT_PROMPTS[role].user)).toBeNull();
      expect(templateVariables(DEFAULT_PROMPTS[role].user)).toEqual(PROMPT_VARIABLES[role].filter((v) => v !== 'answer'));
    }
    expect(DEFAULT_PROMPTS.solver.system).toContain('\\boxed{answer}');
    expect(DEFAULT_PROMPTS.corrector.system).toContain('\\boxed{answer}');
    expect(DEFAULT_PROMPTS.verifier.system).toContain('"Verdict: correct" or "Verdict: incorrect"');
  });

  it('renders chat messages, without a system message when its template is empty', () => {
    expect(chatPrompt({ system: 'Be brief.', user: '{question}' }, { question: '1+1?' })).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: '1+1?' },
    ]);
    expect(chatPrompt({ system: '', user: 'Q {question}' }, { question: '1+1?' })).toEqual([{ role: 'user', content: 'Q 1+1?' }]);
  });

  it('builds the three prompts of the templated format', () => {
    const format = templatedFormat({
      solver: { system: 'S', user: '{question}' },
      verifier: { system: '', user: '{question}|{answer}|{solution}' },
      corrector: { system: '', user: '{question}|{solution}|{report}' },
    });
    const problem = { question: '2+3?' };
    expect(format.solverPrompt(problem)).toBe('S\n\n2+3?');
    expect(format.verifierPrompt(problem, ' 2+3=5 so \\boxed{5} ')).toBe('2+3?|5|2+3=5 so \\boxed{5}');
    expect(format.correctorPrompt(problem, '\\boxed{6}', 'Step 1 is wrong.\nVerdict: incorrect')).toBe('2+3?|\\boxed{6}|Step 1 is wrong.\nVerdict: incorrect');
    expect(format.correctorPrompt(problem, '\\boxed{6}', null)).toBe('2+3?|\\boxed{6}|Verdict: incorrect');
    expect(format.chat!.solver(problem)).toEqual([
      { role: 'system', content: 'S' },
      { role: 'user', content: '2+3?' },
    ]);
    expect(format.chat!.verifier(problem, '\\boxed{5}')).toEqual([{ role: 'user', content: '2+3?|5|\\boxed{5}' }]);
  });

  it('leaves the character tasks on their own format', () => {
    expect(textFormatOf({})).toBe(CHARACTER_FORMAT);
    expect(CHARACTER_FORMAT.parseSolution).toBe(parseSolution);
    expect(CHARACTER_FORMAT.verifierPrompt).toBe(verifierPrompt);
  });
});

describe('parseStrictVerdict', () => {
  // [output, verdict, formatValid, what it shows]
  const CASES: [string, 'approve' | 'reject' | null, boolean, string][] = [
    ['Step 1 holds. Step 2 holds.\nVerdict: correct', 'approve', true, 'a plain approval'],
    ['Step 2: 3 × 4 is 12, not 14 (critical error).\nVerdict: incorrect', 'reject', true, 'a plain rejection'],
    ['The solution is Incorrect.', null, false, '"Incorrect" in prose is no verdict (MarsRL\'s check approves it)'],
    ['This is not correct: the sum is 9.', null, false, '"not correct" in prose is no verdict (MarsRL\'s check approves it)'],
    ['Verdict: not correct', null, false, 'a verdict line with neither word'],
    ['Everything checks out and the answer is correct.', null, false, 'no verdict line at all'],
    ['', null, false, 'an empty output'],
    ['Verdict: correct\nOn second thought step 3 fails.\nVerdict: incorrect', 'reject', true, 'two verdicts: the last wins'],
    ['Verdict: incorrect\nVerdict: correct', 'approve', true, 'two verdicts the other way round'],
    ['**Verdict:** Incorrect.', 'reject', true, 'markdown bold, capital letter and a period'],
    ['  verdict : CORRECT  ', 'approve', true, 'case and spacing'],
    ['Verdict: incorrect\nLet me know if you need more.', 'reject', false, 'a verdict followed by more text is not well formed'],
    ['Verdict: wrong', null, false, 'a synonym is not accepted'],
    ['My verdict: correct', null, false, 'the line must be the verdict line itself'],
  ];
  for (const [text, verdict, formatValid, why] of CASES) {
    it(why, () => {
      const parsed = parseStrictVerdict(text);
      expect(parsed.verdict).toBe(verdict);
      expect(parsed.formatValid).toBe(formatValid);
    });
  }

  it('counts the verdict lines', () => {
    expect(parseStrictVerdict('Verdict: correct\nVerdict: incorrect').verdictLines).toBe(2);
    expect(parseStrictVerdict('no verdict').verdictLines).toBe(0);
  });

  it('reads back the line a Verifier writes', () => {
    expect(parseStrictVerdict(`findings\n${verdictLine('approve')}`).verdict).toBe('approve');
    expect(parseStrictVerdict(`findings\n${verdictLine('reject')}`).verdict).toBe('reject');
  });
});

describe('parseBoxedSolution', () => {
  it('takes the boxed answer and flags any other form', () => {
    expect(parseBoxedSolution('so it is \\boxed{\\frac{1}{2}}.')).toEqual({ answer: '\\frac{1}{2}', formatValid: true });
    expect(parseBoxedSolution('3 + 4 = 7\n#### 7')).toEqual({ answer: '7', formatValid: false });
    expect(parseBoxedSolution('Answer: 7')).toEqual({ answer: '7', formatValid: false });
    expect(parseBoxedSolution('no idea')).toEqual({ answer: null, formatValid: false });
  });
});

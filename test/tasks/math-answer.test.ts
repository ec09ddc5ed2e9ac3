/**
 * The math answer checker (issue #14): where a response's final answer is, and a table of answer
 * pairs, each judged as a person grading a math test would.
 *
 * Where a judgement follows a convention of the field rather than a plain reading, the row says so:
 *  - [MV] Math-Verify (huggingface/Math-Verify, used by Lighteval): a reference `28\%` accepts a
 *    bare `28` but `0.28` does not accept `28`; `\text{meters}` and other unit text is dropped;
 *    a named value `y = 2x + 1` is answered by its value (issue #34: only when its left side names
 *    the quantity; an equation is never answered by one of its sides); `\dfrac`/`\tfrac` are
 *    `\frac`; thousands separators are dropped.
 *  - [DAPO] the MATH normaliser that DAPO's grader reuses (lm-eval hendrycks_math): `^\circ`,
 *    unit words ("dollars", "cm", "feet", …), `\$` and a trailing `.` are removed before comparing.
 *  - [exact] unlike Math-Verify's default rounding to 6 places, a number is only equal to the same
 *    number: a rounded decimal is a different answer from the exact one (0.333 vs 1/3, 3.14 vs π),
 *    which is how a teacher marks an answer that asks for an exact value.
 */
import { describe, expect, it } from 'vitest';
import { extractFinalAnswer, lastBoxed, mathAnswersEqual, normalizeAnswer } from '../../src-main/engine/tasks/math-answer';

/** [reference, candidate, equal, why] */
const TABLE: [string, string, boolean, string][] = [
  // Fractions, decimals, LaTeX fraction commands.
  ['\\frac{1}{2}', '0.5', true, 'a fraction and its decimal'],
  ['1/2', '\\frac{1}{2}', true, 'slash and \\frac'],
  ['\\dfrac{3}{4}', '0.75', true, '\\dfrac is \\frac [MV]'],
  ['\\tfrac{3}{4}', '\\frac{6}{8}', true, '\\tfrac, an unreduced fraction'],
  ['\\frac12', '0.5', true, 'brace-less \\frac12'],
  ['\\frac{1}{3}', '0.333', false, 'a rounded decimal is not the exact value [exact]'],
  ['\\frac{1}{3}', '0.\\overline{3}', true, 'a repeating decimal is exact'],
  ['\\frac{2}{3}', '\\frac{3}{2}', false, 'the reciprocal only looks alike'],
  ['-\\frac{1}{2}', '-0.5', true, 'negative fraction'],
  ['-\\frac{3}{4}', '\\frac{-3}{4}', true, 'where the minus sign sits'],
  ['\\left(\\frac{1}{3}\\right)', '1/3', true, '\\left( \\right) dropped [MV]'],
  // Integers, negatives, separators, powers.
  ['-5', '-5', true, 'negative integer'],
  ['-5', '5', false, 'sign dropped'],
  ['-5', '−5', true, 'Unicode minus'],
  ['1000', '1,000', true, 'thousands separator [MV]'],
  ['1000', '1{,}000', true, 'LaTeX thousands separator {,}'],
  ['7425000', '7,425,000', true, 'several separators [MV]'],
  ['1000', '1000.0', true, 'trailing zero decimal'],
  ['(1,2)', '(1, 2)', true, 'a pair is a pair, not a separated number'],
  ['1,2', '12', false, 'a group of one digit is no thousands separator'],
  ['2^{10}', '1024', true, 'a power and its value'],
  ['2^{10}', '2^{01}', false, 'digits shuffled'],
  ['10^3', '1000', true, 'power of ten'],
  // Percentages.
  ['10\\%', '0.1', true, 'a percentage is its value'],
  ['28\\%', '28', true, 'the reference is a percentage, the bare number is accepted [MV]'],
  ['0.28', '28', false, 'a fraction of one is not the percent figure [MV]'],
  ['50\\%', '\\frac{1}{2}', true, 'half'],
  ['50\\%', '5\\%', false, 'different percentages'],
  // Radicals, π, expressions.
  ['2\\sqrt{2}', '\\sqrt{8}', true, 'radicals simplified'],
  ['\\sqrt{50}', '5\\sqrt{2}', true, 'radicals simplified'],
  ['\\frac{\\sqrt{3}}{3}', '\\frac{1}{\\sqrt{3}}', true, 'rationalised denominator'],
  ['\\sqrt{2}', '1.414', false, 'rounded radical [exact]'],
  ['\\sqrt{3}', '\\sqrt3', true, 'brace-less \\sqrt3'],
  ['\\pi', '3.14', false, 'rounded π [exact]'],
  ['2\\pi', '\\pi+\\pi', true, 'π arithmetic'],
  ['\\frac{\\pi}{2}', '\\pi/2', true, 'π over two'],
  ['(x+1)^2', 'x^2+2x+1', true, 'expanded square (simplify(a − b) = 0)'],
  ['(x+1)^2', 'x^2+1', false, 'the classic wrong expansion only looks alike'],
  ['x^2-1', '(x-1)(x+1)', true, 'factored'],
  ['a+b', 'b+a', true, 'commuted sum'],
  ['2x+1', '2x-1', false, 'one sign apart'],
  ['y = 2x + 1', '2x+1', true, 'right-hand side of an equation [MV]'],
  // Boxes, dollars, units, text, degrees, punctuation.
  ['\\boxed{\\frac{1}{2}}', '0.5', true, 'a boxed reference'],
  ['5', '\\boxed{5}', true, 'a box around the candidate'],
  ['5', '$5$', true, 'math delimiters'],
  ['18', '\\$18', true, 'money sign [DAPO]'],
  ['18', '18 dollars', true, 'unit word [DAPO]'],
  ['5', '5 \\text{ cm}', true, '\\text units [MV]'],
  ['5', '5\\text{cm}^2', true, 'squared unit in \\text'],
  ['12', '12 cm', true, 'unit after a space [DAPO]'],
  ['12', '13 cm', false, 'unit does not rescue a wrong number'],
  ['90', '90^\\circ', true, 'degree sign [DAPO]'],
  ['90', '90°', true, 'Unicode degree sign'],
  ['42', '42.', true, 'trailing period [DAPO]'],
  ['\\text{Evelyn}', 'Evelyn', true, 'a name'],
  ['\\text{Evelyn}', 'Evelny', false, 'a misspelt name is another name'],
  ['2x', 'x', false, 'a coefficient dropped'],
  ['3', '3.0000001', false, 'close is not equal [exact]'],
  ['12345678901234567890', '12345678901234567891', false, 'large integers compared exactly, not as floats'],
  ['007', '7', true, 'leading zeros'],
  ['-0', '0', true, 'negative zero is zero'],
  // Issue #34: the reward hacks and wrong rejections it names.
  ['2x + z = 1', '1', false, 'one side of the reference equation is not its answer'],
  ['a + 3z = 0', '0', false, 'one side of the reference equation is not its answer'],
  ['5x - 7y + 11z + 4 = 0', 'x + y - z + 2 = 0', false, 'two different equations that both end in = 0'],
  ['x - (y+2) = 0', 'x = y + 2', true, 'the same equation, rearranged (a multiple of the other)'],
  ['x < 1', '-x > -1', true, 'the same inequality, multiplied by -1'],
  ['32349', '32, 349', false, 'a comma and a space separate a list'],
  ['32349', '32,\\! 349', true, 'a thousands separator written in LaTeX'],
  ['20', '20\\%', true, "MATH's boxes omit the percent sign"],
  ['\\pm 2021', '-2021, 2021', true, 'the solutions as a set, in any order'],
  ['\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}', '\\begin{bmatrix} 1 & 0 \\\\ 0 & 1 \\end{bmatrix}', true, 'one matrix in two environments'],
  ['\\frac{\\sqrt{3}}{3}', '\\frac{\\sqrt{3}}{3} \\approx 0.577', true, 'an approximation after the exact value is a remark'],
  ['125', '125\\textnormal{ miles}', true, 'a unit in \\textnormal'],
];

describe('mathAnswersEqual: the judged table', () => {
  it('has at least 40 pairs, with both verdicts well represented', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(40);
    expect(TABLE.filter((row) => !row[2]).length).toBeGreaterThanOrEqual(12);
  });

  for (const [reference, candidate, equal, why] of TABLE) {
    it(`${JSON.stringify(reference)} vs ${JSON.stringify(candidate)} → ${equal ? 'equal' : 'different'} (${why})`, () => {
      expect(mathAnswersEqual(reference, candidate)).toBe(equal);
    });
  }

  it('a missing or empty answer is wrong', () => {
    expect(mathAnswersEqual('5', null)).toBe(false);
    expect(mathAnswersEqual('5', '')).toBe(false);
    expect(mathAnswersEqual('5', '$ $')).toBe(false);
  });
});

describe('normalizeAnswer', () => {
  it('drops notation and keeps the value', () => {
    expect(normalizeAnswer('$1{,}000$')).toBe('1000');
    expect(normalizeAnswer('\\dfrac{1}{2}\\text{ m}')).toBe('\\frac{1}{2}');
    expect(normalizeAnswer('28\\%')).toBe('28%');
    expect(normalizeAnswer('\\left( 3 \\right)\\,')).toBe('( 3 )');
  });

  it('keeps both sides of an equation: the right-hand side alone is not the answer (issue #34)', () => {
    // Issue #14's normaliser returned `(3)` here: only the right-hand side of the last `=` was
    // compared, so for the reference `2x + z = 1` the answer `1` was accepted.
    expect(normalizeAnswer('k = \\left(3\\right)')).toBe('k = (3)');
  });
});

describe('extractFinalAnswer', () => {
  it('takes the last box, with nested braces balanced', () => {
    expect(extractFinalAnswer('so \\boxed{3} … no wait, \\boxed{\\frac{1}{2}} is it')).toEqual({ answer: '\\frac{1}{2}', source: 'boxed' });
    expect(lastBoxed('\\boxed{\\frac{\\sqrt{2}}{2}}')).toBe('\\frac{\\sqrt{2}}{2}');
    expect(lastBoxed('\\boxed{a^{2}+\\{1\\}}')).toBe('a^{2}+\\{1\\}');
  });

  it('reads \\boxed 5 and \\fbox{…}', () => {
    expect(extractFinalAnswer('The answer is $\\boxed 5$.')).toEqual({ answer: '5', source: 'boxed' });
    expect(extractFinalAnswer('\\fbox{12}')).toEqual({ answer: '12', source: 'boxed' });
    expect(lastBoxed('\\boxedx{3}')).toBeNull();
  });

  it('skips a box whose braces never close, falling back to the one before', () => {
    expect(lastBoxed('\\boxed{4} then \\boxed{\\frac{1}{2}')).toBe('4');
    expect(extractFinalAnswer('\\boxed{\\frac{1}{2}\nAnswer: 7')).toEqual({ answer: '7', source: 'answer-line' });
  });

  it('reads GSM8K #### n when there is no box', () => {
    expect(extractFinalAnswer('She pays 3 * 4 = 12 dollars.\n#### 12')).toEqual({ answer: '12', source: 'hashes' });
    expect(extractFinalAnswer('#### 5\n#### 72')).toEqual({ answer: '72', source: 'hashes' });
  });

  it('reads Answer: and final answer is, the last one on the last line that has one', () => {
    expect(extractFinalAnswer('Answer: 14')).toEqual({ answer: '14', source: 'answer-line' });
    expect(extractFinalAnswer('Final Answer: The final answer is $28\\%$. I hope it is correct.')).toEqual({ answer: '28\\%', source: 'answer-line' });
    expect(extractFinalAnswer('answer: 3\nso the final answer is 9. Done.')).toEqual({ answer: '9', source: 'answer-line' });
  });

  it('ranks a box above #### above Answer:', () => {
    expect(extractFinalAnswer('\\boxed{1}\n#### 2\nAnswer: 3').source).toBe('boxed');
    expect(extractFinalAnswer('#### 2\nAnswer: 3')).toEqual({ answer: '2', source: 'hashes' });
  });

  it('finds nothing in a response without an answer', () => {
    expect(extractFinalAnswer('I think it is about twelve')).toEqual({ answer: null, source: null });
    expect(extractFinalAnswer('\\boxed{}')).toEqual({ answer: null, source: null });
  });
});

describe('extraction rules of issue #34', () => {
  it('joins boxes separated only by connectives into a list, and no others', () => {
    expect(extractFinalAnswer('so $\\boxed{1}$ and $\\boxed{2}$')).toEqual({ answer: '1; 2', source: 'boxed' });
    expect(extractFinalAnswer('\\boxed{(3, 3)} \\text{ for part (a) and } \\boxed{(1, 1)}').answer).toBe('(3, 3); (1, 1)');
    expect(extractFinalAnswer('\\boxed{3} is wrong, the answer is \\boxed{5}').answer).toBe('5');
  });

  it('takes whichever of the last box and the last "final answer is" comes later', () => {
    expect(extractFinalAnswer('so \\boxed{255}. Final Answer: The final answer is $10,455$. I hope it is correct.').answer).toBe('10,455');
    expect(extractFinalAnswer('The final answer is 4, so \\boxed{5}').answer).toBe('5');
    expect(extractFinalAnswer('Final Answer: The largest $n$ is 34.').answer).toBe('34');
  });

  it('reads the one number of an answer sentence, never one after a negation', () => {
    expect(extractFinalAnswer('Final Answer: Jane started growing Sphere 3 hours ago. I hope it is correct.').answer).toBe('3');
    expect(extractFinalAnswer('Answer: it is not 5').answer).toBe('not 5');
    expect(extractFinalAnswer('Therefore the answer is -3').answer).toBe('-3');
  });

  it('reads the last math, or a short bare answer, and never prose', () => {
    expect(extractFinalAnswer('Therefore $x \\geq 5$ is the solution.')).toEqual({ answer: 'x \\geq 5', source: 'math' });
    expect(extractFinalAnswer('$28$ percent')).toEqual({ answer: '28\\%', source: 'math' });
    expect(extractFinalAnswer('28 percent')).toEqual({ answer: '28 percent', source: 'whole' });
    expect(extractFinalAnswer('Answer $ \n 9 \n $')).toEqual({ answer: null, source: null });
    expect(extractFinalAnswer('so the number is 10 which is 1,000.99m²')).toEqual({ answer: null, source: null });
  });
});


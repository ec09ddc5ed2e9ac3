export type { GenerateOptions, Problem, Split, TaskFamily } from './types';
export { MAX_DIFFICULTY, MIN_DIFFICULTY, TEST_SHARE_PER_MILLE, problemKey, splitOf } from './common';
export { getTaskFamily, TASK_FAMILY_NAMES, type TaskFamilyName, type TaskFamilyOptions } from './registry';
export { sortFamily, sortLength, checkSortAnswer } from './sort';
export { countdownFamily, countdownLevel, checkCountdownAnswer, parseSteps } from './countdown';
export { factorFamily, factorLevel, checkFactorAnswer, isPrime, parseFactors } from './factor';
export { additionFamily, additionDigits, checkAdditionAnswer } from './addition';
export {
  createJsonlFamily,
  parseJsonlRecords,
  answersMatch,
  parseNumber,
  JSONL_CHECKERS,
  type JsonlChecker,
  type JsonlFamilyOptions,
  type JsonlRecord,
} from './jsonl';
export { createMathFamily, type MathFamilyOptions } from './math';
export { extractFinalAnswer, judgeMathAnswer, lastBoxed, mathAnswersEqual, normalizeAnswer, MATH_CHECKER_FULL_VERSION, type AnswerSource, type ExtractedAnswer, type MathJudgement } from './math-answer';
export { checkMathFile, readMathFile, parseMathJsonl, parseMathParquet, referenceAnswer, type MathRecord } from './math-data';
export { wordProblemSettings, sampleWordProblem, type WordProblemSettings, type WordProblemOverrides } from './math-generator';

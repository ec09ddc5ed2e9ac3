export type { GenerateOptions, Problem, Split, TaskFamily } from './types';
export { MAX_DIFFICULTY, MIN_DIFFICULTY, TEST_SHARE_PER_MILLE, problemKey, splitOf } from './common';
export { getTaskFamily, TASK_FAMILY_NAMES, type TaskFamilyName } from './registry';
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

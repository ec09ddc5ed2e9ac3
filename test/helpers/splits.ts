import type { Problem, TaskFamily } from '../../src-main/engine/tasks';

/**
 * The test problems that also stand in the training split (by key or by question), over many
 * problems from different seeds: a family must never put a problem in both.
 */
export function problemsInBothSplits(family: TaskFamily, difficulty: number, trainCount: number, testCount: number): Problem[] {
  const manyTrain = family.generate({ seed: 1, difficulty, count: trainCount, split: 'train' });
  const manyTest = family.generate({ seed: 2, difficulty, count: testCount, split: 'test' });
  const trainKeys = new Set(manyTrain.map((p) => p.key));
  const trainQuestions = new Set(manyTrain.map((p) => p.question));
  return manyTest.filter((p) => trainKeys.has(p.key) || trainQuestions.has(p.question));
}

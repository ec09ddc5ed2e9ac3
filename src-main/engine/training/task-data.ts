/**
 * A run's task data: the family, its character tokenizer, the train and test problems, which
 * problems each RL step draws and which ones every evaluation uses. Pure functions of the config,
 * so the trainer, the pipeline's rollout process, a resumed run and a reasoning-system run all
 * see the same problems.
 */
import type { RunConfig } from '../config/schema';
import { textFormatOf } from '../agents/prompts';
import { Tokenizer } from '../gpt/tokenizer';
import { getTaskFamily } from '../tasks';
import type { Problem, TaskFamily } from '../tasks/types';
import { Rng } from '../util/rng';

export interface TaskData {
  family: TaskFamily;
  /** The task's character tokenizer: the GPT family's vocabulary (a Hugging Face policy brings its own). */
  tokenizer: Tokenizer;
  train: Problem[];
  test: Problem[];
}

export function loadTaskData(config: RunConfig): TaskData {
  const family = getTaskFamily(config.task.family, {
    path: config.task.jsonl_path,
    checker: config.task.checker,
    mathPath: config.task.math_path,
    generator: config.task.math_generator,
    prompts: config.prompts,
  });
  const tokenizer = new Tokenizer(family.charset);
  const train = family.generate({ seed: config.seed, difficulty: config.task.difficulty, count: config.task.train_size, split: 'train' });
  const test = family.generate({ seed: config.seed, difficulty: config.task.difficulty, count: config.task.test_size, split: 'test' });
  return { family, tokenizer, train, test };
}

/** The held-out problems every evaluation of a run uses, and its seed. */
export function evaluationSet(config: RunConfig, data: TaskData): { problems: Problem[]; seed: number } {
  return { problems: data.test.slice(0, config.eval.problems), seed: (config.seed ^ 0x5eed) >>> 0 };
}

/**
 * The problems of RL step `step` and the seed of its rollout: a pure function of the config's
 * seed and the step, so a resumed run, and the rollout process of a pipelined run, draw exactly
 * the problems the synchronous run draws.
 */
export function stepProblems(config: RunConfig, data: TaskData, step: number): { problems: Problem[]; seed: number } {
  const stepRng = new Rng(config.seed, `step:${step}`);
  const problems = Array.from({ length: config.rollout.problems_per_step }, () => data.train[stepRng.int(0, data.train.length - 1)]);
  return { problems, seed: stepRng.nextUint32() };
}


/**
 * The probe's user message for a run: the Solver's prompt of the run's first held-out problem.
 * Any policy trained on the task can encode it (the Studio's GPT has a character vocabulary of
 * its task, which "Say hi." leaves), and a general model reads it as the run will ask. A run
 * passes the task data it has loaded; without it the data is loaded from the config.
 */
export function runProbePrompt(config: RunConfig, data: TaskData = loadTaskData(config)): string {
  const problem = data.test[0] ?? data.train[0];
  return problem ? textFormatOf(data.family).solverPrompt(problem) : 'Say hi.';
}

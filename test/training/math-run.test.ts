/**
 * The math family on the existing run path (issue #14): a tiny character-GPT run on the shipped
 * word-problem generator at difficulty 1, warm start and two RL steps, end to end. The prompts are
 * short templates: the shipped MarsRL-style system prompts alone are longer than a tiny GPT's
 * context (see tasks/math.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseStrictVerdict } from '../../src-main/engine/agents/prompts';
import { parseBoxedSolution } from '../../src-main/engine/tasks/math-format';
import type { Store } from '../../src-main/engine/store';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import type { TrainOutcome } from '../../src-main/engine/training/trainer';
import { trainedRun } from '../helpers/trained-run';
import { tinyConfig } from './tiny';

const policy = { model: { d_model: 16, n_layers: 1, n_heads: 2, context: 320, mlp_ratio: 2 }, optimizer: { lr: 1e-3 } };

const configFor = (mode: 'sync' | 'pipeline') => tinyConfig({
  task: { family: 'math', difficulty: 1, train_size: 30, test_size: 10 },
  policies: { solver: policy, verifier: policy, corrector: policy },
  rollout: { problems_per_step: 1, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 1, rounds: 1, max_response_tokens: 64, selection: 'adaptive' },
  pipeline: { mode, segment_tokens: 32, max_segments: 2 },
  reward: { format_penalty: 0.5 },
  eval: { every: 0, k: 1, problems: 2 },
  prompts: {
    solver: { system: '', user: '{question}' },
    verifier: { system: '', user: '{question}\n{solution}' },
    corrector: { system: '', user: '{question}\n{solution}\n{report}' },
  },
});

// Both loops: the synchronous baseline and the pipeline (its rollout in this process here).
describe.each(['sync', 'pipeline'] as const)('a tiny MarsRL run on the math family (shipped generator, difficulty 1, %s)', (mode) => {
  const config = configFor(mode);
  const trained = trainedRun('math-tiny', () => config, 600_000);
  let store: Store;
  let runId: number;
  let outcome: TrainOutcome;
  beforeAll(() => ({ store, runId, outcome } = trained));

  it('loads the math family with a tokenizer over its charset and its templated prompts', () => {
    const data = loadTaskData(config);
    expect(data.family.name).toBe('math');
    expect(data.tokenizer.charset).toBe(data.family.charset);
    expect(data.family.format!.solverPrompt(data.train[0])).toBe(data.train[0].question);
    // Every warm-start text fits the tiny context: question, solution, report and their prompts.
    const p = data.train[0];
    const solution = data.family.solverTarget(p);
    const report = data.family.verifierTarget(p, solution);
    expect(data.family.format!.correctorPrompt(p, solution, report).length + solution.length).toBeLessThan(policy.model.context);
  });

  it('finishes two RL steps and stores every turn parsed in the math format', () => {
    expect(outcome).toEqual({ status: 'done', step: 2 });
    const turns = store.db
      .prepare(`SELECT t.agent, t.text, t.parsed, t.correct, t.format_valid, r.value AS reward, r.components_json AS components FROM turns t JOIN episodes e ON e.id = t.episode_id LEFT JOIN rewards r ON r.turn_id = t.id WHERE t.run_id = ? AND e.split = 'train'`)
      .all(runId) as { agent: string; text: string; parsed: string | null; correct: number | null; format_valid: number; reward: number | null; components: string | null }[];
    expect(turns.filter((t) => t.agent === 'solver')).toHaveLength(4);
    expect(turns.some((t) => t.agent === 'verifier1')).toBe(true);
    for (const t of turns) {
      expect(t.reward).not.toBeNull();
      if (t.agent.startsWith('verifier')) {
        const parsed = parseStrictVerdict(t.text);
        expect(Boolean(t.format_valid)).toBe(parsed.formatValid);
        expect(t.parsed).toBe(parsed.verdict);
      } else {
        expect(t.parsed).toBe(parseBoxedSolution(t.text).answer);
        expect(Boolean(t.format_valid)).toBe(parseBoxedSolution(t.text).formatValid);
      }
      // A format failure is logged as a reward component.
      if (!t.format_valid) expect(JSON.parse(t.components ?? '{}')).toHaveProperty('format_penalty', -0.5);
    }
    const accuracy = store.metrics.series(runId, 'eval/system/accuracy').items;
    expect(accuracy.length).toBeGreaterThan(0);
    for (const point of accuracy) expect(point.value).toBeGreaterThanOrEqual(0);
  });
});

import { resolveConfig } from '../../src-main/engine/preflight';
import type { RunConfig } from '../../src-main/engine/config/schema';

/** One policy of tinyConfig (each role has its own, of these sizes). */
export const tinyPolicy = { model: { d_model: 16, n_layers: 1, n_heads: 2, context: 128, mlp_ratio: 2 }, optimizer: { lr: 1e-3 } };

/** A run small enough for a test on 2 cores: every part runs, nothing is large. */
export function tinyConfig(overrides: Record<string, unknown> = {}): RunConfig {
  return resolveConfig({
    seed: 3,
    task: { family: 'sort', difficulty: 2, train_size: 40, test_size: 20 },
    policies: { solver: tinyPolicy, verifier: tinyPolicy, corrector: tinyPolicy },
    rollout: { problems_per_step: 2, solver_group: 3, select_k: 2, verifier_group: 2, corrector_group: 2, rounds: 2, max_response_tokens: 48, selection: 'adaptive' },
    optimization: { steps: 2, minibatch_size: 16, checkpoint_every: 1 },
    pretrain: { steps: 4, batch_size: 8, warmup_steps: 1 },
    pipeline: { segment_tokens: 16, max_segments: 2 },
    eval: { every: 0, k: 2, problems: 3 },
    ...overrides,
  });
}

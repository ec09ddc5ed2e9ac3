/**
 * The run-size rule of the config schema (issue #36): what a run will hold at its peak, as a
 * lower bound (model/size-limits.ts), against this machine's memory, before anything runs. A
 * config asking for more is refused on the field to shrink, with the figure and the limit.
 */
import type { HfArchConfig } from '../hf/config';
import { hfParameterCount, hfWeightsProblem } from '../hf/config';
import { gptParameterCount, machineMemoryBytes, runSizeIssues, type DecodeBatch, type PolicyShape, type SizeIssue } from '../model/size-limits';
import type { RunConfig } from '../config/schema';

/** A policy's shape from its model block (`hf`: the folder's parsed config.json); null when served. */
function policyShape(policy: RunConfig['policies'][string], hf: HfArchConfig | undefined): PolicyShape | null {
  if (policy.endpoint !== undefined) return null;
  const model = policy.model;
  if (model.kind === 'hf') {
    if (!hf) return null;
    const params = hfParameterCount(hf);
    // A LoRA policy trains only its adapters (small; counted as nothing in this lower bound).
    return { params, trained: model.lora ? 0 : params, layers: hf.numLayers, kvWidth: hf.numKvHeads * hf.headDim, vocab: hf.vocabSize, context: hf.maxPositions };
  }
  // The character vocabulary is the task's (known when the run starts): one token is the bound.
  const params = gptParameterCount(model, 1);
  return { params, trained: params, layers: model.n_layers, kvWidth: model.d_model, vocab: 1, context: model.context };
}

/** The decode batches of one step and of one evaluation, by the policy that decodes each. */
function decodeBatches(cfg: RunConfig): DecodeBatch[] {
  const r = cfg.rollout;
  const P = r.problems_per_step;
  const verified = Math.min(r.select_k, r.solver_group);
  const batches: DecodeBatch[] = [{ what: `rollout.problems_per_step ${P} × rollout.solver_group ${r.solver_group}`, field: 'rollout.problems_per_step', shrink: 'rollout.problems_per_step or rollout.solver_group', rows: P * r.solver_group, policy: cfg.agents.solver }];
  if (r.rounds > 0) {
    batches.push({ what: `rollout.problems_per_step ${P} × select_k ${verified} × rollout.verifier_group ${r.verifier_group}`, field: 'rollout.problems_per_step', shrink: 'rollout.problems_per_step, rollout.select_k or rollout.verifier_group', rows: P * verified * r.verifier_group, policy: cfg.agents.verifier });
    const corrected = Math.min(r.select_k, verified * r.verifier_group);
    batches.push({ what: `rollout.problems_per_step ${P} × select_k ${corrected} × rollout.corrector_group ${r.corrector_group}`, field: 'rollout.problems_per_step', shrink: 'rollout.problems_per_step, rollout.select_k or rollout.corrector_group', rows: P * corrected * r.corrector_group, policy: cfg.agents.corrector });
  }
  if (!cfg.system) batches.push({ what: `eval.problems ${cfg.eval.problems} × eval.k ${cfg.eval.k}`, field: 'eval.problems', shrink: 'eval.problems or eval.k', rows: cfg.eval.problems * cfg.eval.k, policy: cfg.agents.solver });
  return batches;
}

/**
 * Issues when the run cannot fit this machine: a Hugging Face folder whose weights alone are too
 * large (on its path), the policies' weights together, or the largest decode batch. `hf`: the
 * parsed config.json of each hf policy that checked out.
 */
export function runSizeProblems(cfg: RunConfig, hf: ReadonlyMap<string, HfArchConfig>, memory = machineMemoryBytes()): SizeIssue[] {
  const issues: SizeIssue[] = [];
  const shapes = new Map<string, PolicyShape>();
  for (const [id, policy] of Object.entries(cfg.policies)) {
    const arch = hf.get(id);
    const tooLarge = arch && policy.endpoint === undefined ? hfWeightsProblem(arch, memory) : null;
    if (tooLarge) {
      issues.push({ path: `policies.${id}.model.path`, message: `config.json (${tooLarge.key}): ${tooLarge.message}` });
      continue;
    }
    const shape = policyShape(policy, arch);
    if (shape) shapes.set(id, shape);
  }
  if (issues.length > 0) return issues;
  return runSizeIssues(shapes, decodeBatches(cfg), cfg.rollout.max_response_tokens, memory);
}

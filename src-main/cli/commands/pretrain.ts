import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../engine/config/load';
import { loadRunConfig } from '../../engine/preflight';
import type { RunConfig } from '../../engine/config/schema';
import type { Role } from '#shared/agents';
import { initBackend } from '../../engine/model/backend';
import { createPolicy, isServedPolicy, rolePolicies, savePolicyCheckpoint, rolesOf, trainedPolicyIds, usedPolicyIds, type PolicyRuntime } from '../../engine/training/policies';
import { readWeights, withReadAhead } from '../../engine/model/readback';
import { prepareHfScratch, pretrainPolicy, solverSamplesOf, assertStartFromSolverFits, saveHfWarmStart, startFromSolverWeights, warmStartArgs, type PretrainEval } from '../../engine/training/pretrain';
import { loadTaskData } from '../../engine/training/trainer';
import { UsageError } from '../args';
import { defineCommand } from '../context';
import { number, printJson } from '../format';
import { ProgressLine } from '../progress';
import { formatDuration } from '#shared/format';

const usage = `Usage: marsrl pretrain (--preset NAME | --config FILE) --out DIR [--set key.path=value …]
                       [--target-solver-accuracy X] [--target-verifier-score X] [--target-corrector-score X]
                       [--eval-every N] [--json]

Warm-starts every policy of a configuration with supervised training on generated data (the
Verifier also on the Solver's own samples and on constructed mistakes) and writes one checkpoint
per policy to DIR/<policy id>. Accuracy jumps unevenly with steps, so the checkpoint is chosen by
held-out evaluation: the best one, or for the Solver the one whose accuracy when sampling at the
rollout temperature is nearest --target-solver-accuracy (to leave RL room to improve, and still
give it right samples to learn from); likewise for a Verifier or Corrector policy the one whose
held-out score (verdict accuracy, repaired-answer accuracy) is nearest --target-verifier-score or
--target-corrector-score (a near-perfect starting Verifier or Corrector leaves RL nothing to
improve in it). Point a config's policies.<id>.init at DIR/<id> to start from it. A Hugging Face
policy is written as a Hugging Face folder (config.json, model.safetensors, tokenizer files,
marsrl-pretrain.json with the scores): point its model.path at DIR/<id>. With pretrain.hf_scratch
(the tiny-qwen preset) Hugging Face policies start from a tiny Qwen3 made from scratch for the
task (tokenizer learned on its texts, fresh weights), not from the weights at model.path. With
pretrain.start_from_solver the Verifier's and Corrector's policies start from the Solver's weights
after its last step (not its kept one), so they begin knowing the Solver's arithmetic. With
pretrain.corrector_mistaken_reports a share of the Corrector's bug reports come from a Verifier that
worked the problem wrong (math), so the Corrector learns not to copy a report's answer.`;

/**
 * Served policies (issue #16) have no weights here to train: pretrain skips them. It refuses,
 * before loading anything, a config it could not warm-start at all: one whose every policy is
 * served, or one whose Solver is served while another role is local (the Verifier's and
 * Corrector's warm starts read the local Solver's own samples).
 */
function assertServedPoliciesAllowPretrain(config: RunConfig, served: readonly string[]): void {
  if (served.length === 0) return;
  const trained = trainedPolicyIds(config);
  if (trained.length === 0) {
    throw new ConfigError(
      served.map((id) => ({ path: `policies.${id}.endpoint`, message: `every policy of this config is served (inference only), so pretrain has nothing to warm-start; give a role a local model (policies.${id}.model) to warm-start it`, value: config.policies[id].endpoint })),
    );
  }
  const solverId = config.agents.solver;
  if (isServedPolicy(config, solverId)) {
    throw new ConfigError([
      {
        path: `policies.${solverId}.endpoint`,
        message: `the Solver is served (inference only), but pretrain warm-starts ${trained.join(', ')} on a local Solver's own samples; make the Solver's policy local (policies.${solverId}.model) for pretrain, or start ${trained.join(', ')} from checkpoints (policies.ID.init) and skip pretrain`,
        value: config.policies[solverId].endpoint,
      },
    ]);
  }
}

function score(e: PretrainEval): number {
  const values = Object.values(e.scores) as number[];
  return values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);
}

export const pretrainCommand = defineCommand({
  name: 'pretrain',
  summary: 'warm-start the policies of a config and save checkpoints',
  usage,
  options: { preset: { type: 'string' }, config: { type: 'string' }, set: { type: 'string', multiple: true }, out: { type: 'string' }, 'target-solver-accuracy': { type: 'string' }, 'target-verifier-score': { type: 'string' }, 'target-corrector-score': { type: 'string' }, 'eval-every': { type: 'string' } },
  maxPositionals: 0,
  async run({ values }, ctx) {
    if (!values.preset && !values.config) throw new UsageError('pretrain needs --preset NAME or --config FILE', usage);
    if (!values.out) throw new UsageError('pretrain needs --out DIR (where the checkpoints go)', usage);
    const target = values['target-solver-accuracy'] === undefined ? null : Number(values['target-solver-accuracy']);
    if (target !== null && !(target >= 0 && target <= 1)) throw new UsageError(`--target-solver-accuracy must be a number from 0 to 1 (got ${values['target-solver-accuracy']})`, usage);
    const roleTargets: Partial<Record<Role, number>> = {};
    for (const role of ['verifier', 'corrector'] as const) {
      const flag = `target-${role}-score` as const;
      if (values[flag] === undefined) continue;
      const value = Number(values[flag]);
      if (!(value >= 0 && value <= 1)) throw new UsageError(`--${flag} must be a number from 0 to 1 (got ${values[flag]})`, usage);
      roleTargets[role] = value;
    }
    const evalEvery = values['eval-every'] === undefined ? 50 : Number(values['eval-every']);
    if (!Number.isInteger(evalEvery) || evalEvery < 1) throw new UsageError(`--eval-every must be a positive integer (got ${values['eval-every']})`, usage);

    // Starting checkpoints are what pretrain makes, so any init in the config is ignored here.
    const { config } = loadRunConfig({ preset: values.preset, file: values.config, overrides: values.set ?? [] });
    for (const id of Object.keys(config.policies)) delete config.policies[id].init;
    const served = usedPolicyIds(config).filter((id) => isServedPolicy(config, id));
    assertServedPoliciesAllowPretrain(config, served);
    const backend = await initBackend(config.runtime.backend);
    const data = loadTaskData(config);
    const scratchDir = prepareHfScratch(config, data.family, data.train);
    const heldOut = data.test.slice(0, Math.min(config.eval.problems, data.test.length));
    const policies = new Map<string, PolicyRuntime>();
    for (const id of trainedPolicyIds(config)) policies.set(id, createPolicy(id, config.policies[id], data.tokenizer, config.seed).policy);
    const roles = rolePolicies(config, policies);
    const bar = new ProgressLine();
    for (const id of served) bar.log(`${id} is served by endpoint ${config.policies[id].endpoint} (${rolesOf(config, id).join(', ')}): inference only, not warm-started.`);
    bar.log(`Backend ${backend.name} (${backend.threads} thread${backend.threads === 1 ? '' : 's'}); task ${config.task.family} difficulty ${config.task.difficulty}; policies ${[...policies.keys()].join(', ')}.`);
    const ordered = [...policies.values()].sort((a, b) => Number(b === roles.solver) - Number(a === roles.solver));
    assertStartFromSolverFits(config, ordered, roles.solver);
    const report: Record<string, { chosenStep: number; scores: Partial<Record<Role, number>>; history: PretrainEval[] }> = {};
    let solverSamples: Map<string, string> | undefined;
    // The Solver's weights at its last step, not at its kept one (pretrain.start_from_solver); the Solver goes first.
    let solverLastWeights: Float32Array | null = null;
    const started = Date.now();
    for (const policy of ordered) {
      if (policy !== roles.solver && !solverSamples) {
        solverSamples = await solverSamplesOf(roles.solver, config, data, 1024);
      }
      const policyRoles = rolesOf(config, policy.id);
      const isSolver = policyRoles.includes('solver');
      if (!isSolver && solverLastWeights) startFromSolverWeights(policy, solverLastWeights);
      // A policy that is not the Solver is held to the targets of the roles it plays.
      const targetRoles = isSolver ? [] : policyRoles.filter((r) => roleTargets[r] !== undefined);
      let best: { step: number; value: number; weights: Float32Array; scores: Partial<Record<Role, number>> } | null = null;
      const history = await pretrainPolicy(policy, {
        ...warmStartArgs(config, data, heldOut, solverSamples),
        evalEvery,
        onProgress: (p) => bar.update(`warm start ${p.policyId}`, p.step + 1, p.steps, `loss ${number(p.loss, 3)}`),
        onEval: async (e) => {
          const raw = score(e);
          // For the Solver with a target, "best" is nearest the target accuracy; likewise a Verifier's or Corrector's score.
          const value =
            isSolver && target !== null
              ? -Math.abs((e.sampledSolver ?? e.scores.solver ?? raw) - target)
              : targetRoles.length > 0
                ? -targetRoles.reduce((sum, r) => sum + Math.abs((e.scores[r] ?? raw) - roleTargets[r]!), 0)
                : raw;
          if (!best || value > best.value) best = { step: e.step, value, weights: await readWeights(policy.model), scores: e.scores };
          bar.log(`  ${policy.id} @ ${e.step}: ${Object.entries(e.scores).map(([r, v]) => `${r} ${number(v, 3)}`).join(', ')}${e.sampledSolver !== undefined ? `, solver sampled ${number(e.sampledSolver, 3)}` : ''}`);
        },
      });
      if (isSolver && config.pretrain.start_from_solver) solverLastWeights = await readWeights(policy.model);
      const chosen = best as { step: number; weights: Float32Array; scores: Partial<Record<Role, number>> } | null;
      if (!chosen) throw new Error(`no evaluation was made for ${policy.id}`);
      policy.model.setWeights(chosen.weights);
      const dir = path.join(values.out, policy.id);
      const pretrainInfo = { chosenStep: chosen.step, scores: chosen.scores, targetSolverAccuracy: target, targetScores: roleTargets };
      // Both writers read the weights synchronously; on webgpu they are read ahead (readback.ts).
      await withReadAhead(policy.model.variables, () => {
        // A Hugging Face policy leaves as a Hugging Face folder (what model.path names, transformers loads).
        if (policy.source.family === 'hf') saveHfWarmStart(dir, policy, { ...pretrainInfo, steps: config.pretrain.steps, history: history.map((e) => ({ step: e.step, scores: e.scores, sampledSolver: e.sampledSolver })) });
        else {
          fs.mkdirSync(dir, { recursive: true });
          savePolicyCheckpoint(dir, policy, { optimizer: null, config, step: chosen.step, extra: { pretrain: pretrainInfo } });
        }
      });
      report[policy.id] = { chosenStep: chosen.step, scores: chosen.scores, history };
      bar.log(`  ${policy.id}: kept step ${chosen.step} → ${dir}`);
    }
    bar.end();
    for (const p of policies.values()) p.dispose();
    if (scratchDir) fs.rmSync(scratchDir, { recursive: true, force: true });
    const seconds = (Date.now() - started) / 1000;
    if (values.json) printJson(ctx.out, { out: values.out, seconds, policies: report });
    else ctx.out(`Warm start done in ${formatDuration(seconds)}; checkpoints in ${values.out}.`);
    return 0;
  },
});

/**
 * The engines' metric keys onto the Studio's catalog (metrics/catalog.ts), only where they mean
 * the same; every other key is kept as the engine wrote it, under `verl/…` or `drmas/…`.
 *
 * Mapped, and why they mean the same:
 *   actor/grad_norm               → {agent}/grad_norm      L2 norm before clipping (clip_grad_norm_ returns the pre-clip norm)
 *   actor/entropy (veRL), actor/{wg}/entropy_loss (DrMAS) → {agent}/entropy   mean per-token entropy on the agent's samples
 *   actor/pg_clipfrac             → {agent}/clip_fraction  share of tokens outside the PPO clip range
 *   critic/score/mean (veRL)      → solver/reward/mean     the reward function's score, before any KL term
 *   response_length/mean (veRL)   → solver/response_length tokens per response (one policy: all responses are its)
 *   timing_s/step, /gen, /update_actor → perf/step_s, perf/rollout_s, perf/update_s
 *   val-core/{ds}/acc/mean@1      → eval/system/accuracy and eval/solver/accuracy (greedy; one policy, so the system is the Solver)
 *   val-core/{ds}/acc/mean@N      → eval/system/avg@N (and eval/solver/avg@N): mean correctness over N samples
 *   val/pass@k, val/avg@k (DrMAS) → eval/system/pass@k, eval/system/avg@k: any / mean over the k attempts of a problem
 *                                   (with n = k samples the unbiased pass@k estimator is exactly "any")
 *
 * Not mapped on purpose: veRL's critic/advantages/* (a token-weighted mean, not the per-sample
 * one), best@k (a bootstrap estimate, not pass@k), perf/throughput (counts prompt tokens too),
 * DrMAS's critic/{wg}/score/* and response_length/* (they include the padding copies of each
 * worker group's batch). The per-agent reward and advantage of DrMAS come instead from the dumps
 * written with the Studio's hook (`derivedStepMetrics`), where the copies are flagged.
 */
import type { EngineAgent, FollowSpec } from './spec';
import type { TurnRecord } from './records';

export interface MappedKey {
  key: string;
  via: 'mapped' | 'engine';
}

const TIMING: Record<string, string> = { 'timing_s/step': 'perf/step_s', 'timing_s/gen': 'perf/rollout_s', 'timing_s/update_actor': 'perf/update_s' };

/** The Studio agent of a worker group, when it trains exactly one agent with a Studio role. */
function agentOfGroup(agents: readonly EngineAgent[], wgId: string): string | null {
  const members = agents.filter((a) => a.wgId === wgId);
  return members.length === 1 && members[0].role !== null ? members[0].role : null;
}

function validationKeys(spec: FollowSpec, key: string): string[] | null {
  for (const ds of spec.dataSources) {
    const prefix = `val-core/${ds}/acc/`;
    if (!key.startsWith(prefix)) continue;
    const m = /^mean@(\d+)$/.exec(key.slice(prefix.length));
    if (!m || spec.dataSources.length !== 1 || Number(m[1]) !== spec.valN) return null;
    const n = Number(m[1]);
    return n === 1 ? ['eval/system/accuracy', 'eval/solver/accuracy'] : [`eval/system/avg@${n}`, `eval/solver/avg@${n}`];
  }
  return null;
}

function verlKeys(spec: FollowSpec, key: string): string[] | null {
  const direct: Record<string, string> = {
    'actor/grad_norm': 'solver/grad_norm',
    'actor/entropy': 'solver/entropy',
    'actor/pg_clipfrac': 'solver/clip_fraction',
    'critic/score/mean': 'solver/reward/mean',
    'response_length/mean': 'solver/response_length',
  };
  if (direct[key]) return [direct[key]];
  if (TIMING[key]) return [TIMING[key]];
  return validationKeys(spec, key);
}

function drmasKeys(spec: FollowSpec, key: string): string[] | null {
  if (TIMING[key]) return [TIMING[key]];
  const val = /^val\/(pass|avg)@(\d+)$/.exec(key);
  if (val && Number(val[2]) === spec.valN) {
    const keys = [`eval/system/${val[1]}@${val[2]}`];
    // One greedy attempt per problem: its mean is the held-out accuracy.
    if (val[1] === 'avg' && spec.valN === 1) keys.push('eval/system/accuracy');
    return keys;
  }
  // actor/{wg}/{name}: the worker group id is everything between the first and the last slash.
  const actor = /^actor\/(.+)\/(grad_norm|entropy_loss|pg_clipfrac)$/.exec(key);
  if (actor) {
    const agent = agentOfGroup(spec.agents, actor[1]);
    if (agent === null) return null;
    const name = actor[2] === 'entropy_loss' ? 'entropy' : actor[2] === 'pg_clipfrac' ? 'clip_fraction' : 'grad_norm';
    return [`${agent}/${name}`];
  }
  return null;
}

/** The Studio keys of one engine metric (several when one value answers several catalog entries). */
export function mapMetricKey(spec: FollowSpec, engineKey: string): MappedKey[] {
  const mapped = spec.engine === 'verl' ? verlKeys(spec, engineKey) : drmasKeys(spec, engineKey);
  if (mapped) return mapped.map((key) => ({ key, via: 'mapped' }));
  return [{ key: `${spec.engine}/${engineKey}`, via: 'engine' }];
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Population standard deviation, as the Studio's own rollout metrics (training/run-support.ts std). */
function std(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  return Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / values.length);
}

/**
 * Per-agent metrics of a training step from its dumped turns, the Studio's definitions
 * (run-support.ts rolloutMetrics): reward and advantage mean/std, well-formed share and sample
 * count, over the turns that are not padding copies. Only turns whose agent is known count; a step
 * with no known agent yields nothing.
 */
export function derivedStepMetrics(turns: readonly TurnRecord[]): Record<string, number> {
  const byAgent = new Map<string, TurnRecord[]>();
  for (const t of turns) {
    if (t.split !== 'train' || t.agent === null || t.duplicate === true) continue;
    byAgent.set(t.agent, [...(byAgent.get(t.agent) ?? []), t]);
  }
  const out: Record<string, number> = {};
  for (const [agent, list] of byAgent) {
    const rewards = list.map((t) => t.reward).filter((v): v is number => v !== null && Number.isFinite(v));
    const advantages = list.map((t) => t.advantage).filter((v): v is number => v !== null && Number.isFinite(v));
    const formats = list.map((t) => t.formatValid).filter((v): v is boolean => v !== null);
    if (rewards.length) {
      out[`${agent}/reward/mean`] = mean(rewards);
      out[`${agent}/reward/std`] = std(rewards);
    }
    if (advantages.length) {
      out[`${agent}/advantage/mean`] = mean(advantages);
      out[`${agent}/advantage/std`] = std(advantages);
    }
    if (formats.length) out[`${agent}/format_valid`] = mean(formats.map(Number));
    out[`${agent}/samples`] = list.length;
  }
  return out;
}

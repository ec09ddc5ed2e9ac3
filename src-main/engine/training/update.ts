/**
 * The PPO update of one agent's turns of a step (ppo.ts under it): minibatches over
 * `ppo_epochs`, NaN/Inf skips up to `nan_tolerance`, the update spans of the timeline, and the
 * work sharing that computes part of a minibatch's gradient in the pipeline's rollout process.
 */
import type { RunConfig } from '../config/schema';
import type { BatchWriter, Store } from '../store';
import type { PolicyRuntime } from './policies';
import { addPpoParts, applyPpoPartsAsync, ppoPartGradientsAsync, ppoStepAsync, responseLogProbsAsync, responseTokenCount, type PolicySample, type PpoOptions, type PpoPart, type PpoRemotePart, type PpoStepResult } from './ppo';
import type { RolloutTurn } from './rollout';
import { mean } from './step-metrics';

/** Raised when `optimization.nan_tolerance` updates in a row were skipped for NaN/Inf. */
export class NonFiniteError extends Error {}

export interface UpdateContext {
  store: Store;
  runId: number;
  config: RunConfig;
  writer: BatchWriter;
  worker: string;
  injectNanLossFromStep?: number;
  /** Updates skipped for NaN/Inf in a row, across agents and steps. */
  skips: { consecutive: number };
}


/**
 * Parts of one minibatch offered to another process (the pipeline's rollout worker), which takes
 * them one at a time in the offered order, with exactly the weights `policy` had when offered.
 */
export interface GradientOffer {
  /** Let the other process's messages in. */
  poll(): Promise<void>;
  /** How many offered parts (from the first) the other process has started, as far as known here. */
  started(): number;
  /** This process computes the offered parts from index `from` on: the other one takes only those before it. */
  claimFrom(from: number): void;
  /** The gradients of the first `count` offered parts (all started), as they arrive. */
  results(count: number): Promise<PpoRemotePart[]>;
}

/** Computes parts of minibatch gradients in another process while it would otherwise wait. */
export interface GradientOffload {
  /** Most of a minibatch's parts offered (pipeline.gradient_share, 0 < share < 1). */
  share: number;
  /** Parts a minibatch is cut into (pipeline.gradient_parts, ≥ 2). */
  parts: number;
  /** Offers parts; resolves once the offer has left this process. */
  offer(request: { agent: string; step: number; policy: PolicyRuntime; parts: PolicySample[][]; options: PpoOptions; minibatchTokens: number }): Promise<GradientOffer>;
}

/**
 * Cuts a minibatch into at most `parts` runs of consecutive samples with about equal tokens,
 * prompts included (the cost of a forward and backward pass grows with them); no part is empty.
 */
export function splitByTokens(samples: readonly PolicySample[], parts: number): PolicySample[][] {
  const total = samples.reduce((n, s) => n + s.tokens.length, 0);
  const pieces: PolicySample[][] = [];
  let current: PolicySample[] = [];
  let seen = 0;
  for (const sample of samples) {
    current.push(sample);
    seen += sample.tokens.length;
    // Close a part once the tokens so far reach its share of the whole.
    if (pieces.length < parts - 1 && seen >= ((pieces.length + 1) * total) / parts) {
      pieces.push(current);
      current = [];
    }
  }
  if (current.length > 0) pieces.push(current);
  return pieces;
}

/**
 * One minibatch, shared with the other process (work sharing, issue #5). The minibatch is cut into
 * parts; the back `share` of them are offered, last part first, and the other process takes them
 * one at a time whenever it would otherwise wait (between its segments, or at once when it waits
 * for weights), while this process computes from the front. Where they meet this process claims
 * each offered part the other has not started before computing it, so it never waits for work
 * that has not begun: at most for the one part the other is computing. A part both started in the
 * same moment is computed twice and counted once (this process's). The parts' gradients add up to
 * the minibatch's (ppo.ts), so the update is the same wherever they were computed.
 */
export async function minibatchStep(policy: PolicyRuntime, batch: PolicySample[], options: PpoOptions, agent: string, step: number, offload: GradientOffload | undefined): Promise<PpoStepResult> {
  const pieces = offload ? splitByTokens(batch, offload.parts) : [batch];
  const offered = offload ? Math.min(Math.floor(offload.share * pieces.length), pieces.length - 1) : 0;
  if (offered < 1) return ppoStepAsync(policy.model, policy.optimizer, batch, options);
  const minibatchTokens = responseTokenCount(batch);
  // Offer index j is piece P − 1 − j: the other process works down from the last piece.
  const pieceOf = (j: number) => pieces[pieces.length - 1 - j];
  const offer = await offload!.offer({ agent, step, policy, parts: Array.from({ length: offered }, (_, j) => pieceOf(j)), options, minibatchTokens });
  let own: PpoPart | null = null;
  // The asynchronous forms work on every backend; on webgpu they are the only ones (readback.ts).
  const compute = async (piece: PolicySample[]) => {
    const part = await ppoPartGradientsAsync(policy.model, piece, options, minibatchTokens);
    own = own ? addPpoParts(own, part) : part;
  };
  let away: PpoRemotePart[];
  try {
    for (let i = 0; i < pieces.length - offered; i++) {
      await compute(pieces[i]);
      await offer.poll();
    }
    // The meeting: claim the highest offer index not started, until the other process holds the rest.
    let limit = offered;
    for (;;) {
      await offer.poll();
      if (offer.started() >= limit) break;
      limit -= 1;
      offer.claimFrom(limit);
      await compute(pieceOf(limit));
    }
    away = await offer.results(limit);
  } catch (error) {
    for (const g of (own as PpoPart | null)?.grads ?? []) g.dispose();
    throw error;
  }
  return applyPpoPartsAsync(policy.model, policy.optimizer, own!, away);
}

/**
 * One agent's PPO update on its turns of a step: `ppo_epochs` passes of minibatches, each
 * recorded as an 'update' span; a NaN/Inf loss or gradient skips that minibatch with an event,
 * and `nan_tolerance` skips in a row raise NonFiniteError. Returns the agent's metrics (gradient
 * norm before clipping, loss, entropy, KL, clip fraction) when any update was applied.
 */
export async function updateAgent(
  ctx: UpdateContext,
  agent: string,
  policy: PolicyRuntime,
  items: readonly { turn: RolloutTurn; advantage: number }[],
  step: number,
  offload?: GradientOffload,
): Promise<Record<string, number>> {
  const { config, store, runId, writer } = ctx;
  const metrics: Record<string, number> = {};
  const samples: PolicySample[] = items
    .filter(({ turn }) => turn.responseTokens.length > 0)
    .map(({ turn, advantage }) => ({
      tokens: [...turn.promptTokens, ...turn.responseTokens],
      responseStart: turn.promptTokens.length,
      behaviourLogProbs: turn.behaviourLogProbs,
      advantage,
    }));
  if (samples.length === 0) return metrics;
  if (policy.reference) {
    const refs = await responseLogProbsAsync(policy.reference, samples, config.rollout.temperature, policy.tokenizer.padId);
    samples.forEach((s, i) => (s.referenceLogProbs = refs[i]));
  }
  const options: PpoOptions = { clip: config.optimization.ppo_clip, klCoef: config.optimization.kl_coef, temperature: config.rollout.temperature, padId: policy.tokenizer.padId };
  const norms: number[] = [];
  const agentStats = { loss: [] as number[], entropy: [] as number[], kl: [] as number[], clip: [] as number[] };
  for (let epoch = 0; epoch < config.optimization.ppo_epochs; epoch++) {
    for (let start = 0; start < samples.length; start += config.optimization.minibatch_size) {
      const t0 = Date.now();
      const batch = samples.slice(start, start + config.optimization.minibatch_size);
      const poisoned = ctx.injectNanLossFromStep !== undefined && step >= ctx.injectNanLossFromStep;
      const r = await minibatchStep(policy, poisoned ? batch.map((s) => ({ ...s, advantage: Number.NaN })) : batch, options, agent, step, offload);
      writer.timelineSpan({ runId, kind: 'update', agent, worker: ctx.worker, step, policyVersion: policy.version, startedAt: t0, endedAt: Date.now(), tokens: r.tokens });
      if (r.skipped) {
        ctx.skips.consecutive++;
        store.events.log(runId, 'warning', 'non_finite_update', `${agent} update skipped at step ${step}: ${r.skipReason}`, { agent, reason: r.skipReason }, step);
        if (ctx.skips.consecutive >= config.optimization.nan_tolerance) {
          throw new NonFiniteError(`${ctx.skips.consecutive} updates in a row had a NaN/Inf loss or gradient (last: ${agent} at step ${step}, ${r.skipReason}); lower the learning rate or enable clipping (optimization.nan_tolerance = ${config.optimization.nan_tolerance})`);
        }
        continue;
      }
      ctx.skips.consecutive = 0;
      norms.push(r.gradNorm);
      agentStats.loss.push(r.loss);
      agentStats.entropy.push(r.entropy);
      agentStats.kl.push(r.kl);
      agentStats.clip.push(r.clipFraction);
    }
  }
  if (norms.length) {
    metrics[`${agent}/grad_norm`] = mean(norms);
    metrics[`${agent}/loss`] = mean(agentStats.loss);
    metrics[`${agent}/entropy`] = mean(agentStats.entropy);
    metrics[`${agent}/kl`] = mean(agentStats.kl);
    metrics[`${agent}/clip_fraction`] = mean(agentStats.clip);
  }
  return metrics;
}


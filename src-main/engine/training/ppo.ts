/**
 * The policy-gradient update: PPO-clip on stored behaviour log-probabilities, token-mean over the
 * response tokens of a minibatch, an optional KL penalty to the frozen starting policy, and
 * global-norm clipping with the gradient norm measured before clipping (Dr. MAS reports that
 * norm per agent: its spikes under global normalization are the paper's headline diagnostic).
 *
 * For response token t of sequence b, with A_b the turn's advantage:
 *   r = exp(log π_θ(y_t) − log π_behaviour(y_t))
 *   L = −mean_t min(r·A_b, clip(r, 1−ε, 1+ε)·A_b) + β·mean_t KL_t
 * KL_t uses the k3 estimator exp(q − p) − (q − p) − 1 with p = log π_θ, q = log π_ref (unbiased,
 * always ≥ 0; Schulman's "Approximating KL divergence"). The behaviour log-probabilities are the
 * sampler's (temperature-scaled, as sampled), and π_θ is evaluated at the same temperature, so
 * the ratio is exactly 1 for on-policy tokens.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { PolicyModel } from '../model/policy-model';
import type { Adam, StepResult } from '../model/optim';
import { readSync, takeAsync, takeSync } from '../model/readback';
import { padBatch, type TrainingSequence } from './sequences';

export interface PolicySample extends TrainingSequence {
  /** Behaviour log-probability of each response token, aligned with tokens[responseStart…]. */
  behaviourLogProbs: number[];
  advantage: number;
  /** log π_ref of each response token, when a KL penalty is used. */
  referenceLogProbs?: number[];
}

export interface PpoOptions {
  clip: number;
  klCoef: number;
  temperature: number;
  padId: number;
}

export interface PpoStepResult {
  loss: number;
  gradNorm: number;
  clipped: boolean;
  skipped: boolean;
  /** Why an update was skipped (non-finite loss or gradient). */
  skipReason: string | null;
  clipFraction: number;
  /** Mean entropy of π_θ over response tokens. */
  entropy: number;
  /** Mean k3 KL to the reference (0 when no reference is given). */
  kl: number;
  /** Mean log π_behaviour − log π_θ over response tokens (off-policy drift before the update). */
  approxKlBehaviour: number;
  tokens: number;
  lr: number;
}

/** Response tokens of a set of samples: the denominator of the token-mean loss. */
export function responseTokenCount(samples: readonly TrainingSequence[]): number {
  return samples.reduce((n, s) => n + Math.max(0, s.tokens.length - s.responseStart), 0);
}

/**
 * Sums over one part of a minibatch's response tokens. The loss is already divided by the whole
 * minibatch's token count, so the parts of a minibatch add up to its token-mean loss (and their
 * gradients to its gradient); the diagnostics are plain sums.
 */
export interface PpoPartSums {
  loss: number;
  clipped: number;
  entropy: number;
  kl: number;
  drift: number;
  tokens: number;
}

export interface PpoPart {
  /** d loss / d parameter, one tensor per model variable, in `model.variables` order. */
  grads: tf.Tensor[];
  sums: PpoPartSums;
}

/** A part computed elsewhere (the rollout process): the gradient laid out as `model.getWeights`. */
export interface PpoRemotePart {
  flatGrads: Float32Array;
  sums: PpoPartSums;
}

/**
 * The PPO loss and gradient of one part of a minibatch whose response tokens number
 * `minibatchTokens` in all. Computing a minibatch in parts (in two processes) gives the gradient of
 * the whole, up to the order of float additions.
 */
export function ppoPartGradients(model: PolicyModel, samples: readonly PolicySample[], options: PpoOptions, minibatchTokens: number): PpoPart {
  const part = ppoPartTensors(model, samples, options, minibatchTokens);
  return partOf(part, takeSync(part.value, 'ppoPartGradientsAsync')[0], takeSync(part.diagnostics, 'ppoPartGradientsAsync'));
}

/** `ppoPartGradients` for every backend, WebGPU included (the loss and diagnostics are read back asynchronously). */
export async function ppoPartGradientsAsync(model: PolicyModel, samples: readonly PolicySample[], options: PpoOptions, minibatchTokens: number): Promise<PpoPart> {
  const part = ppoPartTensors(model, samples, options, minibatchTokens);
  const loss = (await takeAsync(part.value))[0];
  return partOf(part, loss, await takeAsync(part.diagnostics));
}

interface PartTensors {
  value: tf.Scalar;
  diagnostics: tf.Tensor1D;
  grads: tf.NamedTensorMap;
  count: number;
  model: PolicyModel;
}

function partOf(part: PartTensors, loss: number, diagnostics: Float32Array): PpoPart {
  const [clippedSum, entropySum, klSum, driftSum] = Array.from(diagnostics);
  return {
    grads: part.model.variables.map((v) => part.grads[v.name]),
    sums: { loss, clipped: clippedSum, entropy: entropySum, kl: klSum, drift: driftSum, tokens: part.count },
  };
}

/** The loss, the diagnostics and the gradients as tensors (the loss and diagnostics still to be read). */
function ppoPartTensors(model: PolicyModel, samples: readonly PolicySample[], options: PpoOptions, minibatchTokens: number): PartTensors {
  const { tokens } = padBatch(samples, options.padId);
  const B = samples.length;
  const T = tokens[0].length;
  // Time-major rows: row (t−1)·B + b scores token t of sequence b (see PolicyModel.nextTokenStatsTimeMajor).
  const rows = (T - 1) * B;
  const mask = new Float32Array(rows);
  const behaviour = new Float32Array(rows);
  const advantage = new Float32Array(rows);
  const reference = new Float32Array(rows);
  let count = 0;
  samples.forEach((s, b) => {
    for (let t = s.responseStart; t < s.tokens.length; t++) {
      const row = (t - 1) * B + b;
      const j = t - s.responseStart;
      mask[row] = 1;
      behaviour[row] = s.behaviourLogProbs[j];
      advantage[row] = s.advantage;
      reference[row] = s.referenceLogProbs ? s.referenceLogProbs[j] : 0;
      count++;
    }
  });
  if (count === 0) throw new Error('ppoStep: the minibatch has no response tokens');

  const maskT = tf.tensor1d(mask);
  const behaviourT = tf.tensor1d(behaviour);
  const advantageT = tf.tensor1d(advantage);
  const referenceT = tf.tensor1d(reference);
  let diagnostics: tf.Tensor1D | null = null;
  try {
    const { value, grads } = tf.variableGrads(() => {
      const { stats } = model.nextTokenStatsTimeMajor(tokens, { temperature: options.temperature, entropy: true });
      const logp = tf.reshape(tf.slice(stats, [0, 0], [1, rows]), [rows]);
      const entropy = tf.reshape(tf.slice(stats, [1, 0], [1, rows]), [rows]);
      const ratio = tf.exp(tf.sub(logp, behaviourT));
      const unclipped = tf.mul(ratio, advantageT);
      const clipped = tf.mul(tf.clipByValue(ratio, 1 - options.clip, 1 + options.clip), advantageT);
      const surrogate = tf.minimum(unclipped, clipped);
      let perToken = tf.neg(surrogate);
      let kl = tf.zerosLike(logp);
      if (options.klCoef > 0) {
        const diff = tf.sub(referenceT, logp);
        kl = tf.sub(tf.sub(tf.exp(diff), diff), 1);
        perToken = tf.add(perToken, tf.mul(kl, options.klCoef));
      }
      const loss = tf.div(tf.sum(tf.mul(perToken, maskT)), minibatchTokens) as tf.Scalar;
      // Diagnostics, kept out of the gradient: clip fraction, entropy, KL, drift from behaviour.
      const isClipped = tf.cast(tf.logicalOr(tf.less(ratio, 1 - options.clip), tf.greater(ratio, 1 + options.clip)), 'float32');
      diagnostics = tf.keep(
        tf.stack([
          tf.sum(tf.mul(isClipped, maskT)),
          tf.sum(tf.mul(entropy, maskT)),
          tf.sum(tf.mul(kl, maskT)),
          tf.sum(tf.mul(tf.sub(behaviourT, logp), maskT)),
        ]) as tf.Tensor1D,
      );
      return loss;
    }, model.variables);
    const part = { value, diagnostics: diagnostics as unknown as tf.Tensor1D, grads, count, model };
    diagnostics = null; // handed over
    return part;
  } finally {
    tf.dispose([maskT, behaviourT, advantageT, referenceT]);
    if (diagnostics) (diagnostics as tf.Tensor).dispose();
  }
}

/** A part's gradient as one buffer laid out as `model.getWeights()` (to send to another process). */
export function flattenGradients(model: PolicyModel, grads: readonly tf.Tensor[]): Float32Array {
  const flat = new Float32Array(model.numParams);
  grads.forEach((g, i) => flat.set(readSync(g, 'flattenGradientsAsync'), model.specs[i].offset));
  return flat;
}

/** `flattenGradients` for every backend, WebGPU included. */
export async function flattenGradientsAsync(model: PolicyModel, grads: readonly tf.Tensor[]): Promise<Float32Array> {
  const flat = new Float32Array(model.numParams);
  for (let i = 0; i < grads.length; i++) flat.set((await grads[i].data()) as Float32Array, model.specs[i].offset);
  return flat;
}

function addSums(a: PpoPartSums, b: PpoPartSums): PpoPartSums {
  return { loss: a.loss + b.loss, clipped: a.clipped + b.clipped, entropy: a.entropy + b.entropy, kl: a.kl + b.kl, drift: a.drift + b.drift, tokens: a.tokens + b.tokens };
}

/** Two parts of one minibatch as one (their gradients and sums added); disposes both parts' tensors. */
export function addPpoParts(a: PpoPart, b: PpoPart): PpoPart {
  const grads = a.grads.map((g, i) => tf.add(g, b.grads[i]));
  tf.dispose([...a.grads, ...b.grads]);
  return { grads, sums: addSums(a.sums, b.sums) };
}

/**
 * Sum the parts of one minibatch and take the optimizer step. Disposes the local part's tensors.
 * A non-finite loss or gradient skips the step and says why.
 */
export function applyPpoParts(model: PolicyModel, optimizer: Adam, local: PpoPart, remote: readonly PpoRemotePart[] = []): PpoStepResult {
  return driveStep(applySteps(model, optimizer, local, remote), (grads) => optimizer.step(grads));
}

/** `applyPpoParts` for every backend, WebGPU included (the gradient norm is read back asynchronously). */
export async function applyPpoPartsAsync(model: PolicyModel, optimizer: Adam, local: PpoPart, remote: readonly PpoRemotePart[] = []): Promise<PpoStepResult> {
  const steps = applySteps(model, optimizer, local, remote);
  let r = steps.next();
  while (!r.done) r = steps.next(await optimizer.stepAsync(r.value));
  return r.value;
}

function driveStep(steps: Generator<tf.Tensor[], PpoStepResult, StepResult>, step: (grads: tf.Tensor[]) => StepResult): PpoStepResult {
  let r = steps.next();
  while (!r.done) r = steps.next(step(r.value));
  return r.value;
}

/** The parts' sum and its bookkeeping, yielding the gradients for the optimizer step (made by the driver). */
function* applySteps(model: PolicyModel, optimizer: Adam, local: PpoPart, remote: readonly PpoRemotePart[]): Generator<tf.Tensor[], PpoStepResult, StepResult> {
  let grads = local.grads;
  try {
    if (remote.length > 0) {
      grads = tf.tidy(() =>
        local.grads.map((g, i) => {
          const spec = model.specs[i];
          return remote.reduce((sum, part) => tf.add(sum, tf.tensor(part.flatGrads.subarray(spec.offset, spec.offset + spec.size), spec.shape, 'float32')), g);
        }),
      );
    }
    const sums = remote.map((r) => r.sums).reduce(addSums, local.sums);
    const loss = sums.loss;
    // Adam.step would apply a finite gradient of a non-finite loss; refuse it here.
    const result: StepResult = Number.isFinite(loss) ? yield grads : { gradNorm: Number.NaN, lr: optimizer.currentLr, clipped: false, skipped: true };
    return {
      loss,
      gradNorm: result.gradNorm,
      clipped: result.clipped,
      skipped: result.skipped,
      skipReason: !Number.isFinite(loss) ? `loss was ${loss}` : result.skipped ? `gradient norm was ${result.gradNorm}` : null,
      clipFraction: sums.clipped / sums.tokens,
      entropy: sums.entropy / sums.tokens,
      kl: sums.kl / sums.tokens,
      approxKlBehaviour: sums.drift / sums.tokens,
      tokens: sums.tokens,
      lr: result.lr,
    };
  } finally {
    tf.dispose(local.grads);
    if (grads !== local.grads) tf.dispose(grads);
  }
}

/**
 * One optimizer step on a minibatch of one agent's turns. A NaN/Inf in the loss or the gradient
 * skips the update and says so; the caller counts consecutive skips.
 */
export function ppoStep(model: PolicyModel, optimizer: Adam, samples: readonly PolicySample[], options: PpoOptions): PpoStepResult {
  return applyPpoParts(model, optimizer, ppoPartGradients(model, samples, options, responseTokenCount(samples)));
}

/** `ppoStep` for every backend, WebGPU included. */
export async function ppoStepAsync(model: PolicyModel, optimizer: Adam, samples: readonly PolicySample[], options: PpoOptions): Promise<PpoStepResult> {
  return applyPpoPartsAsync(model, optimizer, await ppoPartGradientsAsync(model, samples, options, responseTokenCount(samples)));
}

/** log π(y_t) of each response token under `model` (no gradient), e.g. for the KL reference. */
export function responseLogProbs(model: PolicyModel, samples: readonly TrainingSequence[], temperature: number, padId: number): number[][] {
  const { tokens } = padBatch(samples, padId);
  const { stats } = model.nextTokenStatsTimeMajor(tokens, { temperature, entropy: false });
  return perResponse(samples, takeSync(stats, 'responseLogProbsAsync'));
}

/** `responseLogProbs` for every backend, WebGPU included. */
export async function responseLogProbsAsync(model: PolicyModel, samples: readonly TrainingSequence[], temperature: number, padId: number): Promise<number[][]> {
  const { tokens } = padBatch(samples, padId);
  const { stats } = model.nextTokenStatsTimeMajor(tokens, { temperature, entropy: false });
  return perResponse(samples, await takeAsync(stats));
}

/** Each response's log-probabilities out of time-major statistics (row 0 of [2, (T−1)·B]). */
function perResponse(samples: readonly TrainingSequence[], data: Float32Array): number[][] {
  const B = samples.length;
  return samples.map((s, b) => {
    const out: number[] = [];
    for (let t = s.responseStart; t < s.tokens.length; t++) out.push(data[(t - 1) * B + b]);
    return out;
  });
}

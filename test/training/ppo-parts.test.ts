import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { createPolicy } from '../../src-main/engine/training/policies';
import { applyPpoParts, flattenGradients, ppoPartGradients, ppoStep, responseTokenCount, type PolicySample, type PpoOptions, type PpoRemotePart } from '../../src-main/engine/training/ppo';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { minibatchStep, splitByTokens, type GradientOffload } from '../../src-main/engine/training/update';
import { promptTokens } from '../../src-main/engine/training/sequences';
import { solverPrompt } from '../../src-main/engine/agents';
import { Rng } from '../../src-main/engine/util/rng';
import { tinyConfig } from './tiny';

const config = tinyConfig();
const data = loadTaskData(config);
const options: PpoOptions = { clip: 0.2, klCoef: 0.05, temperature: 1, padId: data.tokenizer.padId };

/** Samples of different lengths with behaviour log-probabilities off the policy, so ratios are clipped too. */
function samples(count: number): PolicySample[] {
  const rng = new Rng(4, 'ppo-parts');
  return data.train.slice(0, count).map((p, i) => {
    const prompt = promptTokens(data.tokenizer, 'solver', solverPrompt(p));
    const response = Array.from({ length: 3 + (i % 5) * 2 }, () => rng.int(4, data.tokenizer.vocabSize - 1));
    return {
      tokens: [...prompt, ...response],
      responseStart: prompt.length,
      behaviourLogProbs: response.map(() => -3 + rng.next() * 2),
      referenceLogProbs: response.map(() => -3 + rng.next() * 2),
      advantage: rng.next() * 2 - 1,
    };
  });
}

beforeAll(async () => {
  await initBackend(config.runtime.backend);
});

describe('a minibatch gradient computed in parts (the pipeline rollout computes a share)', () => {
  it('parts add up to the whole: same loss, diagnostics, gradient norm and updated weights as one ppoStep', () => {
    const batch = samples(10);
    const whole = createPolicy('solver', config.policies.solver, data.tokenizer, 21).policy;
    const split = createPolicy('solver', config.policies.solver, data.tokenizer, 21).policy;
    expect(split.model.getWeights()).toEqual(whole.model.getWeights());

    const one = ppoStep(whole.model, whole.optimizer, batch, options);

    const [local, remote] = splitByTokens(batch, 2);
    expect(local.length).toBeGreaterThan(0);
    expect(remote.length).toBeGreaterThan(0);
    const minibatchTokens = responseTokenCount(batch);
    // The remote share as it travels: a flat gradient buffer and plain sums.
    const away = ppoPartGradients(split.model, remote, options, minibatchTokens);
    const flatGrads = flattenGradients(split.model, away.grads);
    away.grads.forEach((g) => g.dispose());
    const own = ppoPartGradients(split.model, local, options, minibatchTokens);
    const parts = applyPpoParts(split.model, split.optimizer, own, [{ flatGrads, sums: away.sums }]);

    expect(parts.tokens).toBe(one.tokens);
    expect(parts.loss).toBeCloseTo(one.loss, 5);
    expect(parts.gradNorm).toBeCloseTo(one.gradNorm, 4);
    expect(parts.clipFraction).toBeCloseTo(one.clipFraction, 6);
    expect(parts.entropy).toBeCloseTo(one.entropy, 5);
    expect(parts.kl).toBeCloseTo(one.kl, 5);
    expect(parts.approxKlBehaviour).toBeCloseTo(one.approxKlBehaviour, 5);
    expect(one.clipFraction).toBeGreaterThan(0);
    const a = whole.model.getWeights();
    const b = split.model.getWeights();
    let maxDiff = 0;
    let moved = 0;
    const before = createPolicy('solver', config.policies.solver, data.tokenizer, 21).policy.model.getWeights();
    for (let i = 0; i < a.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
      moved = Math.max(moved, Math.abs(a[i] - before[i]));
    }
    expect(moved).toBeGreaterThan(1e-4); // the step did change the weights…
    // …the same way: Adam's first step is about lr·sign(g), so a gradient element near zero may
    // differ in the last bits; 1% of one step of lr = 1e-3.
    expect(maxDiff).toBeLessThan(1e-5);
    whole.dispose();
    split.dispose();
  });

  it('the parts’ gradients sum to the whole minibatch’s gradient', () => {
    const batch = samples(9);
    const policy = createPolicy('solver', config.policies.solver, data.tokenizer, 23).policy;
    const minibatchTokens = responseTokenCount(batch);
    const flat = (part: ReturnType<typeof ppoPartGradients>) => {
      const f = flattenGradients(policy.model, part.grads);
      part.grads.forEach((g) => g.dispose());
      return f;
    };
    const whole = flat(ppoPartGradients(policy.model, batch, options, minibatchTokens));
    const [local, remote] = splitByTokens(batch, 2);
    const a = flat(ppoPartGradients(policy.model, local, options, minibatchTokens));
    const b = flat(ppoPartGradients(policy.model, remote, options, minibatchTokens));
    let largest = 0;
    let worst = 0;
    for (let i = 0; i < whole.length; i++) {
      largest = Math.max(largest, Math.abs(whole[i]));
      worst = Math.max(worst, Math.abs(a[i] + b[i] - whole[i]));
    }
    expect(largest).toBeGreaterThan(1e-3);
    expect(worst).toBeLessThan(1e-5 * largest);
    // Neither part alone is the whole.
    let offByPart = 0;
    for (let i = 0; i < whole.length; i++) offByPart = Math.max(offByPart, Math.abs(a[i] - whole[i]));
    expect(offByPart).toBeGreaterThan(1e-3 * largest);
    policy.dispose();
  });

  it('a NaN in the remote share skips the update like a NaN anywhere in the minibatch', () => {
    const batch = samples(6);
    const policy = createPolicy('solver', config.policies.solver, data.tokenizer, 22).policy;
    const before = policy.model.getWeights();
    const [local, remote] = splitByTokens(batch, 2);
    const minibatchTokens = responseTokenCount(batch);
    const away = ppoPartGradients(policy.model, remote.map((s) => ({ ...s, advantage: Number.NaN })), options, minibatchTokens);
    const flatGrads = flattenGradients(policy.model, away.grads);
    away.grads.forEach((g) => g.dispose());
    const result = applyPpoParts(policy.model, policy.optimizer, ppoPartGradients(policy.model, local, options, minibatchTokens), [{ flatGrads, sums: away.sums }]);
    expect(result.skipped).toBe(true);
    expect(result.skipReason).toMatch(/loss was NaN/);
    expect(policy.model.getWeights()).toEqual(before);
    policy.dispose();
  });
});

describe('minibatchStep shares a minibatch with another process (work sharing)', () => {
  /**
   * A stand-in for the rollout process: at the trainer's n-th poll it starts (and at once finishes)
   * the next offered part when `takes(n)`, on its own copy of the weights, as the rollout does.
   * With `ignoresClaims` it also takes parts the trainer has claimed (the race of a claim crossing
   * an announcement).
   */
  function otherProcess(takes: (poll: number) => boolean, ignoresClaims = false) {
    const computed: PolicySample[][] = [];
    const offload: GradientOffload = {
      share: 0.5,
      parts: 6,
      offer: async ({ policy, parts, options: o, minibatchTokens }) => {
        const copy = createPolicy('solver', config.policies.solver, data.tokenizer, 1).policy;
        copy.adoptWeights(policy.model.getWeights(), policy.version);
        let polls = 0;
        let limit = parts.length;
        const done: PpoRemotePart[] = [];
        return {
          poll: async () => {
            polls++;
            if (done.length < (ignoresClaims ? parts.length : limit) && takes(polls)) {
              const part = ppoPartGradients(copy.model, parts[done.length], o, minibatchTokens);
              computed.push(parts[done.length]);
              done.push({ flatGrads: flattenGradients(copy.model, part.grads), sums: part.sums });
              part.grads.forEach((g) => g.dispose());
            }
          },
          started: () => done.length,
          claimFrom: (from) => {
            limit = Math.min(limit, from);
          },
          results: async (count) => {
            copy.dispose();
            return done.slice(0, count);
          },
        };
      },
    };
    return { offload, computed };
  }

  // 6 parts, share 0.5: parts 5, 4, 3 are offered (in that order); this process computes 0, 1, 2
  // with a poll after each, then meets the other process, claiming the highest part not started.
  it.each([
    { name: 'never free', takes: () => false, ignoresClaims: false, remote: [] as number[] },
    { name: 'free from the start', takes: () => true, ignoresClaims: false, remote: [5, 4, 3] },
    { name: 'free once, at the 3rd poll', takes: (n: number) => n === 3, ignoresClaims: false, remote: [5] },
    { name: 'free from the 3rd poll, taking claimed parts too', takes: (n: number) => n >= 3, ignoresClaims: true, remote: [5, 4] },
  ])('other process $name: it computes parts $remote, and the update equals one ppoStep', async ({ takes, ignoresClaims, remote }) => {
    const batch = samples(12);
    const pieces = splitByTokens(batch, 6);
    expect(pieces).toHaveLength(6);
    const whole = createPolicy('solver', config.policies.solver, data.tokenizer, 31).policy;
    const shared = createPolicy('solver', config.policies.solver, data.tokenizer, 31).policy;
    const one = ppoStep(whole.model, whole.optimizer, batch, options);
    const other = otherProcess(takes, ignoresClaims);
    const result = await minibatchStep(shared, batch, options, 'solver', 0, other.offload);
    // Which parts it began (in the race, a part both began is counted once, from this process).
    expect(other.computed.slice(0, remote.length)).toEqual(remote.map((i) => pieces[i]));
    expect(result.tokens).toBe(one.tokens);
    expect(result.loss).toBeCloseTo(one.loss, 5);
    expect(result.gradNorm).toBeCloseTo(one.gradNorm, 4);
    const a = whole.model.getWeights();
    const b = shared.model.getWeights();
    let maxDiff = 0;
    for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
    expect(maxDiff).toBeLessThan(1e-5);
    whole.dispose();
    shared.dispose();
  });
});

describe('splitByTokens', () => {
  const sized = (lengths: number[]): PolicySample[] => lengths.map((n) => ({ tokens: new Array(n).fill(1), responseStart: 1, behaviourLogProbs: [], advantage: 0 }));
  const lengthsOf = (parts: PolicySample[][]) => parts.map((p) => p.map((s) => s.tokens.length));

  it('cuts consecutive samples where the running token count reaches each part’s share', () => {
    // 100 tokens in 4 parts: cuts once 25, 50 and 75 tokens are reached.
    expect(lengthsOf(splitByTokens(sized([10, 10, 10, 20, 20, 10, 10, 10]), 4))).toEqual([[10, 10, 10], [20], [20, 10], [10, 10]]);
    expect(lengthsOf(splitByTokens(sized([10, 20, 30, 40]), 2))).toEqual([[10, 20, 30], [40]]);
  });

  it('keeps every sample once, in order, and never makes an empty part', () => {
    const samples = sized([7, 3, 12, 5, 9, 1, 30, 4, 4, 6]);
    for (const parts of [1, 2, 3, 6, 10, 20]) {
      const pieces = splitByTokens(samples, parts);
      expect(pieces.flat()).toEqual(samples);
      expect(pieces.length).toBeLessThanOrEqual(parts);
      for (const p of pieces) expect(p.length).toBeGreaterThan(0);
    }
    // One long sample cannot be cut: fewer parts than asked.
    expect(lengthsOf(splitByTokens(sized([5, 90, 5]), 6))).toEqual([[5, 90], [5]]);
  });
});

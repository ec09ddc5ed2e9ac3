/**
 * The sampler at real vocabulary sizes (issue #13): the binned nucleus gives exactly what the
 * repeated-maximum nucleus gave (a plain-loop copy of it below is the reference), and top-k keeps
 * the k most likely tokens with the nucleus taken inside them.
 */
import { describe, expect, it } from 'vitest';
import { sampleFromLogits } from '../../src-main/engine/model/sampling';
import { Rng } from '../../src-main/engine/util/rng';

/** The O(V·n) nucleus the sampler used before (selection by repeated maximum), as a reference. */
function referenceSample(logits: ArrayLike<number>, temperature: number, topP: number, u: number): { token: number; logProb: number } {
  const V = logits.length;
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, logits[i]);
  const w = new Float64Array(V);
  let total = 0;
  for (let i = 0; i < V; i++) {
    w[i] = Math.exp((logits[i] - max) / temperature);
    total += w[i];
  }
  const order = Int32Array.from({ length: V }, (_, i) => i);
  let n = V;
  let kept = total;
  if (topP < 1) {
    let cum = 0;
    n = 0;
    while (n < V && cum < topP * total) {
      let best = n;
      for (let j = n + 1; j < V; j++) {
        const a = order[j];
        const b = order[best];
        if (w[a] > w[b] || (w[a] === w[b] && a < b)) best = j;
      }
      [order[n], order[best]] = [order[best], order[n]];
      cum += w[order[n]];
      n++;
    }
    n = Math.max(1, n);
    kept = 0;
    for (let k = 0; k < n; k++) kept += w[order[k]];
  }
  // Inverse CDF over the kept tokens: walk on while u · kept is not used up (the last kept token
  // if rounding never uses it up).
  let rest = u * kept;
  let k = 0;
  while (k < n - 1 && (rest -= w[order[k]]) >= 0) k++;
  const token = order[k];
  return { token, logProb: Math.log(w[token] / kept) };
}

function randomLogits(rng: Rng, V: number, scale: number, ties: boolean): Float32Array {
  const a = new Float32Array(V);
  for (let i = 0; i < V; i++) a[i] = ties ? Math.round(rng.normal() * 3) : rng.normal() * scale;
  return a;
}

describe('sampleFromLogits at large vocabularies', () => {
  it('the binned nucleus equals the repeated-maximum nucleus, ties included', () => {
    const rng = new Rng(3, 'nucleus');
    let cases = 0;
    for (const V of [5, 300, 4000]) {
      for (const scale of [0.3, 2, 8]) {
        for (const ties of [false, true]) {
          const logits = randomLogits(rng, V, scale, ties);
          for (const topP of [0.05, 0.5, 0.9, 0.999]) {
            for (const temperature of [0.6, 1]) {
              const u = rng.next();
              const ref = referenceSample(logits, temperature, topP, u);
              const got = sampleFromLogits(logits, temperature, topP, u);
              expect(got.token).toBe(ref.token);
              expect(got.logProb).toBe(ref.logProb);
              cases++;
            }
          }
        }
      }
    }
    expect(cases).toBe(3 * 3 * 2 * 4 * 2);
  });

  it('equals the reference at the Qwen vocabulary size (151936) with a peaked distribution', () => {
    const rng = new Rng(4, 'qwen-size');
    const logits = randomLogits(rng, 151936, 4, false);
    for (const topP of [0.5, 0.95]) {
      const u = rng.next();
      expect(sampleFromLogits(logits, 0.7, topP, u)).toMatchObject(referenceSample(logits, 0.7, topP, u));
    }
  });

  it('top-k keeps the k most likely tokens and renormalises over them before top-p', () => {
    const logits = Float32Array.from([0, 3, 1, 3, 2, -1]); // order by weight: 1, 3 (tie → index), 4, 2, 0, 5
    const w = Array.from(logits, (x) => Math.exp(x - 3));
    const k3 = w[1] + w[3] + w[4];
    // u sweeps the top-3 mass: each of tokens 1, 3, 4 is drawn in its share, nothing else.
    const drawn = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const s = sampleFromLogits(logits, 1, 1, (i + 0.5) / 200, 3);
      drawn.add(s.token);
      expect(s.logProb).toBeCloseTo(Math.log(w[s.token] / k3), 12);
    }
    expect([...drawn].sort()).toEqual([1, 3, 4]);
    // top-p 0.7 inside the top 3: w1 + w3 = 0.79 of k3 ≥ 0.7, so token 4 drops out.
    expect((w[1] + w[3]) / k3).toBeGreaterThan(0.7);
    expect(w[1] / k3).toBeLessThan(0.7);
    const both = new Set<number>();
    for (let i = 0; i < 100; i++) both.add(sampleFromLogits(logits, 1, 0.7, (i + 0.5) / 100, 3).token);
    expect([...both].sort()).toEqual([1, 3]);
    // k = 1 is greedy with log-probability 0; k ≥ V changes nothing.
    expect(sampleFromLogits(logits, 1, 1, 0.99, 1)).toMatchObject({ token: 1, logProb: 0 });
    expect(sampleFromLogits(logits, 1, 0.9, 0.3, 6)).toEqual(sampleFromLogits(logits, 1, 0.9, 0.3));
  });
});

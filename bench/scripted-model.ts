/**
 * A policy model without weights whose next-token logits follow a script: the k-th token a row
 * generates is `script[k]` (by position, whatever was sampled before), its logit `margin` above
 * a fixed noise vector (or above −1e9 everywhere else without noise, so any sampler picks it).
 * What it is for: measuring and testing what serving does around the forward pass — sampling over
 * a real vocabulary, detokenizing long answers, streaming — at any answer length, without the
 * minutes a real model of that vocabulary takes per answer on a CPU. Decoding only; training
 * calls throw.
 */
import type { DecodeCache, ParamSpec, PolicyModel } from '../src-main/engine/model/policy-model';
import { Rng } from '../src-main/engine/util/rng';

interface ScriptCache extends DecodeCache {
  /** Prompt length of each row (its generated tokens count from there). */
  promptLengths: number[];
}

export interface ScriptedModelOptions {
  vocabSize: number;
  context: number;
  script: readonly number[];
  /** Standard-normal noise under every logit (seeded), as a real model's tail; none: −1e9. */
  noiseSeed?: number;
  /** The scripted token's logit (default 15: about 0.9 of the probability over 151 936 noise logits). */
  margin?: number;
}

export class ScriptedModel implements PolicyModel<ScriptCache> {
  readonly family = 'hf' as const;
  readonly version = 0;
  readonly variables = [];
  readonly specs: ParamSpec[] = [];
  readonly numParams = 0;
  readonly vocabSize: number;
  readonly context: number;
  private readonly script: readonly number[];
  private readonly base: Float32Array;
  private readonly margin: number;

  constructor(opts: ScriptedModelOptions) {
    this.vocabSize = opts.vocabSize;
    this.context = opts.context;
    this.script = opts.script;
    this.margin = opts.margin ?? 15;
    this.base = new Float32Array(opts.vocabSize);
    if (opts.noiseSeed === undefined) this.base.fill(-1e9);
    else {
      const rng = new Rng(opts.noiseSeed, 'scripted-model-noise');
      for (let i = 0; i < this.base.length; i += 2) {
        // Box–Muller: two standard normals from two uniforms.
        const r = Math.sqrt(-2 * Math.log(1 - rng.next()));
        const t = 2 * Math.PI * rng.next();
        this.base[i] = r * Math.cos(t);
        if (i + 1 < this.base.length) this.base[i + 1] = r * Math.sin(t);
      }
    }
  }

  private logitsFor(generatedSoFar: number[]): Float32Array {
    const V = this.vocabSize;
    const out = new Float32Array(generatedSoFar.length * V);
    generatedSoFar.forEach((k, r) => {
      out.set(this.base, r * V);
      const token = this.script[Math.min(k, this.script.length - 1)];
      out[r * V + token] = this.margin;
    });
    return out;
  }

  prefill(rows: number[][], leftPad: number[], capacity: number): { cache: ScriptCache; logits: Float32Array } {
    const T = rows[0]?.length ?? 0;
    return { cache: { version: 0, length: capacity, leftPad: [...leftPad], promptLengths: leftPad.map((p) => T - p) }, logits: this.logitsFor(rows.map(() => 0)) };
  }

  decodeStep(tokens: Int32Array, positions: Int32Array, cache: ScriptCache): { cache: ScriptCache; logits: Float32Array } {
    // Position p feeds the token at p; the next one is generated token number p − prompt + 1.
    return { cache, logits: this.logitsFor(Array.from(positions, (p, r) => p - cache.promptLengths[r] + 1)) };
  }

  selectCacheRows(cache: ScriptCache, rows: number[]): ScriptCache {
    return { ...cache, leftPad: rows.map((r) => cache.leftPad[r]), promptLengths: rows.map((r) => cache.promptLengths[r]) };
  }

  joinCaches(caches: ScriptCache[], room: number): ScriptCache {
    return { version: 0, length: room, leftPad: caches.flatMap((c) => c.leftPad), promptLengths: caches.flatMap((c) => c.promptLengths) };
  }

  disposeCache(): void {}

  lastLogits(): Float32Array {
    throw new Error('ScriptedModel decodes through its cache only');
  }

  nextTokenStatsTimeMajor(): never {
    throw new Error('ScriptedModel has no weights to train');
  }

  getWeights(): Float32Array {
    return new Float32Array(0);
  }

  setWeights(): void {
    throw new Error('ScriptedModel has no weights to set');
  }

  dispose(): void {}
}

/**
 * Joining decode caches row-wise, for continuous batching in `marsrl serve-model` (issue #16):
 * requests that arrive while a batch is decoding are prefilled on their own and joined into the
 * running cache at the next step, instead of waiting for the whole batch to finish (the batching
 * vLLM and SGLang do, at the granularity of whole rows rather than pages).
 *
 * Every cache keeps its rows left-padded on one shared time axis, so a join right-aligns the rows
 * of all parts on a new axis of the smallest length that holds the longest one: each part first
 * drops the padding columns all its rows share (rows that finished and were compacted away leave
 * those behind, and without the trim a batch that keeps admitting rows would grow without end),
 * then is shifted right by what its longest row lacks. Positions count from the end of a row's
 * padding (policy-model.ts), so shifting a row on the time axis changes none of its outputs; the
 * columns a shift opens are masked like any padding.
 */
import * as tf from '@tensorflow/tfjs-core';
import { minNumber } from '../util/arrays';

export interface JoinablePart {
  readonly length: number;
  readonly leftPad: readonly number[];
}

export interface JoinLayout {
  /** Length of the joined time axis. */
  length: number;
  /** Every row's padding on it, parts in order. */
  leftPad: number[];
  /** Per part: leading columns dropped (the padding its rows share). */
  trims: number[];
  /** Per part: columns its kept ones move right by. */
  shifts: number[];
  /** Per part: columns kept (length − trim). */
  kept: number[];
}

export function joinLayout(parts: readonly JoinablePart[]): JoinLayout {
  const trims = parts.map((p) => (p.leftPad.length === 0 ? p.length : minNumber(p.leftPad)));
  const kept = parts.map((p, i) => p.length - trims[i]);
  const length = Math.max(0, ...kept);
  const shifts = kept.map((k) => length - k);
  const leftPad = parts.flatMap((p, i) => p.leftPad.map((pad) => pad - trims[i] + shifts[i]));
  return { length, leftPad, trims, shifts, kept };
}

/**
 * Joins JavaScript caches laid out row-major as [rows, heads, capacity, width] (each row's heads,
 * each head's positions, each position's `width` values) into one of `capacity` positions.
 */
export function joinJsLayers(
  parts: ReadonlyArray<{ data: Float32Array; rows: number; capacity: number }>,
  layout: JoinLayout,
  heads: number,
  width: number,
  capacity: number,
): Float32Array {
  if (capacity < layout.length) throw new Error(`joinJsLayers: capacity ${capacity} is below the joined length ${layout.length}`);
  const totalRows = parts.reduce((a, p) => a + p.rows, 0);
  const out = new Float32Array(totalRows * heads * capacity * width);
  let outRow = 0;
  parts.forEach((p, i) => {
    const count = layout.kept[i] * width;
    for (let b = 0; b < p.rows; b++, outRow++) {
      for (let h = 0; h < heads; h++) {
        const from = ((b * heads + h) * p.capacity + layout.trims[i]) * width;
        const to = ((outRow * heads + h) * capacity + layout.shifts[i]) * width;
        out.set(p.data.subarray(from, from + count), to);
      }
    }
  });
  return out;
}

/** Joins one layer's cache tensors of every part along `batchAxis`, re-laid on `timeAxis` (zeros where shifted). */
export function joinTensorLayers<T extends tf.Tensor>(tensors: readonly T[], layout: JoinLayout, batchAxis: number, timeAxis: number): T {
  return tf.tidy(() => {
    const laid = tensors.map((t, i) => {
      const begin = t.shape.map(() => 0);
      begin[timeAxis] = layout.trims[i];
      const size = t.shape.map(() => -1);
      size[timeAxis] = layout.kept[i];
      const kept = layout.trims[i] > 0 ? tf.slice(t, begin, size) : t;
      if (layout.shifts[i] === 0) return kept;
      const padding = t.shape.map(() => [0, 0] as [number, number]);
      padding[timeAxis] = [layout.shifts[i], 0];
      return tf.pad(kept, padding);
    });
    return (laid.length === 1 ? tf.clone(laid[0]) : tf.concat(laid, batchAxis)) as T;
  });
}

/** The cache fields both model families share (gpt/model.ts KVCache, hf/model.ts HfCache). */
export interface JoinableCache extends JoinablePart {
  mode: 'js' | 'concat';
  version: number;
  capacity: number;
  leftPad: number[];
  /** 'concat': per layer, key and value tensors. */
  layers: Array<{ k: tf.Tensor; v: tf.Tensor }>;
  /** 'js': per layer, keys and values [rows, heads, capacity, width]. */
  js: Array<{ k: Float32Array; v: Float32Array }>;
}

/**
 * PolicyModel.joinCaches for either family: the caches' rows, in order, right-aligned in one
 * cache with room for `room` positions past the joined length (what its rows may still
 * generate); the inputs are consumed. `shape` says where the
 * family keeps heads, widths and the batch and time axes of its tensors.
 */
export function joinModelCaches<C extends JoinableCache>(
  caches: C[],
  room: number,
  shape: { heads: number; width: number; batchAxis: number; timeAxisK: number; timeAxisV: number },
  dispose: (cache: C) => void,
): C {
  const first = caches[0];
  for (const c of caches) {
    if (c.mode !== first.mode || c.version !== first.version) throw new Error('joinCaches: the caches differ in mode or weights version');
  }
  const layout = joinLayout(caches);
  if (first.mode === 'concat') {
    const layers = first.layers.map((_, l) => ({
      k: tf.keep(joinTensorLayers(caches.map((c) => c.layers[l].k), layout, shape.batchAxis, shape.timeAxisK)),
      v: tf.keep(joinTensorLayers(caches.map((c) => c.layers[l].v), layout, shape.batchAxis, shape.timeAxisV)),
    }));
    caches.forEach(dispose);
    return { ...first, layers, js: [], length: layout.length, leftPad: layout.leftPad, capacity: layout.length };
  }
  const cap = layout.length + room;
  const parts = (l: number, key: 'k' | 'v') => caches.map((c) => ({ data: c.js[l][key], rows: c.leftPad.length, capacity: c.capacity }));
  const js = first.js.map((_, l) => ({ k: joinJsLayers(parts(l, 'k'), layout, shape.heads, shape.width, cap), v: joinJsLayers(parts(l, 'v'), layout, shape.heads, shape.width, cap) }));
  return { ...first, layers: [], js, length: layout.length, leftPad: layout.leftPad, capacity: cap };
}

/** Release a cache's tensors ('concat') and drop its arrays ('js'); the cache is empty after. */
export function disposeModelCache(cache: JoinableCache): void {
  cache.layers.forEach((p) => tf.dispose([p.k, p.v]));
  cache.layers = [];
  cache.js = [];
}

/**
 * Keep only the given rows (indices into the current batch) of a cache, in that order: what a
 * continuous batcher does when rows finish. The old cache is consumed. `shape` says where the
 * family keeps the batch axis of its tensors and how many values one row holds per layer ('js').
 */
export function selectModelCacheRows<C extends JoinableCache>(cache: C, rows: number[], shape: { batchAxis: number; rowValues: number }): C {
  const leftPad = rows.map((r) => cache.leftPad[r]);
  if (cache.mode === 'concat') {
    const layers = tf.tidy(() => {
      const idx = tf.tensor1d(rows, 'int32');
      return cache.layers.map((p) => ({ k: tf.keep(tf.gather(p.k, idx, shape.batchAxis)), v: tf.keep(tf.gather(p.v, idx, shape.batchAxis)) }));
    });
    disposeModelCache(cache);
    return { ...cache, layers, leftPad };
  }
  const block = shape.rowValues;
  const pick = (a: Float32Array) => {
    const out = new Float32Array(rows.length * block);
    rows.forEach((r, i) => out.set(a.subarray(r * block, (r + 1) * block), i * block));
    return out;
  };
  return { ...cache, leftPad, js: cache.js.map(({ k, v }) => ({ k: pick(k), v: pick(v) })) };
}

import { describe, expect, it } from 'vitest';
import { lttb, minMax, type Point } from '../../src-main/engine/metrics/downsample';
import { Rng } from '../../src-main/engine/util/rng';

function series(n: number, seed = 1): Point[] {
  const rng = new Rng(seed, 'series');
  return Array.from({ length: n }, (_, i) => [i, Math.sin(i / 50) + rng.normal() * 0.1] as Point);
}

/** Plain-loop LTTB straight from Steinarsson's thesis pseudo-code, to cross-check the fast one. */
function referenceLttb(data: readonly Point[], threshold: number): Point[] {
  const sampled: Point[] = [data[0]];
  const every = (data.length - 2) / (threshold - 2);
  let a = 0;
  for (let i = 0; i < threshold - 2; i++) {
    let avgX = 0;
    let avgY = 0;
    let avgStart = Math.floor((i + 1) * every) + 1;
    let avgEnd = Math.floor((i + 2) * every) + 1;
    avgEnd = avgEnd < data.length ? avgEnd : data.length;
    const avgLength = avgEnd - avgStart;
    for (; avgStart < avgEnd; avgStart++) {
      avgX += data[avgStart][0];
      avgY += data[avgStart][1];
    }
    avgX /= avgLength;
    avgY /= avgLength;
    let rangeOffs = Math.floor(i * every) + 1;
    const rangeTo = Math.floor((i + 1) * every) + 1;
    let maxArea = -1;
    let next = rangeOffs;
    for (; rangeOffs < rangeTo; rangeOffs++) {
      const area = Math.abs((data[a][0] - avgX) * (data[rangeOffs][1] - data[a][1]) - (data[a][0] - data[rangeOffs][0]) * (avgY - data[a][1])) * 0.5;
      if (area > maxArea) {
        maxArea = area;
        next = rangeOffs;
      }
    }
    sampled.push(data[next]);
    a = next;
  }
  sampled.push(data[data.length - 1]);
  return sampled;
}

describe('downsampling', () => {
  it('LTTB matches the plain reference loop and keeps the ends', () => {
    for (const [n, k] of [[10_000, 500], [1234, 100], [101, 7]] as const) {
      const data = series(n, n);
      const fast = lttb(data, k);
      expect(fast).toEqual(referenceLttb(data, k));
      expect(fast.length).toBe(k);
      expect(fast[0]).toEqual(data[0]);
      expect(fast[k - 1]).toEqual(data[n - 1]);
    }
  });

  it('returns short series unchanged', () => {
    const data = series(50);
    expect(lttb(data, 100)).toEqual(data);
    expect(minMax(data, 100)).toEqual(data);
  });

  it('min/max keeps every spike and every dip exactly', () => {
    const data = series(10_000);
    data[3333][1] = 50;
    data[7777][1] = -40;
    const out = minMax(data, 400);
    expect(out.length).toBeLessThanOrEqual(400);
    expect(out).toContainEqual([3333, 50]);
    expect(out).toContainEqual([7777, -40]);
    for (let i = 1; i < out.length; i++) expect(out[i][0]).toBeGreaterThan(out[i - 1][0]);
    // Per bucket, the kept extremes equal a plain scan of that bucket.
    const buckets = Math.floor((400 - 2) / 2);
    const interior = data.length - 2;
    let maxOfMaxima = -Infinity;
    for (let b = 0; b < buckets; b++) {
      const start = 1 + Math.floor((b * interior) / buckets);
      const end = 1 + Math.floor(((b + 1) * interior) / buckets);
      let hi = -Infinity;
      for (let j = start; j < end; j++) hi = Math.max(hi, data[j][1]);
      maxOfMaxima = Math.max(maxOfMaxima, hi);
      expect(out.some(([x, y]) => x >= start && x < end && y === hi)).toBe(true);
    }
    expect(maxOfMaxima).toBe(50);
  });

  it('LTTB also keeps an isolated spike', () => {
    const data = series(10_000, 3);
    data[5000][1] = 30;
    expect(lttb(data, 300)).toContainEqual([5000, 30]);
  });
});

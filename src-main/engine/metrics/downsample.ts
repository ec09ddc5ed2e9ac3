/**
 * Downsampling long metric series on the server, so a 10k-step run draws as fast as a short
 * one, without hiding the spikes a researcher is looking for (Dr. MAS's gradient-norm spikes).
 *
 * - LTTB (Largest-Triangle-Three-Buckets, Steinarsson 2013) keeps the visual shape and picks, in
 *   each bucket, the point forming the largest triangle with its neighbours — which favours
 *   extremes.
 * - min/max keeps, per bucket, both the lowest and the highest point in x order: every spike
 *   survives exactly, at twice the points per bucket.
 * Both keep the first and last point. Input must be sorted by x.
 */

export type Point = [number, number];

export function lttb(points: readonly Point[], threshold: number): Point[] {
  const n = points.length;
  if (threshold >= n || threshold <= 2) return threshold <= 2 && n > 2 ? [points[0], points[n - 1]] : points.slice();
  const out: Point[] = [points[0]];
  // Bucket i covers indices [start(i), start(i+1)) of the interior points 1..n-2.
  const bucketSize = (n - 2) / (threshold - 2);
  let anchor = 0;
  for (let bucket = 0; bucket < threshold - 2; bucket++) {
    const start = Math.floor(bucket * bucketSize) + 1;
    const end = Math.min(Math.floor((bucket + 1) * bucketSize) + 1, n - 1);
    // The next bucket's average is the third corner of the triangle.
    const nextStart = end;
    const nextEnd = Math.min(Math.floor((bucket + 2) * bucketSize) + 1, n);
    let avgX = 0;
    let avgY = 0;
    const nextCount = Math.max(nextEnd - nextStart, 1);
    for (let j = nextStart; j < nextStart + nextCount && j < n; j++) {
      avgX += points[j][0];
      avgY += points[j][1];
    }
    avgX /= nextCount;
    avgY /= nextCount;
    const [ax, ay] = points[anchor];
    let best = start;
    let bestArea = -1;
    for (let j = start; j < end; j++) {
      const area = Math.abs((ax - avgX) * (points[j][1] - ay) - (ax - points[j][0]) * (avgY - ay));
      if (area > bestArea) {
        bestArea = area;
        best = j;
      }
    }
    out.push(points[best]);
    anchor = best;
  }
  out.push(points[n - 1]);
  return out;
}

export function minMax(points: readonly Point[], maxPoints: number): Point[] {
  const n = points.length;
  if (n <= maxPoints || maxPoints < 4) return points.slice();
  const interior = n - 2;
  const buckets = Math.floor((maxPoints - 2) / 2);
  const out: Point[] = [points[0]];
  for (let b = 0; b < buckets; b++) {
    const start = 1 + Math.floor((b * interior) / buckets);
    const end = 1 + Math.floor(((b + 1) * interior) / buckets);
    if (end <= start) continue;
    let lo = start;
    let hi = start;
    for (let j = start + 1; j < end; j++) {
      if (points[j][1] < points[lo][1]) lo = j;
      if (points[j][1] > points[hi][1]) hi = j;
    }
    if (lo === hi) out.push(points[lo]);
    else if (lo < hi) out.push(points[lo], points[hi]);
    else out.push(points[hi], points[lo]);
  }
  out.push(points[n - 1]);
  return out;
}

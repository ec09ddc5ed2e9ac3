/**
 * TensorBoard's smoothing: an exponential moving average with the zero-initialisation bias
 * divided out, so the first points are not dragged towards 0 (tensorboard/.../vz_line_chart2).
 * `weight` is the slider value in [0, 1): 0 returns the points unchanged. Non-finite values pass
 * through without entering the average, as TensorBoard does.
 *
 * The dashboard smooths the series it received, which the server may have downsampled; over a
 * min/max-downsampled series the average sits between each bucket's extremes, close to the
 * smoothing of the full series at the scale a chart can show.
 */
export function debiasedEma(points: readonly (readonly [number, number])[], weight: number): [number, number][] {
  if (!(weight > 0)) return points.map(([x, y]) => [x, y]);
  const w = Math.min(weight, 0.999);
  const out: [number, number][] = new Array(points.length);
  let last = 0;
  let accumulated = 0;
  // A constant series would come out with rounding noise; TensorBoard leaves it alone too.
  const first = points.find(([, y]) => Number.isFinite(y))?.[1];
  const constant = first !== undefined && points.every(([, y]) => !Number.isFinite(y) || y === first);
  for (let i = 0; i < points.length; i++) {
    const [x, y] = points[i];
    if (!Number.isFinite(y) || constant) {
      out[i] = [x, y];
      continue;
    }
    last = last * w + (1 - w) * y;
    accumulated++;
    out[i] = [x, last / (1 - Math.pow(w, accumulated))];
  }
  return out;
}

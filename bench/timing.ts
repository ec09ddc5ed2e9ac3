/** How the benches summarise the calls they timed: the model benches (model, hf) as a Timing, the store and ui benches by their median. */

/** The median of `values` (the upper one of an even count): what the store and ui benches report of their timings. */
export function median(values: number[]): number {
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

export interface Timing {
  /** Best (least disturbed) and median milliseconds per call, over every call timed. */
  bestMs: number;
  medianMs: number;
  calls: number;
  /** Tokens per second at the best time. */
  tokensPerS: number;
}

export function summarize(times: number[], tokensPerCall: number): Timing {
  const s = times.slice().sort((a, b) => a - b);
  return { bestMs: s[0], medianMs: s[Math.floor(s.length / 2)], calls: s.length, tokensPerS: (tokensPerCall / s[0]) * 1000 };
}

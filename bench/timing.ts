/** How the model benches (model, hf) summarise the calls they timed. */

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

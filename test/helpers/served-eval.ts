/**
 * A system run against served endpoints compared with the same evaluation in process: what the
 * served run stored must be what the in-process evaluation computes (greedy decoding is exact).
 */
import { expect } from 'vitest';
import type { Store, TurnView } from '../../src-main/engine/store';
import type { EvalChain, EvaluationResult } from '../../src-main/engine/training/evaluate';

/** Each of `keys` the in-process evaluation reports has the same value in the served run's metrics. */
export function expectSameMetrics(served: Record<string, number>, reference: EvaluationResult, keys: readonly string[]): void {
  for (const key of keys) {
    if (reference.metrics[key] === undefined) continue;
    expect({ key, value: served[key] }).toEqual({ key, value: reference.metrics[key] });
  }
}

/** The served run's greedy evaluation episodes: each one's stored turns, and the in-process chain of its problem. */
export function greedyEpisodes(store: Store, runId: number, reference: EvaluationResult): { turns: TurnView[]; chain: EvalChain }[] {
  const episodes = store.trajectories.pageEpisodes({ runId, split: 'test', limit: 1000 }).items.filter((e) => (e.meta as { eval?: string }).eval === 'greedy');
  return episodes.map((e) => ({ turns: store.trajectories.episodeTurns(e.id), chain: reference.greedyChains[(e.meta as { problem: number }).problem] }));
}

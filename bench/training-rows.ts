/**
 * The rows one training episode writes, for the benches that fill a store (store, ui): a Solver
 * group of 8, two Verifier turns on the last solution and two Corrector turns, each with its
 * segment, reward and advantage, as the trainer writes them through the BatchWriter.
 */
import type { BatchWriter } from '../src-main/engine/store';
import type { Rng } from '../src-main/engine/util/rng';

export const AGENTS = ['solver', 'verifier1', 'corrector1'] as const;

/** A turn's text from the problem's digits; the Verifier's verdict is drawn here, from `rng`. */
export type TurnText = (agent: (typeof AGENTS)[number], digits: string, rng: Rng) => string;

/** Writes one episode of at most `limit` turns at `step`; returns how many turns it wrote. */
export function writeEpisode(writer: BatchWriter, runId: number, step: number, rng: Rng, now: number, limit: number, textOf: TurnText): number {
  const episodeId = writer.newId('episodes');
  writer.episode({ id: episodeId, runId, step, problemId: null, split: 'train', finalAnswer: null, correct: null, rounds: 1, meta: null });
  let parent: number | null = null;
  let i = 0;
  for (; i < 12 && i < limit; i++) {
    const agent = AGENTS[i < 8 ? 0 : i < 10 ? 1 : 2];
    const turnId = writer.newId('turns');
    const digits = Array.from({ length: 8 }, () => rng.int(0, 9)).join('');
    const text = textOf(agent, digits, rng);
    writer.turn({
      id: turnId, runId, episodeId, step, agent, policyId: agent.replace(/\d+$/, ''), round: agent === 'solver' ? 0 : 1,
      groupId: i < 8 ? 0 : 1, parentTurnId: agent === 'solver' ? null : parent, sampleIndex: i, prompt: `sort ${digits}`,
      text, tokenCount: text.length, parsed: digits, correct: rng.next() < 0.5, formatValid: true,
      policyVersionMin: step, policyVersionMax: step, createdAt: now,
    });
    if (agent === 'solver') parent = turnId;
    writer.segment({ id: writer.newId('segments'), turnId, runId, segIndex: 0, tokenStart: 0, tokenEnd: text.length, text, finished: true, policyVersion: step, startedAt: now, endedAt: now, worker: 'rollout-0' });
    const reward = rng.next() < 0.5 ? 1 : 0;
    writer.reward({ turnId, runId, value: reward, components: { correctness: reward }, scheme: 'decoupled' });
    writer.advantage({ turnId, runId, value: reward - 0.5, mode: 'agentwise', groupKey: `${episodeId}:${agent}`, mu: 0.5, sigma: 0.5 });
  }
  return i;
}

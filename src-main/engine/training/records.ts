/**
 * The rows a run writes for its trajectories, through the batched writer: problems (once per run),
 * a step's episodes with their turns, segments, rewards and advantages, and the greedy evaluation
 * chains as test-split episodes.
 */
import { agentName } from '#shared/agents';
import type { RunConfig } from '../config/schema';
import type { BatchWriter, Store } from '../store';
import type { Problem } from '../tasks/types';
import type { EvalChain } from './evaluate';
import { responseLength, type RolloutEpisode } from './rollout';
import type { ScoredEpisode } from './scoring';

/** Problem ids in the store, inserted the first time a problem is used in this run. */
export class ProblemIds {
  private readonly ids = new Map<string, number>();
  constructor(
    private readonly store: Store,
    private readonly runId: number,
  ) {
    const rows = store.db.prepare('SELECT id, split, problem_key FROM problems WHERE run_id = ?').all(runId) as { id: number; split: string; problem_key: string }[];
    for (const r of rows) this.ids.set(`${r.split}:${r.problem_key}`, r.id);
  }

  idOf(writer: BatchWriter, problem: Problem): number {
    const key = `${problem.split}:${problem.key}`;
    let id = this.ids.get(key);
    if (id === undefined) {
      id = writer.newId('problems');
      writer.problem({ id, runId: this.runId, split: problem.split, family: problem.family, problemKey: problem.key, question: problem.question, answer: problem.answer, meta: problem.meta });
      this.ids.set(key, id);
    }
    return id;
  }
}


export function logEpisodes(
  writer: BatchWriter,
  problemIds: ProblemIds,
  runId: number,
  step: number,
  episodes: readonly RolloutEpisode[],
  scored: readonly ScoredEpisode[],
  worker: string,
  config: RunConfig,
): number[][] {
  const now = Date.now();
  return episodes.map((episode, e) => {
    const problemId = problemIds.idOf(writer, episode.problem);
    const episodeId = writer.newId('episodes');
    writer.episode({ id: episodeId, runId, step, problemId, split: 'train', finalAnswer: episode.finalAnswer, correct: episode.correct, rounds: episode.rounds, meta: { chains: episode.chains.length } });
    const ids: number[] = [];
    episode.turns.forEach((turn, i) => {
      const id = writer.newId('turns');
      ids.push(id);
      writer.turn({
        id, runId, episodeId, step, agent: turn.agent, policyId: turn.policyId, round: turn.round, groupId: turn.groupId,
        parentTurnId: turn.parent === null ? null : ids[turn.parent], sampleIndex: turn.sampleIndex, prompt: turn.promptText,
        text: turn.text, tokenCount: responseLength(turn), parsed: turn.role === 'verifier' ? turn.verdict : turn.answer,
        correct: turn.correct, formatValid: turn.formatValid, policyVersionMin: turn.policyVersionMin, policyVersionMax: turn.policyVersionMax, createdAt: now,
      });
      for (const seg of turn.segments) {
        writer.segment({ id: writer.newId('segments'), turnId: id, runId, segIndex: seg.index, tokenStart: seg.tokenStart, tokenEnd: seg.tokenEnd, text: seg.text, finished: seg.finished, policyVersion: seg.policyVersion, startedAt: seg.startedAt, endedAt: seg.endedAt, worker });
      }
      writer.reward({ turnId: id, runId, value: scored[e].rewards[i].value, components: scored[e].rewards[i].components, scheme: config.reward.scheme });
      const adv = scored[e].advantages[i];
      writer.advantage({ turnId: id, runId, value: adv.value, mode: config.advantage.mode, groupKey: adv.groupKey, mu: adv.mu, sigma: adv.sigma, weight: adv.weight });
    });
    return ids;
  });
}


/** The greedy evaluation chains of a step, stored as test-split episodes for the browser. */
export function logEvalEpisodes(writer: BatchWriter, problemIds: ProblemIds, runId: number, step: number, chains: readonly EvalChain[]): void {
  const now = Date.now();
  for (const chain of chains) {
    const problemId = problemIds.idOf(writer, chain.problem);
    const episodeId = writer.newId('episodes');
    writer.episode({ id: episodeId, runId, step, problemId, split: 'test', finalAnswer: chain.finalAnswer, correct: chain.finalCorrect, rounds: chain.steps.filter((s) => s.role === 'verifier').length, meta: { eval: 'greedy' } });
    let parent: number | null = null;
    for (const s of chain.steps) {
      const id = writer.newId('turns');
      writer.turn({
        id, runId, episodeId, step, agent: agentName(s.role, s.round), policyId: s.role, round: s.round, groupId: 0,
        parentTurnId: parent, sampleIndex: 0, prompt: s.prompt, text: s.text, tokenCount: s.tokens,
        parsed: s.role === 'verifier' ? (s.verdict ?? null) : (s.answer ?? null), correct: s.correct, formatValid: s.formatValid,
        policyVersionMin: 0, policyVersionMax: 0, createdAt: now,
      });
      parent = id;
    }
  }
}


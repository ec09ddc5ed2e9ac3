/**
 * What earlier attempts of a reasoning-system run finished, for a resume: each chain's finished
 * turns (replayed, never called again), and the unfinished ones (a killed worker's) marked
 * superseded so their calls are made again.
 */
import type { RunConfig } from '../config/schema';
import type { Store, TurnView } from '../store';
import { answerCheckerVersion } from '../tasks/registry';
import type { EvalPart } from '../training/evaluate';

/** The policy id of an oracle verdict's turn (not a call: the truth of the solution judged). */
export const ORACLE = 'oracle';
export const ORACLE_PROMPT = '(oracle)';

/** An episode of earlier attempts: a part's chains of one problem. */
export interface StoredEpisode {
  episodeId: number;
  /** Finished turns of each chain (by sample), in the order they were made. */
  turns: Map<number, TurnView[]>;
  done: boolean;
}

/** Calls made and stored (earlier attempts' finished calls, this attempt's), and calls that failed. */
export interface CallCounters {
  calls: number;
  stored: number;
  failedCalls: number;
}

/**
 * The finished chains of earlier attempts, by `part:problem`, counted into `counters.stored`, and
 * the new attempt begun (its number returned).
 */
export function resumeStoredChains(store: Store, runId: number, config: RunConfig, counters: CallCounters): { stored: Map<string, StoredEpisode>; attempt: number } {
  const stored = new Map<string, StoredEpisode>();
  let unfinished = 0;
  const pending: TurnView[] = [];
  for (let after = 0; ; ) {
    const page = store.trajectories.pageEpisodes({ runId, split: 'test', afterId: after, limit: 1000 });
    for (const e of page.items) {
      const meta = e.meta as { eval?: EvalPart; problem?: number } | null;
      if (!meta?.eval || meta.problem === undefined) continue;
      const turns = store.trajectories.episodeTurns(e.id).filter((t) => t.supersededBy === null);
      const bySample = new Map<number, TurnView[]>();
      for (const t of turns) {
        if (t.correct === null) {
          pending.push(t);
          continue;
        }
        bySample.set(t.sampleIndex, [...(bySample.get(t.sampleIndex) ?? []), t]);
        if (t.policyId !== ORACLE) counters.stored++;
      }
      stored.set(`${meta.eval}:${meta.problem}`, { episodeId: e.id, turns: bySample, done: e.correct !== null });
    }
    if (page.nextCursor === null) break;
    after = page.nextCursor;
  }
  const { attempt } = store.runs.beginAttempt(runId, counters.stored, Date.now(), answerCheckerVersion(config.task.family));
  for (const t of pending) {
    store.trajectories.supersedeTurn(t.id, attempt);
    unfinished++;
  }
  store.events.log(runId, 'info', 'resumed', `resumed as attempt ${attempt}: ${counters.stored} finished calls are kept and not repeated; ${unfinished} unfinished turn${unfinished === 1 ? '' : 's'} are made again`, { attempt, finishedCalls: counters.stored, unfinished });
  return { stored, attempt };
}

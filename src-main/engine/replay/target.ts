/**
 * What a replay plays (issue 40): a stored episode's problem (and which of its chains), a problem
 * of the run's task, or a prompt typed by hand, with the run's config and task data; and what
 * the run stored for it (its turns, the time its rollout took).
 */
import type { ReplayRequest } from '#shared/contract';
import { parseRunConfig } from '../config/load';
import type { RunConfig } from '../config/schema';
import type { Store, TurnView } from '../store';
import type { EpisodeRow } from '../store/types';
import type { Problem } from '../tasks/types';
import type { EvalPart } from '../training/evaluate';
import { evaluationSet, loadTaskData, type TaskData } from '../training/task-data';
import { hashString } from '../util/rng';

/** A request the replay cannot run, naming its field. */
export class ReplayRequestError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ReplayTarget {
  config: RunConfig;
  data: TaskData;
  problem: Problem;
  problemId: number | null;
  /** A prompt typed by hand has no reference answer: its turns are not judged. */
  byHand: boolean;
  episode: EpisodeRow | null;
  /** The part of the evaluation the chain belongs to (a system run's episodes say; otherwise by decoding). */
  part: EvalPart;
  /** The problem's place in the evaluation set (a system run's call seeds use it). */
  index: number;
  sample: number;
  /** The stored chain's turns, in the order they were made (empty: nothing stored). */
  stored: TurnView[];
  /**
   * How long the run took for the stored episode's rollout, s: a system run writes each turn when
   * its call starts and its segments as they stream. An RL run's episodes are rows of a batched
   * rollout, written together after it, so no time of one episode is stored (null).
   */
  storedSeconds: number | null;
  evalSeed: number;
  /** The run warm-started policies in memory before step 0 (pretrain) and kept no checkpoint of them. */
  warmStarted: boolean;
}

export function replayTarget(store: Store, request: ReplayRequest): ReplayTarget {
  const run = store.runs.get(request.runId);
  if (!run) throw new ReplayRequestError('runId', `run ${request.runId} does not exist`);
  const given = [request.episodeId !== undefined, request.problemId !== undefined, request.prompt !== undefined].filter(Boolean).length;
  if (given !== 1) throw new ReplayRequestError('episodeId', 'give exactly one of episodeId (a stored episode), problemId (a problem of the run) or prompt (a question typed by hand)');
  const config = parseRunConfig(run.config, `run ${request.runId}`);
  const data = loadTaskData(config);
  const { problems, seed } = evaluationSet(config, data);
  const indexOf = (key: string) => {
    const i = problems.findIndex((p) => p.key === key);
    return i >= 0 ? i : hashString(key) & 0xffff;
  };
  const warmStarted = store.events.latestOfKind(request.runId, 'warm_start') !== null;
  const base = { config, data, evalSeed: seed, warmStarted, sample: 0, storedSeconds: null, stored: [] as TurnView[], episode: null, byHand: false };
  const partOf = (): EvalPart => (request.decoding === 'sampled' ? 'sampled' : 'greedy');
  if (request.prompt !== undefined) {
    if (request.prompt.trim() === '') throw new ReplayRequestError('prompt', 'the prompt is empty; type the question the Solver should answer');
    const problem: Problem = { key: `prompt:${hashString(request.prompt)}`, family: config.task.family, split: 'test', question: request.prompt, answer: '', meta: {} };
    return { ...base, problem, problemId: null, byHand: true, part: partOf(), index: indexOf(problem.key) };
  }
  if (request.problemId !== undefined) {
    const row = store.trajectories.getProblem(request.problemId);
    if (!row || row.runId !== request.runId) throw new ReplayRequestError('problemId', `problem ${request.problemId} is not a problem of run ${request.runId}`);
    const problem = problemOf(row, data);
    return { ...base, problem, problemId: row.id, part: partOf(), index: indexOf(problem.key) };
  }
  return episodeTarget(store, request, base, indexOf);
}

function episodeTarget(store: Store, request: ReplayRequest, base: Pick<ReplayTarget, 'config' | 'data' | 'evalSeed' | 'warmStarted'>, indexOf: (key: string) => number): ReplayTarget {
  const episode = store.trajectories.getEpisode(request.episodeId!);
  if (!episode || episode.runId !== request.runId) throw new ReplayRequestError('episodeId', `episode ${request.episodeId} is not an episode of run ${request.runId}`);
  const row = episode.problemId === null ? null : store.trajectories.getProblem(episode.problemId);
  if (!row) throw new ReplayRequestError('episodeId', `episode ${episode.id} has no stored problem to replay`);
  const problem = problemOf(row, base.data);
  const meta = episode.meta as { eval?: EvalPart; problem?: number } | null;
  const turns = store.trajectories.episodeTurns(episode.id).filter((t) => t.supersededBy === null);
  // One chain is replayed: the first of a sampled system episode's k. A training episode is a
  // grouped tree, not one chain: its texts are shown beside, never compared.
  const sample = 0;
  const stored = episode.split === 'test' ? turns.filter((t) => t.sampleIndex === sample) : [];
  const part: EvalPart = meta?.eval ?? (request.decoding === 'sampled' || episode.split === 'train' ? 'sampled' : 'greedy');
  return { ...base, problem, problemId: row.id, byHand: false, episode, part, index: meta?.problem ?? indexOf(problem.key), sample, stored, storedSeconds: base.config.system ? rolloutSeconds(store, turns) : null };
}

/** The stored problem as the task family knows it (the generated one when the key matches, so its meta is the family's own). */
function problemOf(row: NonNullable<ReturnType<Store['trajectories']['getProblem']>>, data: TaskData): Problem {
  const known = [...data.test, ...data.train].find((p) => p.key === row.problemKey);
  return known ?? { key: row.problemKey, family: row.family, split: row.split, question: row.question, answer: row.answer, meta: row.meta ?? {} };
}

/** From the episode's first turn's start to the last segment's end (or the last turn's start). */
function rolloutSeconds(store: Store, turns: readonly TurnView[]): number | null {
  if (turns.length === 0) return null;
  let start = Infinity;
  let end = -Infinity;
  for (const t of turns) {
    start = Math.min(start, t.createdAt);
    end = Math.max(end, t.createdAt);
    for (const s of store.trajectories.segments(t.id)) end = Math.max(end, s.endedAt);
  }
  return (end - start) / 1000;
}

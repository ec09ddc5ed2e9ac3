/**
 * One reader batch into the store (issue 39), as the Studio's own rows, so the dashboards, the
 * trajectory browser, compare and export read an imported run as they read a run made here (the
 * same rows engines/ingest.ts writes for an engine run):
 *
 * - a metric is a metric point, its wall time in seconds since the run started;
 * - an episode is an episode row, its problem a problem row (the same problem key is one problem
 *   across steps), each turn a turn row chained to the turn before it, with its reward and
 *   advantage where the source has them; what the source wrote beside a turn (finish reason,
 *   status code…) is kept in the episode's meta, as the turns table has no column for it;
 * - a checkpoint is a checkpoint row; a record the reader could not use is a warning event naming
 *   the file and the position.
 *
 * The rows and the reader's cursor past them are written in one transaction: a batch is stored
 * whole or not at all, so a re-import continues exactly after the last stored batch.
 */
import type { ImportFormatId, ImportIssue } from '#shared/contract';
import type { BatchWriter, Store } from '../store';
import type { ImportBatch, ImportEpisode, ImportMetric, ImportTurn } from './types';

export interface StoredCounts {
  metricPoints: number;
  turns: number;
  episodes: number;
  checkpoints: number;
}

/** A positive 31-bit id of a text (FNV-1a): a GRPO group's id as the store's integer group id. */
export function groupNumber(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 1) & 0x7fffffff;
}

export function issueText(issue: ImportIssue): string {
  const where = [issue.file || 'the source', issue.position].filter(Boolean).join(', ');
  return `${where}: ${issue.message}`;
}

export class ImportedRunWriter {
  private readonly problems: Map<string, number>;
  /** The run's start in seconds since the epoch (null until the source or its first wall time says). */
  private startSeconds: number | null;

  constructor(
    private readonly store: Store,
    private readonly runId: number,
    private readonly format: ImportFormatId,
  ) {
    const started = store.runs.get(runId)?.startedAt ?? null;
    this.startSeconds = started === null ? null : started / 1000;
    // A re-import knows the problems already stored, so the same problem is not stored twice.
    this.problems = store.engineJobs.problemIds(runId);
  }

  /** Writes the batch's records and its cursor in one transaction; returns what it stored. */
  write(batch: ImportBatch, now = Date.now()): StoredCounts {
    const counts: StoredCounts = { metricPoints: 0, turns: 0, episodes: 0, checkpoints: 0 };
    this.store.db.transaction(() => {
      this.learnStart(batch.metrics);
      const writer = this.store.writer({ maxPending: Number.MAX_SAFE_INTEGER, flushIntervalMs: 0 });
      for (const metric of batch.metrics) writer.metric({ runId: this.runId, step: metric.step, wallTime: this.relativeWall(metric), key: metric.key, value: metric.value });
      counts.metricPoints = batch.metrics.length;
      for (const episode of batch.episodes) counts.turns += this.episode(episode, writer, now);
      counts.episodes = batch.episodes.length;
      writer.close();
      for (const c of batch.checkpoints) this.store.events.addCheckpoint({ runId: this.runId, step: c.step, policyId: c.policyId, path: c.path, createdAt: now, metrics: null });
      counts.checkpoints = batch.checkpoints.length;
      for (const issue of batch.issues) this.store.events.log(this.runId, 'warning', 'import_issue', issueText(issue), { file: issue.file, position: issue.position });
      this.store.imports.saveCursor(this.runId, batch.cursor, batch.bytesDone, now);
    })();
    return counts;
  }

  /** A source that did not say when it started starts at its first wall time. */
  private learnStart(metrics: readonly ImportMetric[]): void {
    if (this.startSeconds !== null) return;
    let first = Infinity;
    for (const m of metrics) if (m.wallTime !== null && m.wallTime < first) first = m.wallTime;
    if (first === Infinity) return;
    this.startSeconds = first;
    this.store.imports.setStartIfUnknown(this.runId, Math.round(first * 1000));
  }

  /** Seconds since the run started; 0 where the source has no wall time (or wrote one before its start). */
  private relativeWall(metric: ImportMetric): number {
    if (metric.wallTime === null || this.startSeconds === null) return 0;
    return Math.max(0, metric.wallTime - this.startSeconds);
  }

  private problemOf(episode: ImportEpisode, writer: BatchWriter): number | null {
    const problem = episode.problem;
    if (problem === null) return null;
    const key = `${episode.split}/${problem.key}`;
    const known = this.problems.get(key);
    if (known !== undefined) return known;
    const id = writer.newId('problems');
    writer.problem({ id, runId: this.runId, split: episode.split, family: this.format, problemKey: problem.key, question: problem.question, answer: problem.answer, meta: problem.meta });
    this.problems.set(key, id);
    return id;
  }

  /** The episode, its problem and its turns; returns the number of turns. */
  private episode(episode: ImportEpisode, writer: BatchWriter, now: number): number {
    const id = writer.newId('episodes');
    const rounds = episode.turns.reduce((max, t) => Math.max(max, t.round + 1), 0);
    const turnMeta = episode.turns.map((t) => ({ agent: t.agent, finishReason: t.finishReason, ...t.meta }));
    const meta = { ...(episode.meta ?? {}), group: episode.group, importedFrom: this.format, turns: turnMeta };
    writer.episode({ id, runId: this.runId, step: episode.step, problemId: this.problemOf(episode, writer), split: episode.split, finalAnswer: episode.finalAnswer, correct: episode.correct, rounds, meta });
    // The answer the episode ends with is the last Solver's or Corrector's (MarsRL's chain): that turn carries the episode's verdict.
    const answering = episode.turns.findLastIndex((t) => t.role !== 'verifier');
    let parent: number | null = null;
    episode.turns.forEach((turn, index) => {
      parent = this.turn(turn, { episodeId: id, step: episode.step, group: episode.group, index, parent, answer: index === answering ? episode : null }, writer, now);
    });
    return episode.turns.length;
  }

  private turn(turn: ImportTurn, at: { episodeId: number; step: number; group: string | null; index: number; parent: number | null; answer: ImportEpisode | null }, writer: BatchWriter, now: number): number {
    const id = writer.newId('turns');
    const verdict = turn.verdict === null ? null : turn.verdict ? 'approve' : 'reject';
    writer.turn({
      id,
      runId: this.runId,
      episodeId: at.episodeId,
      step: at.step,
      agent: turn.agent,
      policyId: turn.role ?? turn.agent,
      round: turn.round,
      groupId: at.group !== null ? groupNumber(at.group) : 0,
      parentTurnId: at.parent,
      sampleIndex: at.index,
      prompt: turn.prompt,
      text: turn.text,
      // The source's count where it reported one; 0 where it did not (not guessed from the text).
      tokenCount: turn.tokens ?? 0,
      parsed: turn.role === 'verifier' ? verdict : (turn.answer ?? at.answer?.finalAnswer ?? null),
      correct: turn.correct ?? at.answer?.correct ?? null,
      formatValid: true,
      policyVersionMin: at.step,
      policyVersionMax: at.step,
      createdAt: now,
    });
    if (turn.reward !== null) writer.reward({ turnId: id, runId: this.runId, value: turn.reward, components: { reward: turn.reward }, scheme: `${this.format}:reward` });
    // The source's advantage as it wrote it; its group statistics are not known here (mu and sigma 0).
    if (turn.advantage !== null) writer.advantage({ turnId: id, runId: this.runId, value: turn.advantage, mode: `${this.format}:advantage`, groupKey: at.group ?? '', mu: 0, sigma: 0 });
    return id;
  }
}

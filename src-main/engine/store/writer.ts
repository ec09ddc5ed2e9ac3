/**
 * The batched writer: rows are queued in memory and written in one transaction per batch, when
 * enough are pending or a short timer fires, so the training loop never waits on SQLite for a
 * single row. Within a flush, rows are inserted parents-first (problems, episodes, turns, then
 * what hangs off turns) and foreign keys are checked at commit, so the order rows were queued
 * in does not matter within a batch. Across batches, a child must be queued after its parent (a
 * turn before its reward), which is the order rollouts produce them in anyway.
 */
import type { Database, Transaction } from 'better-sqlite3';
import { EventsRepo } from './events';
import type { IdAllocator, IdTable } from './ids';
import type { MetricsRepo } from './metrics';
import { TrajectoriesRepo, type TurnResult } from './trajectories';
import type {
  AdvantageRow,
  EpisodeRow,
  MetricPoint,
  ProblemRow,
  RewardRow,
  SegmentRow,
  TimelineRow,
  TurnRow,
} from './types';

export interface BatchWriterOptions {
  /** Flush as soon as this many rows are pending. */
  maxPending?: number;
  /** Flush pending rows at most this long after the first was queued (ms); 0 disables the timer. */
  flushIntervalMs?: number;
}

interface EpisodeOutcome {
  id: number;
  finalAnswer: string | null;
  correct: boolean | null;
  rounds: number;
}

export class BatchWriter {
  private problems: ProblemRow[] = [];
  private episodes: EpisodeRow[] = [];
  private turns: TurnRow[] = [];
  private segments: SegmentRow[] = [];
  private rewards: RewardRow[] = [];
  private advantages: AdvantageRow[] = [];
  private metrics: MetricPoint[] = [];
  private timeline: Omit<TimelineRow, 'id'>[] = [];
  private outcomes: EpisodeOutcome[] = [];
  private turnResults: TurnResult[] = [];
  private pending = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** An error from a timer-driven flush, rethrown on the next call so it is not lost. */
  private deferredError: unknown = null;
  private readonly maxPending: number;
  private readonly flushIntervalMs: number;
  private readonly writeBatch: Transaction<() => void>;
  rowsWritten = 0;

  constructor(
    private readonly db: Database,
    private readonly trajectories: TrajectoriesRepo,
    private readonly metricsRepo: MetricsRepo,
    private readonly events: EventsRepo,
    private readonly ids: IdAllocator,
    options: BatchWriterOptions = {},
  ) {
    this.maxPending = options.maxPending ?? 5000;
    this.flushIntervalMs = options.flushIntervalMs ?? 250;
    this.writeBatch = db.transaction(() => this.writeAll());
  }

  newId(table: IdTable): number {
    return this.ids.next(table);
  }

  problem(row: ProblemRow): void {
    this.queue(this.problems, row);
  }
  episode(row: EpisodeRow): void {
    this.queue(this.episodes, row);
  }
  turn(row: TurnRow): void {
    this.queue(this.turns, row);
  }
  segment(row: SegmentRow): void {
    this.queue(this.segments, row);
  }
  reward(row: RewardRow): void {
    this.queue(this.rewards, row);
  }
  advantage(row: AdvantageRow): void {
    this.queue(this.advantages, row);
  }
  metric(point: MetricPoint): void {
    if (!Number.isFinite(point.value)) {
      // SQLite stores NaN as NULL, which the NOT NULL column rejects and a chart cannot draw;
      // the non-finite value is reported as an event instead, where a user will look for it.
      this.events.log(point.runId, 'warning', 'non_finite_metric', `${point.key} was ${point.value} at step ${point.step}`, { key: point.key, value: String(point.value) }, point.step);
      return;
    }
    this.queue(this.metrics, point);
  }
  timelineSpan(row: Omit<TimelineRow, 'id'>): void {
    this.queue(this.timeline, row);
  }
  episodeOutcome(id: number, finalAnswer: string | null, correct: boolean | null, rounds: number): void {
    this.queue(this.outcomes, { id, finalAnswer, correct, rounds });
  }
  /** A queued turn's text and judgement, once known (applied after the turn is inserted). */
  turnResult(result: TurnResult): void {
    this.queue(this.turnResults, result);
  }

  get pendingRows(): number {
    return this.pending;
  }

  private queue<T>(list: T[], row: T): void {
    if (this.closed) throw new Error('BatchWriter is closed');
    this.rethrowDeferred();
    list.push(row);
    this.pending++;
    if (this.pending >= this.maxPending) {
      this.flush();
    } else if (this.timer === null && this.flushIntervalMs > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        try {
          this.flush();
        } catch (error) {
          this.deferredError = error;
        }
      }, this.flushIntervalMs);
      this.timer.unref();
    }
  }

  private rethrowDeferred(): void {
    if (this.deferredError !== null) {
      const error = this.deferredError;
      this.deferredError = null;
      throw error;
    }
  }

  /** Write everything pending in one transaction; returns the number of rows written. */
  flush(): number {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.rethrowDeferred();
    if (this.pending === 0) return 0;
    const count = this.pending;
    this.writeBatch.immediate();
    this.problems = [];
    this.episodes = [];
    this.turns = [];
    this.segments = [];
    this.rewards = [];
    this.advantages = [];
    this.metrics = [];
    this.timeline = [];
    this.outcomes = [];
    this.turnResults = [];
    this.pending = 0;
    this.rowsWritten += count;
    return count;
  }

  private writeAll(): void {
    this.db.pragma('defer_foreign_keys = ON');
    const t = this.trajectories;
    for (const row of this.problems) t.insertProblem.run(TrajectoriesRepo.problemParams(row));
    for (const row of this.episodes) t.insertEpisode.run(TrajectoriesRepo.episodeParams(row));
    for (const row of this.turns) t.insertTurn.run(TrajectoriesRepo.turnParams(row));
    for (const row of this.segments) t.insertSegment.run(TrajectoriesRepo.segmentParams(row));
    for (const row of this.rewards) t.insertReward.run(TrajectoriesRepo.rewardParams(row));
    for (const row of this.advantages) t.insertAdvantage.run(TrajectoriesRepo.advantageParams(row));
    for (const row of this.outcomes) t.updateEpisodeOutcome(row.id, row.finalAnswer, row.correct, row.rounds);
    for (const row of this.turnResults) t.updateTurnResult(row);
    for (const point of this.metrics) this.metricsRepo.insertPoint.run(this.metricsRepo.pointParams(point));
    for (const row of this.timeline) this.events.insertTimeline.run(row);
  }

  /** Flush and stop the timer; further rows are refused. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
  }
}

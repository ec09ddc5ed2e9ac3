/**
 * Live ingestion of an engine run into the store (issue 38): the follower's records become the
 * Studio's own rows, so the dashboards, the trajectory browser, compare and export read an engine
 * run as they read a Studio run.
 *
 * - A metric is a metric point at its step (the follower already mapped it onto the catalog where
 *   it means the same; the rest keep `<engine>/<key>`).
 * - A dumped generation is a turn. veRL trains one policy on one-turn episodes: each sample is an
 *   episode. DrMAS with the Studio's hook writes a trajectory id: the turns of one trajectory are
 *   one episode (Solver, then Verifier/Corrector rounds). Without it each turn stands alone, its
 *   agent `unknown` — never guessed (the follower warned once).
 * - A problem is the Solver's prompt with its reference answer (`gts`): the same prompt sampled at
 *   two steps is the same problem, so a problem's history across steps reads as in a Studio run.
 * - DrMAS pads each worker group's batch with copies of real rows; the hook marks them and they
 *   are not stored (they would count one generation twice).
 *
 * Every batch of records is written in one transaction together with the follower's cursor
 * (store/engine-jobs.ts): a Studio killed between two polls re-reads exactly what was not stored.
 */
import crypto from 'node:crypto';
import type { RunConfig } from '../config/schema';
import type { Store } from '../store';
import type { CheckpointRecord, FollowRecord, MetricRecord, TurnRecord } from './follow/records';
import type { FollowSpec } from './follow/spec';

/** What one batch changed, for progress and the run's events. */
export interface IngestSummary {
  metrics: number;
  turns: number;
  duplicatesSkipped: number;
  checkpoints: number;
  /** The highest training step seen in this batch (metrics or train dumps), or null. */
  step: number | null;
  logText: string;
}

interface EpisodeSlot {
  id: number;
  rounds: number;
  step: number;
}

/** A positive 31-bit id of a text (FNV-1a): a GRPO group's uid as the store's integer group id. */
function groupNumber(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 1) & 0x7fffffff;
}

/** Ray's driver lines carry terminal colours (`\x1b[36m(TaskRunner pid=…)\x1b[0m`); the store keeps plain text. */
// eslint-disable-next-line no-control-regex -- terminal colour codes are control characters by definition
export const stripAnsi = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

const digest = (text: string) => crypto.createHash('sha256').update(text).digest('hex').slice(0, 16);

export class EngineIngest {
  private readonly problems: Map<string, number>;
  /** Episodes of trajectories seen in this process, by `split/step/trajectory`. */
  private readonly episodes = new Map<string, EpisodeSlot>();
  private readonly startedAt: number;

  constructor(
    private readonly store: Store,
    private readonly runId: number,
    private readonly config: RunConfig,
    private readonly spec: FollowSpec,
  ) {
    this.startedAt = store.runs.get(runId)?.startedAt ?? Date.now();
    // A restarted Studio knows the problems already stored; trajectories are re-read whole or not at all (dumps are taken per complete step).
    this.problems = store.engineJobs.problemIds(runId);
  }

  /** Writes `records` and saves `cursor` for `attempt` in one transaction. */
  write(records: readonly FollowRecord[], attempt: number, cursor: unknown): IngestSummary {
    const summary: IngestSummary = { metrics: 0, turns: 0, duplicatesSkipped: 0, checkpoints: 0, step: null, logText: '' };
    const writer = this.store.writer({ maxPending: Number.MAX_SAFE_INTEGER, flushIntervalMs: 0 });
    this.store.db.transaction(() => {
      for (const record of records) this.one(record, writer, summary);
      writer.close();
      this.store.engineJobs.saveCursor(this.runId, attempt, cursor);
    })();
    this.forgetFinishedSteps(summary.step);
    return summary;
  }

  /**
   * A trajectory's turns are dumped in its step's file, which is taken whole: once a later step
   * is read, earlier steps' trajectories are complete, and their slots are dropped so the map does
   * not grow with the run (a validation dump of the previous step may still be read: one step kept).
   */
  private forgetFinishedSteps(step: number | null): void {
    if (step === null) return;
    for (const [key, slot] of this.episodes) if (slot.step < step - 1) this.episodes.delete(key);
  }

  private one(record: FollowRecord, writer: ReturnType<Store['writer']>, summary: IngestSummary): void {
    switch (record.kind) {
      case 'metric':
        this.metric(record, writer);
        summary.metrics++;
        summary.step = Math.max(summary.step ?? 0, record.step);
        return;
      case 'turn':
        if (record.duplicate === true) {
          summary.duplicatesSkipped++;
          return;
        }
        this.turn(record, writer);
        summary.turns++;
        if (record.split === 'train') summary.step = Math.max(summary.step ?? 0, record.step);
        return;
      case 'checkpoint':
        this.checkpoint(record);
        summary.checkpoints++;
        return;
      case 'checkpoint_removed':
        this.store.events.log(this.runId, 'info', 'engine_checkpoint_removed', `the engine removed its checkpoint of step ${record.step} (${record.dir})`, null, record.step);
        return;
      case 'status':
        this.store.engineJobs.setStatus(this.runId, this.spec.attempt, record.status, record.message === null ? null : stripAnsi(record.message));
        this.store.events.log(this.runId, record.status === 'FAILED' ? 'error' : 'info', 'engine_job_status', `Ray job ${record.status}${record.message ? `: ${stripAnsi(record.message)}` : ''}`, { status: record.status, errorType: record.errorType, exitCode: record.exitCode });
        return;
      case 'log':
        summary.logText += record.text;
        return;
      case 'traceback':
        this.store.events.log(this.runId, 'error', 'engine_traceback', `${record.actor ? `${record.actor}: ` : ''}${record.error}`, { traceback: record.text, actor: record.actor, error: record.error });
        return;
      case 'warning':
        this.store.events.log(this.runId, 'warning', `engine_${record.code}`, record.message, record.source ? { file: record.source.file, line: record.source.line } : null);
        return;
    }
  }

  private metric(record: MetricRecord, writer: ReturnType<Store['writer']>): void {
    writer.metric({ runId: this.runId, step: record.step, wallTime: Math.max(0, (record.observedAt - this.startedAt) / 1000), key: record.key, value: record.value });
  }

  /** The turn's episode: its trajectory's (DrMAS with the hook), else one of its own. */
  private episodeOf(record: TurnRecord, writer: ReturnType<Store['writer']>): EpisodeSlot {
    const key = record.trajectory !== null ? `${record.split}/${record.step}/${record.trajectory}` : null;
    const known = key !== null ? this.episodes.get(key) : undefined;
    if (known) return known;
    const problemId = this.problemOf(record, writer);
    const slot = { id: writer.newId('episodes'), rounds: 0, step: record.step };
    writer.episode({ id: slot.id, runId: this.runId, step: record.step, problemId, split: record.split, finalAnswer: null, correct: null, rounds: 0, meta: { engine: this.spec.engine, trajectory: record.trajectory, group: record.group } });
    if (key !== null) this.episodes.set(key, slot);
    return slot;
  }

  private problemOf(record: TurnRecord, writer: ReturnType<Store['writer']>): number {
    const answer = record.groundTruth ?? '';
    const key = `p-${digest(`${answer}\u0000${record.prompt}`)}`;
    const known = this.problems.get(`${record.split}/${key}`);
    if (known !== undefined) return known;
    const id = writer.newId('problems');
    writer.problem({ id, runId: this.runId, split: record.split, family: this.config.task.family, problemKey: key, question: record.prompt, answer, meta: { source: `${this.spec.engine} dump` } });
    this.problems.set(`${record.split}/${key}`, id);
    return id;
  }

  private turn(record: TurnRecord, writer: ReturnType<Store['writer']>): void {
    const episode = this.episodeOf(record, writer);
    const id = writer.newId('turns');
    const role = record.role;
    const round = record.round ?? 0;
    const parsed = typeof record.extras.pred === 'string' ? record.extras.pred : null;
    writer.turn({
      id,
      runId: this.runId,
      episodeId: episode.id,
      step: record.step,
      agent: record.agent ?? 'unknown',
      policyId: role !== null ? this.config.agents[role] : (record.wgId ?? 'unknown'),
      round,
      groupId: record.group !== null ? groupNumber(record.group) : 0,
      parentTurnId: null,
      sampleIndex: record.sampleIndex ?? record.index,
      prompt: record.prompt,
      text: record.text,
      // The engine dumps decoded text, not token ids: the count is unknown here.
      tokenCount: typeof record.extras.response_length === 'number' ? record.extras.response_length : 0,
      parsed,
      correct: record.correct,
      formatValid: record.formatValid ?? true,
      policyVersionMin: record.step,
      policyVersionMax: record.step,
      createdAt: Date.now(),
    });
    if (record.reward !== null) writer.reward({ turnId: id, runId: this.runId, value: record.reward, components: { score: record.reward }, scheme: `${this.spec.engine}:score` });
    if (record.advantage !== null) {
      // The engine normalised it; its group statistics are not dumped (mu and sigma unknown, stored as 0).
      writer.advantage({ turnId: id, runId: this.runId, value: record.advantage, mode: `${this.spec.engine}:${this.config.advantage.mode}`, groupKey: record.group ?? '', mu: 0, sigma: 0 });
    }
    // The Solver's or the last Corrector's answer is the episode's (MarsRL's chain).
    if (role === 'solver' || role === 'corrector' || role === null) {
      episode.rounds = Math.max(episode.rounds, round + 1);
      writer.episodeOutcome(episode.id, parsed, record.correct, episode.rounds);
    }
  }

  private checkpoint(record: CheckpointRecord): void {
    for (const policy of record.policies) {
      const role = policy.roles[0];
      this.store.events.addCheckpoint({ runId: this.runId, step: record.step, policyId: role ? this.config.agents[role] : policy.wgId, path: policy.hfDir ?? policy.dir, createdAt: Date.now(), metrics: null });
    }
    const weights = record.policies.filter((p) => p.hfDir !== null).length;
    this.store.events.log(this.runId, 'info', 'engine_checkpoint', `checkpoint of step ${record.step}: ${record.dir} (${weights} of ${record.policies.length} with Hugging Face weights)`, { dir: record.dir }, record.step);
  }
}

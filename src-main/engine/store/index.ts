/**
 * The experiment store: one SQLite file (WAL) holding every run, turn, segment, reward,
 * advantage, metric and event. All SQL lives in this folder; the rest of the engine calls these
 * typed repositories.
 */
import type { Database } from 'better-sqlite3';
import { openDatabase, type OpenOptions } from './db';
import { DiagnosticsRepo } from './diagnostics';
import { EngineJobsRepo } from './engine-jobs';
import { EventsRepo } from './events';
import { IdAllocator } from './ids';
import { ImportsRepo } from './imports';
import { MetricsRepo } from './metrics';
import { schemaVersion } from './migrations';
import { RejudgesRepo } from './rejudges';
import { ReplaysRepo } from './replays';
import { RunsRepo } from './runs';
import { StudiesRepo } from './studies';
import { TrajectoriesRepo } from './trajectories';
import { BatchWriter, type BatchWriterOptions } from './writer';

export class Store {
  readonly runs: RunsRepo;
  readonly trajectories: TrajectoriesRepo;
  readonly metrics: MetricsRepo;
  readonly events: EventsRepo;
  readonly ids: IdAllocator;
  readonly studies: StudiesRepo;
  readonly diagnostics: DiagnosticsRepo;
  readonly rejudges: RejudgesRepo;
  readonly engineJobs: EngineJobsRepo;
  readonly imports: ImportsRepo;
  readonly replays: ReplaysRepo;

  constructor(
    readonly db: Database,
    readonly path: string,
  ) {
    this.runs = new RunsRepo(db);
    this.trajectories = new TrajectoriesRepo(db);
    this.metrics = new MetricsRepo(db);
    this.events = new EventsRepo(db);
    this.ids = new IdAllocator(db);
    this.studies = new StudiesRepo(db);
    this.diagnostics = new DiagnosticsRepo(db);
    this.rejudges = new RejudgesRepo(db);
    this.engineJobs = new EngineJobsRepo(db);
    this.imports = new ImportsRepo(db, this.runs);
    this.replays = new ReplaysRepo(db);
  }

  get schemaVersion(): number {
    return schemaVersion(this.db);
  }

  writer(options?: BatchWriterOptions): BatchWriter {
    return new BatchWriter(this.db, this.trajectories, this.metrics, this.events, this.ids, options);
  }

  integrityCheck(): string[] {
    return (this.db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

export function openStore(databasePath: string, options: OpenOptions = {}): Store {
  return new Store(openDatabase(databasePath, options), databasePath);
}

export { describeStoreFailure, StoreOpenError } from './errors';
export { LATEST_SCHEMA_VERSION, SchemaTooNewError, MIGRATIONS, migrate } from './migrations';
export type { OpenOptions } from './db';
export type { BatchWriter, BatchWriterOptions } from './writer';
export type { EpisodeListItem, EpisodePageQuery, TurnPageQuery, TurnRecord, TurnResult, TurnView } from './trajectories';
export type { ListRunsOptions, RunCounts } from './runs';
export type { AdvantageGroupRows, AgentOutputCounts, CorrectorCounts, VerifierCounts } from './diagnostics';
export type { SeriesPoint } from './metrics';
export type { EngineJobRow } from './engine-jobs';
export type { ImportSourceRow, NewImportedRun } from './imports';
export type { NewReplay, ReplayEnd } from './replays';
export type { CellValue, NewStudy, StudyCellRow, StudyRow, StudyStatus } from './studies';
export type { NewRejudge, RejudgedTurnRow, RejudgeRow, TurnToRejudge } from './rejudges';
export * from './types';
export { CreditRepo, type CreditGroupRows, type CreditTurnRow } from './credit';

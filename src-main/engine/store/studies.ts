/** Studies: a config matrix × seeds launched as one unit, with one row per cell (see migration v4). */
import type { Database, Statement } from 'better-sqlite3';
import { parseJsonColumn } from './json';
import type { RunStatus } from './types';

/** A study moves through the same states as a run: queued → running → done | failed | interrupted. */
export type StudyStatus = RunStatus;

export type CellValue = string | number | boolean;

export interface StudyRow {
  id: number;
  name: string;
  status: StudyStatus;
  statusReason: string | null;
  /** The parsed matrix file, as written (see engine/study/matrix.ts). */
  matrix: Record<string, unknown>;
  concurrency: number;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
}

export interface StudyCellRow {
  studyId: number;
  cellIndex: number;
  /** e.g. `reward.scheme=shared, advantage.mode=global, seed=2`. */
  label: string;
  /** The axis values of this cell (axis key → value label), without the seed. */
  values: Record<string, CellValue>;
  seed: number;
  /** The config fragment passed to the run manager with the study's preset. */
  overrides: Record<string, unknown>;
  /** Filled when the cell's run is launched. */
  runId: number | null;
}

export interface NewStudy {
  name: string;
  matrix: Record<string, unknown>;
  concurrency: number;
  cells: Omit<StudyCellRow, 'studyId' | 'runId'>[];
}

interface StudyRecord {
  id: number;
  name: string;
  status: StudyStatus;
  status_reason: string | null;
  matrix_json: string;
  concurrency: number;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
}

interface CellRecord {
  study_id: number;
  cell_index: number;
  label: string;
  values_json: string;
  seed: number;
  overrides_json: string;
  run_id: number | null;
}

const toStudy = (r: StudyRecord): StudyRow => ({
  id: r.id,
  name: r.name,
  status: r.status,
  statusReason: r.status_reason,
  matrix: parseJsonColumn(r.matrix_json, {}),
  concurrency: r.concurrency,
  createdAt: r.created_at,
  startedAt: r.started_at,
  endedAt: r.ended_at,
});

const toCell = (r: CellRecord): StudyCellRow => ({
  studyId: r.study_id,
  cellIndex: r.cell_index,
  label: r.label,
  values: parseJsonColumn(r.values_json, {}),
  seed: r.seed,
  overrides: parseJsonColumn(r.overrides_json, {}),
  runId: r.run_id,
});

export class StudiesRepo {
  private readonly insertStudy: Statement;
  private readonly insertCell: Statement;
  private readonly byId: Statement;
  private readonly all: Statement;
  private readonly cellsOf: Statement;
  private readonly setRunStmt: Statement;
  private readonly setStatusStmt: Statement;
  private readonly byRun: Statement;

  constructor(private readonly db: Database) {
    this.insertStudy = db.prepare(
      "INSERT INTO studies(name, status, matrix_json, concurrency, created_at) VALUES (@name, 'queued', @matrix, @concurrency, @createdAt)",
    );
    this.insertCell = db.prepare(
      `INSERT INTO study_cells(study_id, cell_index, label, values_json, seed, overrides_json)
       VALUES (@studyId, @cellIndex, @label, @values, @seed, @overrides)`,
    );
    this.byId = db.prepare('SELECT * FROM studies WHERE id = ?');
    this.all = db.prepare('SELECT * FROM studies ORDER BY id DESC LIMIT ?');
    this.cellsOf = db.prepare('SELECT * FROM study_cells WHERE study_id = ? ORDER BY cell_index');
    this.setRunStmt = db.prepare('UPDATE study_cells SET run_id = ? WHERE study_id = ? AND cell_index = ?');
    // started_at is set once (the first time the study runs); ended_at only for final states.
    this.setStatusStmt = db.prepare(
      `UPDATE studies SET status = @status, status_reason = @reason,
         started_at = CASE WHEN @status = 'running' THEN COALESCE(started_at, @now) ELSE started_at END,
         ended_at = CASE WHEN @status IN ('done','failed','interrupted') THEN @now ELSE NULL END
       WHERE id = @id`,
    );
    this.byRun = db.prepare('SELECT study_id AS studyId FROM study_cells WHERE run_id = ?');
  }

  /** Creates the study and all its cells in one transaction (a half-written matrix is never seen). */
  create(study: NewStudy, now = Date.now()): number {
    return this.db.transaction(() => {
      const id = Number(this.insertStudy.run({ name: study.name, matrix: JSON.stringify(study.matrix), concurrency: study.concurrency, createdAt: now }).lastInsertRowid);
      for (const cell of study.cells) {
        this.insertCell.run({ studyId: id, cellIndex: cell.cellIndex, label: cell.label, values: JSON.stringify(cell.values), seed: cell.seed, overrides: JSON.stringify(cell.overrides) });
      }
      return id;
    })();
  }

  get(id: number): StudyRow | null {
    const row = this.byId.get(id) as StudyRecord | undefined;
    return row ? toStudy(row) : null;
  }

  list(limit = 200): StudyRow[] {
    return (this.all.all(Math.min(Math.max(limit, 1), 10_000)) as StudyRecord[]).map(toStudy);
  }

  cells(studyId: number): StudyCellRow[] {
    return (this.cellsOf.all(studyId) as CellRecord[]).map(toCell);
  }

  setCellRun(studyId: number, cellIndex: number, runId: number): void {
    this.setRunStmt.run(runId, studyId, cellIndex);
  }

  setStatus(id: number, status: StudyStatus, reason: string | null, now = Date.now()): void {
    this.setStatusStmt.run({ id, status, reason, now });
  }

  /** Studies a run belongs to (a run normally belongs to at most one). */
  studiesOfRun(runId: number): number[] {
    return (this.byRun.all(runId) as { studyId: number }[]).map((r) => r.studyId);
  }
}

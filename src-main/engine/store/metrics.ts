/** Metrics: slash-named scalar series per run (`solver/grad_norm`, `eval/system/accuracy`, …). */
import { keysetPage, pageLimit } from './keyset';
import type { Database, Statement } from 'better-sqlite3';
import { CURRENT_ATTEMPT } from './trajectories';
import type { KeysetPage, MetricPoint } from './types';

export interface SeriesPoint {
  step: number;
  wallTime: number;
  value: number;
}

export class MetricsRepo {
  private readonly keyIds = new Map<string, number>();
  private readonly selectKeyId: Statement;
  private readonly insertKey: Statement;
  readonly insertPoint: Statement;
  private readonly seriesPage: Statement;
  private readonly keysOfRun: Statement;
  private readonly latestOfKey: Statement;
  private readonly lastStepStmt: Statement;

  constructor(private readonly db: Database) {
    this.selectKeyId = db.prepare('SELECT id FROM metric_keys WHERE key = ?');
    this.insertKey = db.prepare('INSERT OR IGNORE INTO metric_keys(key) VALUES (?)');
    this.insertPoint = db.prepare(
      `INSERT OR REPLACE INTO metrics(run_id, key_id, step, wall_time, value, attempt) VALUES (@runId, @keyId, @step, @wallTime, @value, ${CURRENT_ATTEMPT})`,
    );
    this.seriesPage = db.prepare(
      `SELECT step, wall_time AS wallTime, value FROM metrics
       WHERE run_id = ? AND key_id = ? AND step > ? ORDER BY step LIMIT ?`,
    );
    this.keysOfRun = db.prepare(
      `SELECT k.key FROM metric_keys k WHERE EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = ? AND m.key_id = k.id) ORDER BY k.key`,
    );
    this.latestOfKey = db.prepare(
      'SELECT step, wall_time AS wallTime, value FROM metrics WHERE run_id = ? AND key_id = ? ORDER BY step DESC LIMIT 1',
    );
    // Warm-start metrics count their own steps; a run's progress is its RL step.
    this.lastStepStmt = db.prepare(
      "SELECT MAX(m.step) AS step FROM metrics m JOIN metric_keys k ON k.id = m.key_id WHERE m.run_id = ? AND k.key NOT LIKE 'pretrain/%'",
    );
  }

  /** The dictionary id of a key, created on first use (keys are few; ids are cached). */
  keyId(key: string): number {
    const cached = this.keyIds.get(key);
    if (cached !== undefined) return cached;
    this.insertKey.run(key);
    const row = this.selectKeyId.get(key) as { id: number };
    this.keyIds.set(key, row.id);
    return row.id;
  }

  private existingKeyId(key: string): number | null {
    const cached = this.keyIds.get(key);
    if (cached !== undefined) return cached;
    const row = this.selectKeyId.get(key) as { id: number } | undefined;
    if (row) this.keyIds.set(key, row.id);
    return row ? row.id : null;
  }

  pointParams(point: MetricPoint) {
    return { runId: point.runId, keyId: this.keyId(point.key), step: point.step, wallTime: point.wallTime, value: point.value };
  }

  /** A keyset page of one series in step order (cursor = last step returned). */
  series(runId: number, key: string, afterStep = -Infinity, limit?: number): KeysetPage<SeriesPoint> {
    const keyId = this.existingKeyId(key);
    if (keyId === null) return { items: [], nextCursor: null };
    const capped = pageLimit(limit, 10_000, 1_000_000);
    const rows = this.seriesPage.all(runId, keyId, afterStep === -Infinity ? Number.MIN_SAFE_INTEGER : afterStep, capped + 1) as SeriesPoint[];
    return keysetPage(rows, capped, (row) => row.step);
  }

  keys(runId: number): string[] {
    return (this.keysOfRun.all(runId) as { key: string }[]).map((r) => r.key);
  }

  latest(runId: number, keys: readonly string[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const key of keys) {
      const keyId = this.existingKeyId(key);
      if (keyId === null) continue;
      const row = this.latestOfKey.get(runId, keyId) as SeriesPoint | undefined;
      if (row) out[key] = row.value;
    }
    return out;
  }

  lastStep(runId: number): number | null {
    return (this.lastStepStmt.get(runId) as { step: number | null }).step;
  }
}

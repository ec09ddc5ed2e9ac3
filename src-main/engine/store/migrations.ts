/**
 * Numbered schema migrations, tracked in SQLite's `user_version`.
 *
 * Rules: a migration is never edited once released (databases in the wild were made by it);
 * each runs in one transaction, so a failure leaves the previous version intact; a database
 * whose version is newer than this code knows is refused rather than guessed at.
 */
import type { Database } from 'better-sqlite3';

/**
 * One schema version: the DDL that makes it (`sql`), and, where rows written before it need
 * filling in, the code that does so after the DDL (`backfill`). Both run in one transaction.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  backfill?(db: Database): void;
}

export class SchemaTooNewError extends Error {
  constructor(
    readonly databaseVersion: number,
    readonly supportedVersion: number,
    readonly databasePath: string,
  ) {
    super(
      `The database ${databasePath} has schema version ${databaseVersion}, but this MarsRL Studio understands versions up to ${supportedVersion}. ` +
        'It was written by a newer release: upgrade MarsRL Studio, or open another database with --db PATH / MARSRL_DB.',
    );
    this.name = 'SchemaTooNewError';
  }
}

const v1Initial: Migration = {
  version: 1,
  name: 'initial tables: runs, problems, episodes, turns, segments, rewards, advantages, metrics, events, checkpoints',
  sql: `
      CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued','running','done','failed','interrupted')),
        status_reason TEXT,
        preset TEXT,
        config_json TEXT NOT NULL,
        code_version TEXT NOT NULL,
        backend TEXT,
        backend_json TEXT,
        seed INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        ended_at INTEGER,
        notes TEXT NOT NULL DEFAULT ''
      );
      CREATE INDEX runs_status ON runs(status);

      CREATE TABLE problems (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        split TEXT NOT NULL CHECK (split IN ('train','test')),
        family TEXT NOT NULL,
        problem_key TEXT NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL,
        meta_json TEXT,
        UNIQUE (run_id, split, problem_key)
      );

      CREATE TABLE episodes (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        problem_id INTEGER REFERENCES problems(id) ON DELETE CASCADE,
        split TEXT NOT NULL,
        final_answer TEXT,
        correct INTEGER,
        rounds INTEGER NOT NULL DEFAULT 0,
        meta_json TEXT
      );
      CREATE INDEX episodes_run_step ON episodes(run_id, step);
      CREATE INDEX episodes_problem ON episodes(problem_id);

      CREATE TABLE turns (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        episode_id INTEGER REFERENCES episodes(id) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        agent TEXT NOT NULL,
        policy_id TEXT NOT NULL,
        round INTEGER NOT NULL,
        group_id INTEGER NOT NULL,
        parent_turn_id INTEGER REFERENCES turns(id) ON DELETE CASCADE,
        sample_index INTEGER NOT NULL,
        prompt TEXT NOT NULL,
        text TEXT NOT NULL,
        token_count INTEGER NOT NULL,
        parsed TEXT,
        correct INTEGER,
        format_valid INTEGER NOT NULL,
        policy_version_min INTEGER NOT NULL,
        policy_version_max INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
      -- SQLite appends the rowid to every index, so (run_id) and (run_id, agent) already serve
      -- keyset pages ordered by id: WHERE run_id = ? [AND agent = ?] AND id > ? ORDER BY id.
      CREATE INDEX turns_run ON turns(run_id);
      CREATE INDEX turns_run_agent ON turns(run_id, agent);
      CREATE INDEX turns_run_step ON turns(run_id, step);
      CREATE INDEX turns_episode ON turns(episode_id);
      CREATE INDEX turns_parent ON turns(parent_turn_id);

      CREATE TABLE segments (
        id INTEGER PRIMARY KEY,
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seg_index INTEGER NOT NULL,
        token_start INTEGER NOT NULL,
        token_end INTEGER NOT NULL,
        text TEXT NOT NULL,
        finished INTEGER NOT NULL,
        policy_version INTEGER NOT NULL,
        started_at INTEGER NOT NULL,
        ended_at INTEGER NOT NULL,
        worker TEXT NOT NULL,
        UNIQUE (turn_id, seg_index)
      );
      CREATE INDEX segments_run ON segments(run_id);

      CREATE TABLE rewards (
        turn_id INTEGER PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        value REAL NOT NULL,
        components_json TEXT NOT NULL,
        scheme TEXT NOT NULL
      );
      CREATE INDEX rewards_run ON rewards(run_id);

      CREATE TABLE advantages (
        turn_id INTEGER PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        value REAL NOT NULL,
        mode TEXT NOT NULL,
        group_key TEXT NOT NULL,
        mu REAL NOT NULL,
        sigma REAL NOT NULL
      );
      CREATE INDEX advantages_run ON advantages(run_id);

      CREATE TABLE metrics (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        wall_time REAL NOT NULL,
        key TEXT NOT NULL,
        value REAL NOT NULL
      );
      CREATE INDEX metrics_run_key_step ON metrics(run_id, key, step);

      CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step INTEGER,
        time INTEGER NOT NULL,
        level TEXT NOT NULL CHECK (level IN ('info','warning','error')),
        kind TEXT NOT NULL,
        message TEXT NOT NULL,
        data_json TEXT
      );
      CREATE INDEX events_run ON events(run_id, id);

      CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step INTEGER NOT NULL,
        policy_id TEXT NOT NULL,
        path TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        metrics_json TEXT
      );
      CREATE INDEX checkpoints_run_step ON checkpoints(run_id, step);
    `,
};

/**
 * v2: what the first large runs asked for.
 * - Metric keys move into a dictionary: a 1M-row metrics table repeated strings like
 *   `corrector1/advantage/std` in every row and in its index. Rows are rewritten with key ids
 *   in a WITHOUT ROWID table keyed (run, key, step), the order every chart query reads.
 * - Id blocks: worker processes build whole episodes (turn → parent, reward → turn) before
 *   writing them, so they reserve id ranges up front instead of asking SQLite row by row.
 * - Run tags, and the pipeline timeline (segment decodes and updates per agent and worker).
 */
const v2MetricKeysIdBlocksTimeline: Migration = {
  version: 2,
  name: 'metric key dictionary, id blocks, run tags, timeline',
  sql: `
      CREATE TABLE metric_keys (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE
      );
      INSERT INTO metric_keys(key) SELECT DISTINCT key FROM metrics ORDER BY key;

      CREATE TABLE metrics_v2 (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key_id INTEGER NOT NULL REFERENCES metric_keys(id),
        step INTEGER NOT NULL,
        wall_time REAL NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (run_id, key_id, step)
      ) WITHOUT ROWID;
      -- v1 allowed repeated (run, key, step); the last written value wins, as a re-logged
      -- metric after a resume means to replace the earlier one.
      INSERT OR REPLACE INTO metrics_v2(run_id, key_id, step, wall_time, value)
        SELECT m.run_id, k.id, m.step, m.wall_time, m.value
        FROM metrics m JOIN metric_keys k ON k.key = m.key ORDER BY m.rowid;
      DROP TABLE metrics;
      ALTER TABLE metrics_v2 RENAME TO metrics;

      CREATE TABLE id_blocks (
        name TEXT PRIMARY KEY,
        next_id INTEGER NOT NULL
      );
      INSERT INTO id_blocks(name, next_id) VALUES
        ('turns', (SELECT COALESCE(MAX(id), 0) + 1 FROM turns)),
        ('episodes', (SELECT COALESCE(MAX(id), 0) + 1 FROM episodes)),
        ('segments', (SELECT COALESCE(MAX(id), 0) + 1 FROM segments)),
        ('problems', (SELECT COALESCE(MAX(id), 0) + 1 FROM problems));

      ALTER TABLE runs ADD COLUMN tags_json TEXT NOT NULL DEFAULT '[]';

      CREATE TABLE timeline (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('segment','update','eval','wait')),
        agent TEXT NOT NULL,
        worker TEXT NOT NULL,
        step INTEGER NOT NULL,
        policy_version INTEGER NOT NULL,
        started_at REAL NOT NULL,
        ended_at REAL NOT NULL,
        tokens INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX timeline_run ON timeline(run_id, started_at);
    `,
};

/**
 * v3: which process runs a run, and when it last reported. A run left `running` by a worker that
 * died with the machine is recognised (dead pid or stale heartbeat) and marked interrupted.
 */
const v3WorkerHeartbeat: Migration = {
  version: 3,
  name: 'worker pid and heartbeat on runs',
  sql: `
      ALTER TABLE runs ADD COLUMN worker_pid INTEGER;
      ALTER TABLE runs ADD COLUMN heartbeat_at INTEGER;
    `,
};

/**
 * v4: studies — a matrix of config values × seeds launched as one unit. A study keeps its
 * matrix and one row per cell; a cell's run id is filled in when the run is launched, so a
 * study interrupted half-way knows which cells never ran. Deleting a run keeps its cell
 * (run_id becomes NULL) so the study still shows the hole.
 */
const v4Studies: Migration = {
  version: 4,
  name: 'studies and their cells',
  sql: `
      CREATE TABLE studies (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued','running','done','failed','interrupted')),
        status_reason TEXT,
        matrix_json TEXT NOT NULL,
        concurrency INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        ended_at INTEGER
      );

      CREATE TABLE study_cells (
        study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        cell_index INTEGER NOT NULL,
        label TEXT NOT NULL,
        values_json TEXT NOT NULL,
        seed INTEGER NOT NULL,
        overrides_json TEXT NOT NULL,
        run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        PRIMARY KEY (study_id, cell_index)
      );
      CREATE INDEX study_cells_run ON study_cells(run_id);
    `,
};

/**
 * v5 (issue #17): attempts. `marsrl resume` continues from the newest checkpoint and redoes the
 * steps after it; the killed attempt's rows of those steps came from weights that were thrown
 * away, so they are kept for the record but marked `superseded_by` the attempt that redid them,
 * and every reader leaves them out unless asked. Each row carries the attempt that wrote it.
 * Metrics are keyed (run, key, step), so a redo replaces a redone step's value; the killed
 * attempt's values of steps the redo has not reached yet move to `superseded_metrics`.
 *
 * Which rows a resume from the checkpoint of step k redoes (trainer.ts, pipeline-trainer.ts): the
 * checkpoint of step k is written after step k's rows and after the evaluation at step k+1, so
 * training rows (and step metrics) of steps ≥ k+1 and evaluation rows of steps > k+1 are redone.
 *
 * Databases written before v5 have no attempt column; the attempts are rebuilt from the `resumed`
 * events (time, checkpoint step) and each row's own time (turns' created_at, timeline spans'
 * started_at, metrics' run start + wall time; an episode takes its first turn's attempt).
 */
export const ATTEMPT_EVAL_PREFIX = 'eval/';
export const ATTEMPT_KEPT_PREFIX = 'pretrain/';

/** Mark `runId`'s rows redone by `attempt` (which resumed at `fromStep`) as superseded by it. */
export function supersedeRedoneRows(db: Database, runId: number, attempt: number, fromStep: number): { turns: number; episodes: number; metrics: number } {
  const params = { runId, attempt, fromStep };
  const redone = (split: string) => `((${split} = 'train' AND step >= @fromStep) OR (${split} = 'test' AND step > @fromStep))`;
  const episodes = db
    .prepare(`UPDATE episodes SET superseded_by = @attempt WHERE run_id = @runId AND superseded_by IS NULL AND attempt < @attempt AND ${redone('split')}`)
    .run(params).changes;
  // A turn's split is its episode's; a turn outside any episode counts as training.
  const turnSplit = "COALESCE((SELECT e.split FROM episodes e WHERE e.id = turns.episode_id), 'train')";
  const turns = db
    .prepare(`UPDATE turns SET superseded_by = @attempt WHERE run_id = @runId AND superseded_by IS NULL AND attempt < @attempt AND ${redone(turnSplit)}`)
    .run(params).changes;
  db.prepare(
    `UPDATE timeline SET superseded_by = @attempt WHERE run_id = @runId AND superseded_by IS NULL AND attempt < @attempt
       AND ${redone("CASE kind WHEN 'eval' THEN 'test' ELSE 'train' END")}`,
  ).run(params);
  const metricSplit = `CASE WHEN key_id IN (SELECT id FROM metric_keys WHERE key LIKE '${ATTEMPT_EVAL_PREFIX}%') THEN 'test' ELSE 'train' END`;
  const metricRedone = `run_id = @runId AND attempt < @attempt AND key_id NOT IN (SELECT id FROM metric_keys WHERE key LIKE '${ATTEMPT_KEPT_PREFIX}%') AND ${redone(metricSplit)}`;
  db.prepare(
    `INSERT INTO superseded_metrics (run_id, key_id, step, wall_time, value, attempt, superseded_by)
     SELECT run_id, key_id, step, wall_time, value, attempt, @attempt FROM metrics WHERE ${metricRedone}`,
  ).run(params);
  const metrics = db.prepare(`DELETE FROM metrics WHERE ${metricRedone}`).run(params).changes;
  return { turns, episodes, metrics };
}

const v5Attempts: Migration = {
  version: 5,
  name: 'attempts: the attempt on every row, superseded rows of redone steps',
  sql: `
      ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
      CREATE TABLE run_attempts (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        started_at INTEGER NOT NULL,
        -- The first step this attempt (re)did; NULL for a run's first attempt.
        resumed_from_step INTEGER,
        PRIMARY KEY (run_id, attempt)
      ) WITHOUT ROWID;
      ALTER TABLE episodes ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE episodes ADD COLUMN superseded_by INTEGER;
      ALTER TABLE turns ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE turns ADD COLUMN superseded_by INTEGER;
      ALTER TABLE timeline ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE timeline ADD COLUMN superseded_by INTEGER;
      ALTER TABLE metrics ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
      CREATE TABLE superseded_metrics (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key_id INTEGER NOT NULL REFERENCES metric_keys(id),
        step INTEGER NOT NULL,
        wall_time REAL NOT NULL,
        value REAL NOT NULL,
        attempt INTEGER NOT NULL,
        superseded_by INTEGER NOT NULL
      );
      CREATE INDEX superseded_metrics_run ON superseded_metrics(run_id, key_id, step);
      INSERT INTO run_attempts (run_id, attempt, started_at, resumed_from_step)
        SELECT id, 1, COALESCE(started_at, created_at), NULL FROM runs;
    `,
  backfill(db) {
    // Rebuild the attempts of runs resumed before v5 from their `resumed` events.
    const resumes = db.prepare("SELECT run_id AS runId, step, time FROM events WHERE kind = 'resumed' AND step IS NOT NULL ORDER BY run_id, id").all() as {
      runId: number;
      step: number;
      time: number;
    }[];
    const byRun = new Map<number, { step: number; time: number }[]>();
    for (const r of resumes) byRun.set(r.runId, [...(byRun.get(r.runId) ?? []), r]);
    for (const [runId, list] of byRun) {
      const run = db.prepare('SELECT created_at AS createdAt, started_at AS startedAt FROM runs WHERE id = ?').get(runId) as { createdAt: number; startedAt: number | null } | undefined;
      if (!run) continue;
      const runStart = run.startedAt ?? run.createdAt;
      list.forEach((resume, i) => {
        const attempt = i + 2;
        db.prepare('INSERT INTO run_attempts (run_id, attempt, started_at, resumed_from_step) VALUES (?, ?, ?, ?)').run(runId, attempt, resume.time, resume.step + 1);
        db.prepare('UPDATE turns SET attempt = ? WHERE run_id = ? AND created_at >= ?').run(attempt, runId, resume.time);
        db.prepare('UPDATE timeline SET attempt = ? WHERE run_id = ? AND started_at >= ?').run(attempt, runId, resume.time);
        db.prepare('UPDATE metrics SET attempt = ? WHERE run_id = ? AND ? + wall_time * 1000 >= ?').run(attempt, runId, runStart, resume.time);
      });
      db.prepare(
        `UPDATE episodes SET attempt = COALESCE((SELECT t.attempt FROM turns t WHERE t.episode_id = episodes.id ORDER BY t.id LIMIT 1), attempt)
         WHERE run_id = ?`,
      ).run(runId);
      db.prepare('UPDATE runs SET attempt = ? WHERE id = ?').run(list.length + 1, runId);
      list.forEach((resume, i) => supersedeRedoneRows(db, runId, i + 2, resume.step + 1));
    }
  },
};

const v6AdvantageWeight: Migration = {
  version: 6,
  name: 'the weight each advantage was multiplied by (advantage.verifier_class_balance)',
  sql: 'ALTER TABLE advantages ADD COLUMN weight REAL NOT NULL DEFAULT 1',
};

/**
 * v7 (issue #34): the answer checker's version, and re-judgements. A run records the version of
 * the checker that judged its turns (and each attempt its own: a resume may run newer code); NULL
 * on runs made before v7 (unknown). `marsrl rejudge` judges a finished run's turns again with
 * today's checker and records what changed beside the original verdicts, which it never rewrites:
 * the rewards a run trained on are history. One `rejudges` row per rejudge, one `rejudged_turns`
 * row per turn whose verdict (or extracted answer) changed.
 */
const v7CheckerVersions: Migration = {
  version: 7,
  name: 'checker version on runs and attempts; rejudges and the turns they changed',
  sql: `
      ALTER TABLE runs ADD COLUMN checker_version TEXT;
      ALTER TABLE run_attempts ADD COLUMN checker_version TEXT;
      CREATE TABLE rejudges (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        -- The checker that judged again, and the one the run recorded (NULL: unknown, before v7).
        checker_version TEXT NOT NULL,
        judged_version TEXT,
        created_at INTEGER NOT NULL,
        turns_checked INTEGER NOT NULL,
        changed INTEGER NOT NULL,
        summary_json TEXT NOT NULL
      );
      CREATE INDEX rejudges_run ON rejudges(run_id);
      CREATE TABLE rejudged_turns (
        rejudge_id INTEGER NOT NULL REFERENCES rejudges(id) ON DELETE CASCADE,
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        old_correct INTEGER,
        new_correct INTEGER NOT NULL,
        old_parsed TEXT,
        new_parsed TEXT,
        reason TEXT NOT NULL,
        PRIMARY KEY (rejudge_id, turn_id)
      ) WITHOUT ROWID;
      CREATE INDEX rejudged_turns_turn ON rejudged_turns(turn_id);
    `,
};

const v8StopRequests: Migration = {
  version: 8,
  name: 'stop requests recorded with the run (issue 35: any process may stop a run another owns)',
  sql: `
      ALTER TABLE runs ADD COLUMN stop_requested_at INTEGER;
      ALTER TABLE runs ADD COLUMN stop_reason TEXT;
    `,
};

/**
 * v9 (issue 38): the Ray jobs of runs an outside engine (veRL, DrMAS) trains, one row per attempt,
 * with the follower's cursor (engine-jobs.ts).
 */
const v9EngineJobs: Migration = {
  version: 9,
  name: 'engine jobs: the Ray job of each attempt of an engine run and its follower cursor',
  sql: `
      CREATE TABLE engine_jobs (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        engine TEXT NOT NULL,
        submission_id TEXT NOT NULL,
        address TEXT NOT NULL,
        local_run_dir TEXT NOT NULL,
        entrypoint TEXT NOT NULL,
        spec_json TEXT NOT NULL,
        status TEXT,
        message TEXT,
        cursor_json TEXT NOT NULL,
        submitted_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (run_id, attempt)
      );
    `,
};

/**
 * v10 (issue 39): runs imported from another tool's files. One row per imported source run: where
 * it came from (format, absolute path, the run within the source), the reader's cursor, so a
 * re-import continues after what is stored and a grown source adds only its new records, and the
 * SHA-256 of the source's bytes. A run with a row here is read-only (no stop, resume or run-again);
 * deleting the run deletes its row, and a later import of the same source creates it again.
 */
const v10ImportSources: Migration = {
  version: 10,
  name: 'import sources: the origin and reader cursor of runs imported from other tools',
  sql: `
      CREATE TABLE import_sources (
        run_id INTEGER NOT NULL UNIQUE REFERENCES runs(id) ON DELETE CASCADE,
        format TEXT NOT NULL,
        path TEXT NOT NULL,
        source_key TEXT NOT NULL,
        digest TEXT NOT NULL,
        cursor_json TEXT,
        bytes INTEGER NOT NULL DEFAULT 0,
        imported_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (format, path, source_key)
      );
    `,
};

/**
 * v11 (issue 40): replays. A replay runs a stored episode's problem (or another problem, or a
 * prompt) through the chain again with another checkpoint or an endpoint; it is kept apart from
 * the run's training data in its own two tables, so no episode, turn, reward or metric of the run
 * changes, and deleting the run deletes its replays.
 */
const v11Replays: Migration = {
  version: 11,
  name: 'replays: chains played again with another checkpoint or an endpoint, apart from the training data',
  sql: `
      CREATE TABLE replays (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        episode_id INTEGER REFERENCES episodes(id) ON DELETE SET NULL,
        problem_id INTEGER REFERENCES problems(id) ON DELETE SET NULL,
        question TEXT NOT NULL,
        reference TEXT,
        model_json TEXT NOT NULL,
        model_label TEXT NOT NULL,
        decoding TEXT NOT NULL,
        seed INTEGER NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        reproducible INTEGER,
        reproducible_reason TEXT,
        matches_stored INTEGER,
        final_answer TEXT,
        correct INTEGER,
        seconds REAL,
        stored_seconds REAL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX replays_run ON replays(run_id, id);
      CREATE TABLE replay_turns (
        replay_id INTEGER NOT NULL REFERENCES replays(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        agent TEXT NOT NULL,
        round INTEGER NOT NULL,
        prompt TEXT NOT NULL,
        text TEXT NOT NULL,
        token_count INTEGER NOT NULL,
        parsed TEXT,
        correct INTEGER,
        format_valid INTEGER NOT NULL,
        same_as_stored INTEGER,
        PRIMARY KEY (replay_id, idx)
      );
    `,
};

export const MIGRATIONS: readonly Migration[] = [v1Initial, v2MetricKeysIdBlocksTimeline, v3WorkerHeartbeat, v4Studies, v5Attempts, v6AdvantageWeight, v7CheckerVersions, v8StopRequests, v9EngineJobs, v10ImportSources, v11Replays];
export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

export function schemaVersion(db: Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Bring `db` up to `target` (the latest by default). Returns the versions applied.
 * Foreign keys are switched off during a migration because table rebuilds (v2's metrics)
 * would otherwise cascade; they are checked before commit instead.
 */
export function migrate(db: Database, databasePath: string, target = LATEST_SCHEMA_VERSION): number[] {
  const current = schemaVersion(db);
  if (current > LATEST_SCHEMA_VERSION) throw new SchemaTooNewError(current, LATEST_SCHEMA_VERSION, databasePath);
  const pending = MIGRATIONS.filter((m) => m.version > current && m.version <= target);
  if (pending.length === 0) return [];
  const foreignKeys = db.pragma('foreign_keys', { simple: true }) as number;
  db.pragma('foreign_keys = OFF');
  try {
    for (const migration of pending) {
      db.transaction(() => {
        db.exec(migration.sql);
        migration.backfill?.(db);
        const violations = db.pragma('foreign_key_check') as unknown[];
        if (violations.length > 0) {
          throw new Error(`migration ${migration.version} (${migration.name}) left ${violations.length} foreign-key violations; nothing was changed`);
        }
        db.pragma(`user_version = ${migration.version}`);
      }).immediate();
    }
  } finally {
    db.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`);
  }
  return pending.map((m) => m.version);
}

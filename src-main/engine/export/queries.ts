/**
 * The reads an export makes: keyset pages over turns, episodes and problems of one run, with the
 * reward, advantage, episode and problem joined in. They live beside the exporter rather than in
 * the store because they exist for it alone; they only read, and use the store's indexes.
 *
 * Two rules keep a million-turn export linear and consistent:
 * - Pages walk one index in id order. Filter columns are written as `+t.agent`, `+t.step`, … so
 *   SQLite cannot prefer the (run, agent) or (run, step) index and then sort every matching row
 *   for each page (a temp b-tree per page turns a linear walk quadratic).
 * - Each run is bounded by the highest turn/episode id seen when the export starts, so an export
 *   of a live run is the run as it was then, and its progress total stays true.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Store } from '../store';
import type { TurnRecord as StoredTurnRecord } from '../store';
import { equalityFilters, rangeFilters } from '../store/keyset';
import type { RunRow, Split } from '../store/types';
import { ExportError, type ResolvedFilters } from './options';

/** A turn with everything a trajectory row needs (raw SQLite values): the turns row plus joins. */
export interface TurnRecord extends StoredTurnRecord {
  split: Split | null;
  problem_id: number | null;
  problem_key: string | null;
  family: string | null;
  episode_correct: number | null;
  reward: number | null;
  components_json: string | null;
  reward_scheme: string | null;
  advantage: number | null;
  advantage_mode: string | null;
  advantage_group_key: string | null;
  advantage_mu: number | null;
  advantage_sigma: number | null;
  advantage_weight: number | null;
}

export interface ProblemRecord {
  id: number;
  run_id: number;
  split: Split;
  family: string;
  problem_key: string;
  question: string;
  answer: string;
  solver_prompt: string | null;
}

/** A run as the export reads it: bounded by the ids that existed when the export began. */
export interface SourceRun {
  run: RunRow;
  maxTurnId: number;
  maxEpisodeId: number;
}

const TURN_COLUMNS = `t.id, t.run_id, t.episode_id, t.step, t.agent, t.policy_id, t.round, t.group_id, t.parent_turn_id,
  t.sample_index, t.prompt, t.text, t.token_count, t.parsed, t.correct, t.format_valid, t.policy_version_min,
  t.policy_version_max, t.created_at, e.split, e.problem_id, p.problem_key, p.family, e.correct,
  r.value, r.components_json, r.scheme, a.value, a.mode, a.group_key, a.mu, a.sigma, t.attempt, t.superseded_by, a.weight`;

/**
 * Pages are read as arrays (better-sqlite3 `raw` mode) and turned into records here: building a
 * fixed-shape object literal is about twice as fast as the driver's per-row keyed objects, and the
 * read is most of an export's time. The order matches TURN_COLUMNS.
 */
function toTurnRecord(r: unknown[]): TurnRecord {
  return {
    id: r[0] as number,
    run_id: r[1] as number,
    episode_id: r[2] as number | null,
    step: r[3] as number,
    agent: r[4] as string,
    policy_id: r[5] as string,
    round: r[6] as number,
    group_id: r[7] as number,
    parent_turn_id: r[8] as number | null,
    sample_index: r[9] as number,
    prompt: r[10] as string,
    text: r[11] as string,
    token_count: r[12] as number,
    parsed: r[13] as string | null,
    correct: r[14] as number | null,
    format_valid: r[15] as number,
    policy_version_min: r[16] as number,
    policy_version_max: r[17] as number,
    created_at: r[18] as number,
    split: r[19] as Split | null,
    problem_id: r[20] as number | null,
    problem_key: r[21] as string | null,
    family: r[22] as string | null,
    episode_correct: r[23] as number | null,
    reward: r[24] as number | null,
    components_json: r[25] as string | null,
    reward_scheme: r[26] as string | null,
    advantage: r[27] as number | null,
    advantage_mode: r[28] as string | null,
    advantage_group_key: r[29] as string | null,
    advantage_mu: r[30] as number | null,
    advantage_sigma: r[31] as number | null,
    attempt: r[32] as number,
    superseded_by: r[33] as number | null,
    advantage_weight: r[34] as number | null,
  };
}

const TURN_JOINS = `LEFT JOIN episodes e ON e.id = t.episode_id
  LEFT JOIN problems p ON p.id = e.problem_id
  LEFT JOIN rewards r ON r.turn_id = t.id
  LEFT JOIN advantages a ON a.turn_id = t.id`;

/** Resolve run references; an unknown one is an error that says where runs are listed. */
export function resolveRuns(store: Store, refs: (number | string)[]): SourceRun[] {
  const seen = new Set<number>();
  const runs: SourceRun[] = [];
  const maxTurn = store.db.prepare('SELECT MAX(id) AS m FROM turns WHERE run_id = ?');
  const maxEpisode = store.db.prepare('SELECT MAX(id) AS m FROM episodes WHERE run_id = ?');
  for (const ref of refs) {
    const run = store.runs.find(String(ref).trim());
    if (!run) {
      throw new ExportError(
        'unknown_run',
        'runs',
        `runs: unknown run ${JSON.stringify(ref)} in ${store.path}; list runs with \`marsrl runs\` (or the runs table) and pass an id or name`,
      );
    }
    if (seen.has(run.id)) continue;
    seen.add(run.id);
    runs.push({
      run,
      maxTurnId: (maxTurn.get(run.id) as { m: number | null }).m ?? 0,
      maxEpisodeId: (maxEpisode.get(run.id) as { m: number | null }).m ?? 0,
    });
  }
  return runs;
}

/**
 * Distinct agents of a run by skip-scan over the (run_id, agent) index: one index seek per agent
 * instead of reading every turn of the run.
 */
export function agentsOfRun(db: Database, runId: number): string[] {
  const rows = db
    .prepare(
      `WITH RECURSIVE a(agent) AS (
         SELECT MIN(agent) FROM turns WHERE run_id = @runId
         UNION ALL
         SELECT (SELECT MIN(agent) FROM turns WHERE run_id = @runId AND agent > a.agent) FROM a WHERE a.agent IS NOT NULL
       ) SELECT agent FROM a WHERE agent IS NOT NULL`,
    )
    .all({ runId }) as { agent: string }[];
  return rows.map((r) => r.agent);
}

export function checkAgents(db: Database, runs: SourceRun[], agents: string[] | null): void {
  if (agents === null) return;
  const present = new Set<string>();
  for (const { run } of runs) for (const agent of agentsOfRun(db, run.id)) present.add(agent);
  const unknown = agents.filter((a) => !present.has(a));
  if (unknown.length > 0) {
    const list = [...present].sort();
    throw new ExportError(
      'unknown_agent',
      'filters.agents',
      `filters.agents: unknown agent${unknown.length > 1 ? 's' : ''} ${unknown.map((a) => JSON.stringify(a)).join(', ')}; ` +
        `run${runs.length > 1 ? 's' : ''} ${runs.map((r) => r.run.id).join(', ')} ${list.length ? `have agents ${list.join(', ')}` : 'have no turns'}`,
    );
  }
}

/** WHERE clauses and parameters for the turn-level filters (see the file comment for the `+`). */
function turnFilterSql(filters: ResolvedFilters): { clauses: string[]; params: Record<string, unknown>; needs: { episode: boolean; reward: boolean } } {
  const clauses: string[] = [];
  const params: Record<string, unknown> = {};
  // Turns of a killed attempt whose step a resume redid came from weights that were thrown away
  // (issue #17): a dataset holds the live attempt only unless asked.
  if (!filters.includeSuperseded) clauses.push('+t.superseded_by IS NULL');
  if (filters.agents !== null) {
    clauses.push('+t.agent IN (SELECT value FROM json_each(@agents))');
    params.agents = JSON.stringify(filters.agents);
  }
  rangeFilters(clauses, params, { stepFrom: { column: '+t.step', op: '>=', value: filters.stepFrom }, stepTo: { column: '+t.step', op: '<=', value: filters.stepTo } });
  equalityFilters(clauses, params, {
    correct: { column: '+t.correct', value: filters.correct === 'any' ? undefined : filters.correct },
    formatValid: { column: '+t.format_valid', value: filters.formatValid === 'any' ? undefined : filters.formatValid },
    split: { column: 'e.split', value: filters.split ?? undefined },
  });
  rangeFilters(clauses, params, { minReward: { column: 'r.value', op: '>=', value: filters.minReward }, maxReward: { column: 'r.value', op: '<=', value: filters.maxReward } });
  return {
    clauses,
    params,
    needs: { episode: filters.split !== null, reward: filters.minReward !== null || filters.maxReward !== null },
  };
}

function countJoins(needs: { episode: boolean; reward: boolean }): string {
  return `${needs.episode ? 'JOIN episodes e ON e.id = t.episode_id' : ''} ${needs.reward ? 'JOIN rewards r ON r.turn_id = t.id' : ''}`;
}

/**
 * What every reader of one run shares: its query parameters, the count of what passes the filters
 * (the progress total), and the run it reads.
 */
abstract class RunPages {
  private readonly countStmt: Statement;

  /** `params` are every query's parameters for this run; `countSql` counts what passes the filters. */
  constructor(
    db: Database,
    protected readonly source: SourceRun,
    protected readonly params: Record<string, unknown>,
    countSql: string,
  ) {
    this.countStmt = db.prepare(countSql);
  }

  count(): number {
    return (this.countStmt.get(this.params) as { n: number }).n;
  }

  get runId(): number {
    return this.source.run.id;
  }
}

/** Keyset pages of filtered turns of one run, in id order. */
export class TurnPages extends RunPages {
  private readonly page: Statement;

  constructor(
    db: Database,
    source: SourceRun,
    filters: ResolvedFilters,
    private readonly limit = 1000,
  ) {
    const { clauses, params, needs } = turnFilterSql(filters);
    const where = ['t.run_id = @runId', 't.id <= @maxId', ...clauses];
    super(db, source, { ...params, runId: source.run.id, maxId: source.maxTurnId }, `SELECT COUNT(*) AS n FROM turns t ${countJoins(needs)} WHERE ${where.join(' AND ')}`);
    this.page = db.prepare(`SELECT ${TURN_COLUMNS} FROM turns t ${TURN_JOINS} WHERE ${where.join(' AND ')} AND t.id > @after ORDER BY t.id LIMIT @limit`).raw(true);
  }

  /** The page query and its parameters, for EXPLAIN QUERY PLAN in tests and benchmarks. */
  get pageQuery(): { sql: string; params: Record<string, unknown> } {
    return { sql: this.page.source, params: { ...this.params, after: 0, limit: this.limit } };
  }

  /** Turns with id above `after`; an empty page means the end. */
  next(after: number): TurnRecord[] {
    return (this.page.all({ ...this.params, after, limit: this.limit }) as unknown[][]).map(toTurnRecord);
  }
}

/**
 * Turns grouped for preference pairs: keyset pages of episodes, then every filtered turn of those
 * episodes ordered by (episode, group, agent, id), so each (episode, group, agent) group arrives
 * whole within one page.
 */
export class EpisodeTurnPages extends RunPages {
  private readonly episodes: Statement;
  private readonly turns: Statement;
  private readonly noEpisodeStmt: Statement | null;

  constructor(
    db: Database,
    source: SourceRun,
    filters: ResolvedFilters,
    private readonly episodeLimit = 50,
  ) {
    const { clauses, params, needs } = turnFilterSql(filters);
    const countWhere = ['t.run_id = @runId', 't.id <= @maxId', 't.episode_id <= @maxEpisode', ...clauses];
    super(
      db,
      source,
      { ...params, runId: source.run.id, maxId: source.maxTurnId, maxEpisode: source.maxEpisodeId },
      `SELECT COUNT(*) AS n FROM turns t ${countJoins({ ...needs, episode: true })} WHERE ${countWhere.join(' AND ')}`,
    );
    const episodeWhere = ['run_id = @runId', 'id <= @maxEpisode', 'id > @after'];
    if (filters.split !== null) episodeWhere.push('+split = @split');
    if (!filters.includeSuperseded) episodeWhere.push('+superseded_by IS NULL');
    this.episodes = db.prepare(`SELECT id FROM episodes WHERE ${episodeWhere.join(' AND ')} ORDER BY id LIMIT @limit`);
    const turnWhere = ['t.episode_id IN (SELECT value FROM json_each(@episodes))', '+t.run_id = @runId', '+t.id <= @maxId', ...clauses];
    this.turns = db.prepare(`SELECT ${TURN_COLUMNS} FROM turns t ${TURN_JOINS} WHERE ${turnWhere.join(' AND ')} ORDER BY t.episode_id, t.group_id, t.agent, t.id`).raw(true);
    // Turns outside any episode have no group to be compared in; they are counted, not lost. A
    // split filter already excludes them (split is a property of the episode).
    const noEpisodeWhere = ['t.run_id = @runId', 't.id <= @maxId', 't.episode_id IS NULL', ...clauses];
    this.noEpisodeStmt = filters.split !== null
      ? null
      : db.prepare(`SELECT COUNT(*) AS n FROM turns t ${countJoins({ ...needs, episode: false })} WHERE ${noEpisodeWhere.join(' AND ')}`);
  }

  /** Filtered turns without an episode; always 0 when a split filter is set (split lives on episodes). */
  countWithoutEpisode(): number {
    return this.noEpisodeStmt === null ? 0 : (this.noEpisodeStmt.get(this.params) as { n: number }).n;
  }

  /** The next episodes after `after` and their filtered turns; `lastEpisode` null means the end. */
  next(after: number): { lastEpisode: number | null; turns: TurnRecord[] } {
    const ids = (this.episodes.all({ ...this.params, after, limit: this.episodeLimit }) as { id: number }[]).map((r) => r.id);
    if (ids.length === 0) return { lastEpisode: null, turns: [] };
    const turns = (this.turns.all({ ...this.params, episodes: JSON.stringify(ids) }) as unknown[][]).map(toTurnRecord);
    return { lastEpisode: ids[ids.length - 1], turns };
  }
}

/**
 * Keyset pages of the problems of one run that at least one filtered turn worked on, with the
 * prompt the Solver read for it (the first Solver turn's, else the question).
 */
export class ProblemPages extends RunPages {
  private readonly page: Statement;

  constructor(
    db: Database,
    source: SourceRun,
    filters: ResolvedFilters,
    private readonly limit = 500,
  ) {
    const { clauses, params } = turnFilterSql({ ...filters, split: null });
    const runParams: Record<string, unknown> = { ...params, runId: source.run.id, maxId: source.maxTurnId };
    const exists = `EXISTS (SELECT 1 FROM episodes e JOIN turns t ON t.episode_id = e.id
        ${filters.minReward !== null || filters.maxReward !== null ? 'JOIN rewards r ON r.turn_id = t.id' : ''}
        WHERE e.problem_id = p.id AND t.id <= @maxId ${clauses.map((c) => `AND ${c}`).join(' ')})`;
    const where = ['p.run_id = @runId', exists];
    if (filters.split !== null) {
      where.push('p.split = @split');
      runParams.split = filters.split;
    }
    super(db, source, runParams, `SELECT COUNT(*) AS n FROM problems p WHERE ${where.join(' AND ')}`);
    const solverPrompt = `(SELECT t.prompt FROM episodes e JOIN turns t ON t.episode_id = e.id
        WHERE e.problem_id = p.id AND t.agent = 'solver' AND t.id <= @maxId ORDER BY t.id LIMIT 1)`;
    this.page = db.prepare(
      `SELECT p.id, p.run_id, p.split, p.family, p.problem_key, p.question, p.answer, ${solverPrompt} AS solver_prompt
       FROM problems p WHERE ${where.join(' AND ')} AND p.id > @after ORDER BY p.id LIMIT @limit`,
    );
  }

  next(after: number): ProblemRecord[] {
    return this.page.all({ ...this.params, after, limit: this.limit }) as ProblemRecord[];
  }
}

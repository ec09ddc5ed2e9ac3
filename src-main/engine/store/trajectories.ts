/**
 * Trajectories: problems, episodes, turns and what hangs off a turn (segments, reward,
 * advantage). Inserts are prepared here and driven by the BatchWriter; reads are keyset pages
 * so a run with millions of turns pages in constant time.
 */
import { equalityFilters, keysetPage, pageLimit, rangeFilters } from './keyset';
import type { Database, Statement } from 'better-sqlite3';
import { StatementCache } from './statements';
import { boolColumn, fromBool, parseJsonColumn, toJsonColumn } from './json';
import { camelColumns } from './columns';
import { episodeColumns, ProblemEpisodesRepo } from './problem-episodes';
import type { EpisodeQuery, EpisodeSummary, Turn, TurnQuery } from '#shared/contract';
import type {
  AdvantageRow,
  EpisodeRow,
  KeysetPage,
  ProblemRow,
  RewardRow,
  SegmentRow,
  TurnRow,
} from './types';

/** A row of the turns table as SQLite returns it (snake_case, 0/1 booleans). */
export interface TurnRecord {
  id: number;
  run_id: number;
  episode_id: number | null;
  step: number;
  agent: string;
  policy_id: string;
  round: number;
  group_id: number;
  parent_turn_id: number | null;
  sample_index: number;
  prompt: string;
  text: string;
  token_count: number;
  parsed: string | null;
  correct: number | null;
  format_valid: number;
  policy_version_min: number;
  policy_version_max: number;
  created_at: number;
  /** Added by schema v5; absent from records read with an explicit column list that predates it. */
  attempt?: number;
  superseded_by?: number | null;
}

/** An episodes row (from `SELECT e.*` or by id) as the API shows it, with the attempt that wrote it. */
function toEpisode(r: Record<string, unknown>): EpisodeRow & { attempt: number; supersededBy: number | null } {
  return { ...episodeColumns(r), meta: parseJsonColumn(r.meta_json as string | null, null) };
}

/** What a turn written before its reply was complete gets once it is (`updateTurnResult`). */
export interface TurnResult {
  id: number;
  text: string;
  tokenCount: number;
  parsed: string | null;
  correct: boolean | null;
  formatValid: boolean;
}

/** A turn as the trajectory browser shows it, with its reward and advantage when logged: the API's Turn. */
export type TurnView = Turn;

/** A turn view as TURN_VIEW_SELECT reads it: the API's Turn, with SQLite's 0/1 and JSON where it has booleans and components. */
type TurnViewRecord = Omit<TurnView, 'correct' | 'formatValid' | 'rewardComponents'> & { correct: number | null; formatValid: number; components_json: string | null };

function toTurnView({ components_json, ...r }: TurnViewRecord): TurnView {
  return { ...r, correct: boolColumn(r.correct), formatValid: r.formatValid !== 0, rewardComponents: parseJsonColumn(components_json, null) };
}

/** What a page of turns is asked with: the StudioApi's TurnQuery (keyset cursor: turns with id greater than `afterId`). */
export type TurnPageQuery = TurnQuery;

/** An episode as the browser lists it: the API's EpisodeSummary, and the row's meta. */
export interface EpisodeListItem extends EpisodeRow, EpisodeSummary {}

/** What a page of episodes is asked with: the StudioApi's EpisodeQuery. */
export type EpisodePageQuery = EpisodeQuery;

/** `%`, `_` and the escape character itself are literal in a search. */
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A Verifier turn (as `alias`) that the `verifier` episode filter is about: a wrong verdict of that kind. */
export function verifierFilterTurn(kind: NonNullable<EpisodePageQuery['verifier']>, alias: string): string {
  return `${alias}.agent LIKE 'verifier%' AND ${alias}.correct = 0 AND ${alias}.parsed = '${kind === 'false_approve' ? 'approve' : 'reject'}'`;
}

/** FROM … WHERE of the Corrector turns `c` the `corrector` episode filter is about (their input `i`, read through the verdict `v`). */
export function correctorFilterTurns(kind: NonNullable<EpisodePageQuery['corrector']>): string {
  const change = { fixed: 'i.correct = 0 AND c.correct = 1', broke: 'i.correct = 1 AND c.correct = 0', unchanged: 'i.correct = c.correct' }[kind];
  return `FROM turns c JOIN turns v ON v.id = c.parent_turn_id JOIN turns i ON i.id = v.parent_turn_id WHERE c.agent LIKE 'corrector%' AND ${change}`;
}

/**
 * The conditions of the episode filters (issue 18). A Verifier turn's `correct` is whether its
 * verdict matched the truth, so a wrong approve is `parsed = 'approve' AND correct = 0`. A
 * Corrector turn reads a rejecting verdict, whose parent is the answer judged: its input.
 */
function episodeFilterSql(query: EpisodePageQuery, where: string[], params: Record<string, unknown>): void {
  rangeFilters(where, params, { stepFrom: { column: 'e.step', op: '>=', value: query.stepFrom }, stepTo: { column: 'e.step', op: '<=', value: query.stepTo } });
  if (query.latestStep) where.push(`e.step = (SELECT MAX(x.step) FROM episodes x WHERE x.run_id = @runId${query.split !== undefined ? ' AND x.split = @split' : ''})`);
  if (query.outcome !== undefined) where.push(query.outcome === 'solved' ? 'e.correct = 1' : 'e.correct = 0');
  if (query.verifier !== undefined) where.push(`EXISTS (SELECT 1 FROM turns v WHERE v.episode_id = e.id AND ${verifierFilterTurn(query.verifier, 'v')})`);
  if (query.corrector !== undefined) where.push(`EXISTS (SELECT 1 ${correctorFilterTurns(query.corrector)} AND c.episode_id = e.id)`);
  if (query.search !== undefined && query.search.trim() !== '') {
    params.search = likePattern(query.search.trim());
    where.push(`(p.question LIKE @search ESCAPE '\\' OR EXISTS (SELECT 1 FROM turns s WHERE s.episode_id = e.id AND (s.text LIKE @search ESCAPE '\\' OR s.prompt LIKE @search ESCAPE '\\')))`);
  }
}

/**
 * The attempt a new row belongs to: the run's current one (runs.attempt, raised by each resume).
 * Read inside the insert so every writer, in any process, tags its rows without being told; a row
 * of a missing run still fails on its foreign key, not here.
 */
export const CURRENT_ATTEMPT = 'COALESCE((SELECT attempt FROM runs WHERE id = @runId), 1)';

export class TrajectoriesRepo {
  readonly insertProblem: Statement;
  readonly insertEpisode: Statement;
  readonly insertTurn: Statement;
  readonly insertSegment: Statement;
  readonly insertReward: Statement;
  readonly insertAdvantage: Statement;
  private readonly problems: ProblemEpisodesRepo;

  private readonly statements: StatementCache;

  constructor(private readonly db: Database) {
    this.statements = new StatementCache(db);
    this.insertProblem = db.prepare(
      `INSERT INTO problems (id, run_id, split, family, problem_key, question, answer, meta_json)
       VALUES (@id, @runId, @split, @family, @problemKey, @question, @answer, @meta)`,
    );
    this.insertEpisode = db.prepare(
      `INSERT INTO episodes (id, run_id, step, problem_id, split, final_answer, correct, rounds, meta_json, attempt)
       VALUES (@id, @runId, @step, @problemId, @split, @finalAnswer, @correct, @rounds, @meta, ${CURRENT_ATTEMPT})`,
    );
    this.insertTurn = db.prepare(
      `INSERT INTO turns (id, run_id, episode_id, step, agent, policy_id, round, group_id, parent_turn_id,
         sample_index, prompt, text, token_count, parsed, correct, format_valid, policy_version_min,
         policy_version_max, created_at, attempt)
       VALUES (@id, @runId, @episodeId, @step, @agent, @policyId, @round, @groupId, @parentTurnId,
         @sampleIndex, @prompt, @text, @tokenCount, @parsed, @correct, @formatValid, @policyVersionMin,
         @policyVersionMax, @createdAt, ${CURRENT_ATTEMPT})`,
    );
    this.insertSegment = db.prepare(
      `INSERT INTO segments (id, turn_id, run_id, seg_index, token_start, token_end, text, finished,
         policy_version, started_at, ended_at, worker)
       VALUES (@id, @turnId, @runId, @segIndex, @tokenStart, @tokenEnd, @text, @finished,
         @policyVersion, @startedAt, @endedAt, @worker)`,
    );
    this.insertReward = db.prepare(
      `INSERT OR REPLACE INTO rewards (turn_id, run_id, value, components_json, scheme)
       VALUES (@turnId, @runId, @value, @components, @scheme)`,
    );
    this.insertAdvantage = db.prepare(
      `INSERT OR REPLACE INTO advantages (turn_id, run_id, value, mode, group_key, mu, sigma, weight)
       VALUES (@turnId, @runId, @value, @mode, @groupKey, @mu, @sigma, @weight)`,
    );
    this.problems = new ProblemEpisodesRepo(db);
  }

  // Row → statement parameter mappers, used by the BatchWriter.
  static problemParams(p: ProblemRow) {
    return { ...p, meta: toJsonColumn(p.meta) };
  }
  static episodeParams(e: EpisodeRow) {
    return { ...e, correct: fromBool(e.correct), meta: toJsonColumn(e.meta) };
  }
  static turnParams(t: TurnRow) {
    return { ...t, correct: fromBool(t.correct), formatValid: t.formatValid ? 1 : 0 };
  }
  static segmentParams(s: SegmentRow) {
    return { ...s, finished: s.finished ? 1 : 0 };
  }
  static rewardParams(r: RewardRow) {
    return { ...r, components: JSON.stringify(r.components) };
  }
  static advantageParams(a: AdvantageRow) {
    return { ...a, weight: a.weight ?? 1 };
  }

  updateEpisodeOutcome(id: number, finalAnswer: string | null, correct: boolean | null, rounds: number): void {
    this.statements.get('UPDATE episodes SET final_answer = @finalAnswer, correct = @correct, rounds = @rounds WHERE id = @id').run({ id, finalAnswer, correct: fromBool(correct), rounds });
  }

  /**
   * Fill in a turn written before its text was known (a served model's reply streaming into its
   * segments, issue #16): the full text, its token count and how it was judged.
   */
  updateTurnResult(r: TurnResult): void {
    this.statements
      .get('UPDATE turns SET text = @text, token_count = @tokenCount, parsed = @parsed, correct = @correct, format_valid = @formatValid WHERE id = @id')
      .run({ ...r, correct: fromBool(r.correct), formatValid: r.formatValid ? 1 : 0 });
  }

  /** Drop a turn's segments (a cut stream that is sent again starts its text over). */
  discardSegments(turnId: number): void {
    this.statements.get('DELETE FROM segments WHERE turn_id = ?').run(turnId);
  }

  /** Mark one turn superseded by `attempt` (a resumed run left it unfinished and redoes it). */
  supersedeTurn(id: number, attempt: number): void {
    this.statements.get('UPDATE turns SET superseded_by = @attempt WHERE id = @id AND superseded_by IS NULL').run({ id, attempt });
  }

  getTurn(id: number): TurnView | null {
    const r = this.statements.get(`${TURN_VIEW_SELECT} WHERE t.id = ?`).get(id) as TurnViewRecord | undefined;
    return r ? toTurnView(r) : null;
  }

  /** Every turn of an episode in creation order; parent ids rebuild the tree. */
  episodeTurns(episodeId: number): TurnView[] {
    return (this.statements.get(`${TURN_VIEW_SELECT} WHERE t.episode_id = ? ORDER BY t.id`).all(episodeId) as TurnViewRecord[]).map(toTurnView);
  }

  segments(turnId: number): SegmentRow[] {
    const rows = this.statements.get(`SELECT ${SEGMENT_COLUMNS} FROM segments WHERE turn_id = ? ORDER BY seg_index`).all(turnId) as (Omit<SegmentRow, 'finished'> & { finished: number })[];
    return rows.map((r) => ({ ...r, finished: r.finished !== 0 }));
  }

  getEpisode(id: number): (EpisodeRow & { attempt: number; supersededBy: number | null }) | null {
    const r = this.statements.get('SELECT * FROM episodes WHERE id = ?').get(id) as Record<string, unknown> | undefined;
    if (!r) return null;
    return toEpisode(r);
  }

  getProblem(id: number): ProblemRow | null {
    return this.problems.problem(id);
  }

  /** Episodes in id order (keyset), served by episodes_run_step or the primary key. */
  pageEpisodes(query: EpisodePageQuery): KeysetPage<EpisodeListItem> {
    const limit = pageLimit(query.limit, 100, 1000);
    const where = ['e.run_id = @runId', 'e.id > @afterId'];
    const params: Record<string, unknown> = { runId: query.runId, afterId: query.afterId ?? 0, limit: limit + 1 };
    equalityFilters(where, params, { step: { column: 'e.step', value: query.step }, split: { column: 'e.split', value: query.split } });
    if (!query.includeSuperseded) where.push('e.superseded_by IS NULL');
    episodeFilterSql(query, where, params);
    const sql = `SELECT e.*, p.question, p.answer AS reference, (SELECT COUNT(*) FROM turns t WHERE t.episode_id = e.id) AS turn_count
      FROM episodes e LEFT JOIN problems p ON p.id = e.problem_id WHERE ${where.join(' AND ')} ORDER BY e.id LIMIT @limit`;
    const rows = (this.statements.get(sql).all(params) as Record<string, unknown>[]).map(
      (r): EpisodeListItem => ({
        ...toEpisode(r),
        question: r.question as string | null,
        reference: r.reference as string | null,
        turnCount: r.turn_count as number,
      }),
    );
    return keysetPage(rows, limit, (row) => row.id);
  }

  /**
   * One keyset page of turns in id order. Every filter combination is served by an index whose
   * trailing rowid gives the id order (turns_run, turns_run_agent, turns_run_step,
   * turns_episode); the reward filter joins on the rewards primary key.
   */
  pageTurns(query: TurnPageQuery): KeysetPage<TurnView> {
    const limit = pageLimit(query.limit, 100, 1000);
    const where = ['t.run_id = @runId', 't.id > @afterId'];
    const params: Record<string, unknown> = { runId: query.runId, afterId: query.afterId ?? 0, limit: limit + 1 };
    equalityFilters(where, params, {
      agent: { column: 't.agent', value: query.agent },
      step: { column: 't.step', value: query.step },
      episodeId: { column: 't.episode_id', value: query.episodeId },
      correct: { column: 't.correct', value: query.correct },
    });
    if (!query.includeSuperseded) where.push('t.superseded_by IS NULL');
    rangeFilters(where, params, { minReward: { column: 'r.value', op: '>=', value: query.minReward }, maxReward: { column: 'r.value', op: '<=', value: query.maxReward } });
    const sql = `${TURN_VIEW_SELECT} WHERE ${where.join(' AND ')} ORDER BY t.id LIMIT @limit`;
    const rows = (this.statements.get(sql).all(params) as TurnViewRecord[]).map(toTurnView);
    return keysetPage(rows, limit, (row) => row.id);
  }
}

const TURN_COLUMNS = camelColumns(
  ['id', 'run_id', 'episode_id', 'step', 'agent', 'policy_id', 'round', 'group_id', 'parent_turn_id', 'sample_index', 'prompt', 'text', 'token_count', 'parsed', 'correct', 'format_valid', 'policy_version_min', 'policy_version_max', 'created_at', 'attempt', 'superseded_by'],
  't',
);
const TURN_VIEW_SELECT = `SELECT ${TURN_COLUMNS}, r.value AS reward, r.components_json, a.value AS advantage, a.mode AS advantageMode, a.weight AS advantageWeight
  FROM turns t LEFT JOIN rewards r ON r.turn_id = t.id LEFT JOIN advantages a ON a.turn_id = t.id`;
const SEGMENT_COLUMNS = camelColumns(['id', 'turn_id', 'run_id', 'seg_index', 'token_start', 'token_end', 'text', 'finished', 'policy_version', 'started_at', 'ended_at', 'worker']);

/**
 * One problem, many episodes (issue 40): problems matched across runs, each run's outcome on them,
 * and one problem's episodes across the steps of the chosen runs.
 *
 * Matching: runs of the same task write the same problem under the same stable id (split, task
 * family, problem key), so that is the match. A run whose problem has another id (another
 * generator seed, an imported run whose keys are row numbers) is matched by the question text,
 * whitespace-normalized, within the same split. The held-out set (`test`) is listed first, since
 * that is where runs are compared. A problem's outcome in a run is the final answer's correctness
 * at the last step the run saw it; "differs" keeps the problems whose outcomes disagree.
 */
import type {
  ProblemEpisode,
  ProblemEpisodes,
  ProblemEpisodesQuery,
  ProblemIdentity,
  ProblemOutcomePage,
  ProblemOutcomeQuery,
  ProblemOutcomeRow,
  ProblemRunOutcome,
} from '#shared/contract';
import type { Store } from '../store';
import { ProblemEpisodesRepo, type ProblemOutcomeRecord, type ProblemRecord } from '../store/problem-episodes';
import { UnknownRunError } from './load';

/** A request that names something the runs do not hold, or asks for something they cannot answer; `field` is the request field at fault. */
export class ProblemRequestError extends Error {
  constructor(
    readonly kind: 'not_found' | 'invalid',
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'ProblemRequestError';
  }
}

/** Steps shown when none are asked for: enough rows to see a trend, few enough to read. */
export const DEFAULT_PROBLEM_STEPS = 8;

const normalizeText = (text: string) => text.trim().replace(/\s+/g, ' ');
const idKey = (p: ProblemRecord) => `id:${p.split}:${p.family}:${p.problemKey}`;
const textKey = (p: ProblemRecord) => `text:${p.split}:${normalizeText(p.question)}`;

/** A problem matched across runs: its identity and its row in each run (null where the run has none). */
export interface MatchedProblem {
  identity: ProblemIdentity;
  perRun: (ProblemRecord | null)[];
  matchedBy: ('id' | 'text' | null)[];
}

function identityOf(p: ProblemRecord, key: string, matchedBy: 'id' | 'text'): ProblemIdentity {
  return { key, matchedBy, split: p.split, family: p.family, problemKey: p.problemKey, question: p.question, answer: p.answer };
}

/**
 * Problems of several runs (`problems[i]` is run i's), matched by id, then by text: a group whose
 * runs lack the problem takes, by text, a group holding only those runs. Held-out first, then by
 * problem key (whole numbers in numeric order).
 */
export function matchProblems(problems: readonly (readonly ProblemRecord[])[]): MatchedProblem[] {
  const n = problems.length;
  const byId = new Map<string, MatchedProblem>();
  problems.forEach((rows, run) => {
    for (const p of rows) {
      const key = idKey(p);
      let group = byId.get(key);
      if (!group) byId.set(key, (group = { identity: identityOf(p, key, 'id'), perRun: Array(n).fill(null), matchedBy: Array(n).fill(null) }));
      group.perRun[run] = p;
      group.matchedBy[run] = 'id';
    }
  });
  const byText = new Map<string, MatchedProblem>();
  const out: MatchedProblem[] = [];
  for (const group of byId.values()) {
    const first = group.perRun.find((p) => p !== null)!;
    const tkey = textKey(first);
    const other = byText.get(tkey);
    if (other && group.perRun.every((p, run) => p === null || other.perRun[run] === null)) {
      group.perRun.forEach((p, run) => {
        if (p === null) return;
        other.perRun[run] = p;
        other.matchedBy[run] = 'text';
      });
      other.identity = { ...other.identity, matchedBy: 'text' };
      continue;
    }
    if (!other) byText.set(tkey, group);
    out.push(group);
  }
  return out.sort((a, b) => (a.identity.split === b.identity.split ? compareKeys(a.identity.problemKey, b.identity.problemKey) : a.identity.split === 'test' ? -1 : 1));
}

/** Keys that are whole numbers in numeric order (a dataset's row ids), others as strings: cheaper than a collator on thousands of keys. */
function compareKeys(a: string, b: string): number {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) {
    const [x, y] = [a.replace(/^0+(?=\d)/, ''), b.replace(/^0+(?=\d)/, '')];
    if (x.length !== y.length) return x.length - y.length;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A run's label beside its name: the two settings issue 40 compares (reward scheme, advantage normalization). */
export function runLabel(config: Record<string, unknown>): string {
  const at = (section: string, field: string) => ((config[section] as Record<string, unknown> | undefined)?.[field] as string | undefined) ?? '?';
  return `${at('reward', 'scheme')} / ${at('advantage', 'mode')}`;
}

function loadRunInfo(store: Store, runIds: readonly number[]) {
  return runIds.map((runId) => {
    const run = store.runs.get(runId);
    if (!run) throw new UnknownRunError(String(runId));
    return { runId, name: run.name, label: runLabel(run.config) };
  });
}

/** Outcomes differ when at least two runs have one and they are not all the same. */
export function outcomesDiffer(outcomes: readonly (ProblemRunOutcome | null)[]): boolean {
  const known = outcomes.filter((o): o is ProblemRunOutcome => o !== null && o.lastCorrect !== null).map((o) => o.lastCorrect);
  return known.length >= 2 && new Set(known).size > 1;
}

function runOutcome(runId: number, p: ProblemRecord | null, folded: Map<number, ProblemOutcomeRecord>): ProblemRunOutcome | null {
  if (!p) return null;
  const o = folded.get(p.id);
  return { runId, problemId: p.id, episodes: o?.episodes ?? 0, solved: o?.solved ?? 0, lastStep: o?.lastStep ?? null, lastCorrect: o?.lastCorrect ?? null };
}

/**
 * The matched problems of the chosen runs with each run's outcome, filtered and paged by offset:
 * the list is built whole from the runs' problems tables (written once per run, so thousands of
 * rows, not millions) and one pass over their episodes.
 */
export function listProblemOutcomes(store: Store, query: ProblemOutcomeQuery): ProblemOutcomePage {
  const runs = loadRunInfo(store, query.runIds);
  const repo = new ProblemEpisodesRepo(store.db);
  const matched = matchProblems(query.runIds.map((id) => repo.problemsOfRun(id)));
  const folded = query.runIds.map((id) => repo.outcomesOfRun(id));
  const rows: ProblemOutcomeRow[] = matched.map((m) => {
    const outcomes = m.perRun.map((p, i) => runOutcome(query.runIds[i], p, folded[i]));
    return { ...m.identity, runs: outcomes, differs: outcomesDiffer(outcomes) };
  });
  const needle = query.search?.trim().toLowerCase() ?? '';
  const kept = rows.filter(
    (r) =>
      (query.split === undefined || r.split === query.split) &&
      (!query.differs || r.differs) &&
      (needle === '' || r.question.toLowerCase().includes(needle) || r.problemKey.toLowerCase().includes(needle)),
  );
  const offset = query.cursor ?? 0;
  const limit = query.limit ?? 100;
  const items = kept.slice(offset, offset + limit);
  return {
    runs,
    items,
    nextCursor: offset + limit < kept.length ? offset + limit : null,
    total: kept.length,
    counts: { problems: rows.length, heldOut: rows.filter((r) => r.split === 'test').length, differing: rows.filter((r) => r.differs).length },
  };
}

/** Up to `max` steps spread evenly over `all` (ascending), the first and the last always among them. */
export function spreadSteps(all: readonly number[], max = DEFAULT_PROBLEM_STEPS): number[] {
  if (all.length <= max) return [...all];
  if (max === 1) return [all[all.length - 1]];
  const picked = new Set<number>();
  for (let i = 0; i < max; i++) picked.add(all[Math.round((i * (all.length - 1)) / (max - 1))]);
  return [...picked].sort((a, b) => a - b);
}

/** The anchor problem of a request: `problemId` itself, or `turnId`'s episode's problem; it must belong to one of the runs. */
function anchorProblem(repo: ProblemEpisodesRepo, query: ProblemEpisodesQuery): ProblemRecord {
  let problemId = query.problemId;
  if (query.turnId !== undefined) {
    const of = repo.problemOfTurn(query.turnId);
    if (!of) throw new ProblemRequestError('not_found', 'turnId', `turn ${query.turnId} does not exist`);
    if (of.problemId === null) throw new ProblemRequestError('invalid', 'turnId', `turn ${query.turnId} belongs to no episode with a problem; pick a turn from the trajectory browser's episodes`);
    problemId = of.problemId;
  }
  const problem = repo.problem(problemId!);
  if (!problem) throw new ProblemRequestError('not_found', 'problemId', `problem ${problemId} does not exist; list the runs' problems with listProblemOutcomes (marsrl problem RUN)`);
  if (!query.runIds.includes(problem.runId)) {
    const field = query.turnId !== undefined ? 'turnId' : 'problemId';
    throw new ProblemRequestError('invalid', 'runIds', `the ${field === 'turnId' ? `turn's problem (${problem.id})` : `problem ${problem.id}`} belongs to run ${problem.runId}, which is not among runIds [${query.runIds.join(', ')}]; add run ${problem.runId} or pick that problem's row in one of these runs`);
  }
  return problem;
}

/** The run's problem matching `anchor`: the anchor itself, by id, else by text (same split). */
function matchIn(repo: ProblemEpisodesRepo, runId: number, anchor: ProblemRecord): { problem: ProblemRecord | null; matchedBy: 'id' | 'text' | null } {
  if (runId === anchor.runId) return { problem: anchor, matchedBy: 'id' };
  const byKey = repo.problemByKey(runId, anchor.split, anchor.problemKey);
  if (byKey && byKey.family === anchor.family) return { problem: byKey, matchedBy: 'id' };
  const text = normalizeText(anchor.question);
  const byText = repo.problemsOfSplit(runId, anchor.split).find((p) => normalizeText(p.question) === text) ?? null;
  return { problem: byText, matchedBy: byText ? 'text' : null };
}

/** Every episode of one problem across the steps of the chosen runs, with their turns (rewards and advantages included). */
export function problemEpisodes(store: Store, query: ProblemEpisodesQuery): ProblemEpisodes {
  const runs = loadRunInfo(store, query.runIds);
  const repo = new ProblemEpisodesRepo(store.db);
  const anchor = anchorProblem(repo, query);
  const columns = runs.map((run) => {
    const { problem, matchedBy } = matchIn(repo, run.runId, anchor);
    const episodes = problem ? repo.episodesOfProblem(problem) : [];
    return { ...run, problemId: problem?.id ?? null, matchedBy, episodes, steps: [...new Set(episodes.map((e) => e.step))] };
  });
  const allSteps = [...new Set(columns.flatMap((c) => c.steps))].sort((a, b) => a - b);
  const steps = query.steps ? [...new Set(query.steps)].sort((a, b) => a - b) : spreadSteps(allSteps);
  const shown = new Set(steps);
  const episodes: ProblemEpisode[] = columns.flatMap((c) =>
    c.episodes.filter((e) => shown.has(e.step)).map((e) => ({ runId: c.runId, step: e.step, episode: e, turns: store.trajectories.episodeTurns(e.id) })),
  );
  const matchedByText = columns.some((c) => c.matchedBy === 'text');
  return {
    problem: identityOf(anchor, matchedByText ? textKey(anchor) : idKey(anchor), matchedByText ? 'text' : 'id'),
    runs: columns.map(({ episodes: _episodes, ...c }) => c),
    allSteps,
    steps,
    episodes,
  };
}

/**
 * `marsrl rejudge` (issue #34): a finished math run's turns judged again by today's answer
 * checker, to see whether a result rested on a checker bug. Solver and Corrector turns are
 * extracted and compared again; a Verifier turn's truth is the new verdict on the solution it
 * judged, so its correctness follows (its verdict, parsed from its text, is unchanged).
 *
 * Nothing the run stored is rewritten: its verdicts are what its rewards and updates were computed
 * from, and history. A re-judgement that is not a dry run is recorded beside them (tables
 * `rejudges` and `rejudged_turns`, schema v7, and an info event), so `marsrl show` and the run
 * page can say that the run was re-judged, by which checker, and what changed.
 */
import { roleOf } from '#shared/agents';
import type { Store } from './store';
import type { RejudgedTurnRow, TurnToRejudge } from './store/rejudges';
import { judgeMathAnswer, MATH_CHECKER_FULL_VERSION } from './tasks/math-answer';

/** A changed verdict, with what a researcher needs to read it. */
export interface ChangedVerdict extends RejudgedTurnRow {
  step: number;
  agent: string;
  split: 'train' | 'test';
  reference: string;
  /** The answer today's checker read (a Verifier's: its verdict on the judged solution). */
  answer: string | null;
}

export interface AgentTally {
  turns: number;
  /** Correct under the stored verdicts, and under today's checker. */
  before: number;
  after: number;
}

export interface RejudgeReport {
  runId: number;
  runName: string;
  /** Today's checker, and the checkers the run's attempts recorded (null: unknown, made before schema v7). */
  checkerVersion: string;
  judgedVersions: (string | null)[];
  turnsChecked: number;
  changed: ChangedVerdict[];
  /** Per split and agent (`train/solver`, `test/verifier1`, …). */
  tallies: Record<string, AgentTally>;
  /** The recorded re-judgement's id; null for a dry run. */
  rejudgeId: number | null;
}

export class RejudgeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RejudgeError';
  }
}

const PAGE = 2000;

export interface RejudgeOptions {
  /** Record the re-judgement (false: a dry run, nothing written). */
  write: boolean;
  /** Called after each page with the turns judged so far. */
  onProgress?: (turns: number) => void;
}

/** Judges a finished math run's turns again; records the result unless it is a dry run. */
export function rejudgeRun(store: Store, runId: number, options: RejudgeOptions): RejudgeReport {
  const run = store.runs.get(runId);
  if (!run) throw new RejudgeError(`no run ${runId}`);
  const family = (run.config.task as { family?: string } | undefined)?.family;
  if (family !== 'math') throw new RejudgeError(`run ${runId} is a ${JSON.stringify(family ?? '?')} run: rejudge re-checks math answers (the other families' checkers compare exact strings and have no versions)`);
  if (run.status === 'running' || run.status === 'queued') throw new RejudgeError(`run ${runId} is ${run.status}: re-judge it once it has finished or been stopped`);
  const newCorrect = new Map<number, boolean>();
  const changed: ChangedVerdict[] = [];
  const tallies: Record<string, AgentTally> = {};
  let turnsChecked = 0;
  for (let after = 0; ; ) {
    const page = store.rejudges.turnsPage(runId, after, PAGE);
    if (page.length === 0) break;
    for (const turn of page) {
      const verdict = judgeTurn(store, turn, newCorrect);
      newCorrect.set(turn.id, verdict.newCorrect);
      tally(tallies, turn, verdict.newCorrect);
      if (verdict.newCorrect !== (turn.correct ?? false)) changed.push(verdict);
    }
    turnsChecked += page.length;
    after = page[page.length - 1].id;
    options.onProgress?.(turnsChecked);
  }
  const judgedVersions = [...new Set(store.runs.attempts(runId).map((a) => a.checkerVersion))];
  const report: RejudgeReport = { runId, runName: run.name, checkerVersion: MATH_CHECKER_FULL_VERSION, judgedVersions, turnsChecked, changed, tallies, rejudgeId: null };
  if (options.write) record(store, report);
  return report;
}

function judgeTurn(store: Store, turn: TurnToRejudge, newCorrect: ReadonlyMap<number, boolean>): ChangedVerdict {
  const base = { turnId: turn.id, step: turn.step, agent: turn.agent, split: turn.split, reference: turn.reference, oldCorrect: turn.correct, oldParsed: turn.parsed };
  if (roleOf(turn.agent) === 'verifier') {
    const parent = turn.parentTurnId;
    const truth = parent === null ? null : (newCorrect.get(parent) ?? store.rejudges.storedCorrect(parent));
    const verdict = turn.parsed === 'approve' || turn.parsed === 'reject' ? turn.parsed : null;
    const right = verdict !== null && truth !== null && (verdict === 'approve') === truth;
    const reason = verdict === null ? 'no verdict' : `${verdict === 'approve' ? 'approves' : 'rejects'} a solution that is ${truth ? 'right' : 'wrong'} under today's checker`;
    return { ...base, newCorrect: right, newParsed: turn.parsed, answer: verdict, reason };
  }
  const judged = judgeMathAnswer(turn.reference, turn.text);
  return { ...base, newCorrect: judged.correct, newParsed: judged.answer, answer: judged.answer, reason: judged.reason };
}

function tally(tallies: Record<string, AgentTally>, turn: TurnToRejudge, correct: boolean): void {
  const key = `${turn.split}/${turn.agent}`;
  const t = (tallies[key] ??= { turns: 0, before: 0, after: 0 });
  t.turns++;
  if (turn.correct) t.before++;
  if (correct) t.after++;
}

function record(store: Store, report: RejudgeReport): void {
  const judgedVersion = report.judgedVersions.filter((v) => v !== null).join('; ') || null;
  report.rejudgeId = store.rejudges.record({
    runId: report.runId,
    checkerVersion: report.checkerVersion,
    judgedVersion,
    turnsChecked: report.turnsChecked,
    changes: report.changed,
    summary: { tallies: report.tallies },
  });
  store.events.log(
    report.runId,
    'info',
    'rejudged',
    `re-judged ${report.turnsChecked} turns with ${report.checkerVersion} (judged by ${judgedVersion ?? 'an unrecorded checker'}): ${report.changed.length} verdicts changed; the stored verdicts and rewards are unchanged`,
    { rejudgeId: report.rejudgeId, checkerVersion: report.checkerVersion, judgedVersion, changed: report.changed.length, turnsChecked: report.turnsChecked },
  );
}

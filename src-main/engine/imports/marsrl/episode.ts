/**
 * A worker's chain → one ImportEpisode: its calls as turns in file order, named as the Studio
 * names agents (src-shared/agents.ts): the Solver `solver` (round 0, every `step1` try), the r-th
 * Verifier call `verifier<r>`, the Corrector after it `corrector<r>`. MarsRL re-verifies one
 * solution several times; each verification is its own round, as each would be in the Studio's
 * unrolled chain.
 */
import { agentName, type Role } from '#shared/agents';
import { extractFinalAnswer, judgeMathAnswer } from '../../tasks/math-answer';
import type { ImportEpisode, ImportProblem, ImportTurn } from '../types';
import { answerPart, marsVerdict, promptText, statementOf, type MarsCall } from './calls';
import { ROLE_OF_REASON, SOLUTION_REASONS, type Replay } from './chain';
import type { CallFile, InputRow } from './folder';

/** Turns of the calls, in order, with the Studio's agent names and MarsRL's verdicts. */
export function chainTurns(file: CallFile, calls: readonly MarsCall[]): ImportTurn[] {
  let round = 0;
  return calls.map((call) => {
    const role: Role | undefined = ROLE_OF_REASON[call.callReason];
    if (role === 'verifier') round++;
    const turnRound = role === 'solver' ? 0 : Math.max(round, 1);
    return {
      agent: role ? agentName(role, turnRound) : 'unknown',
      role: role ?? null,
      round: turnRound,
      prompt: promptText(call),
      text: call.text,
      finishReason: call.finishReason,
      tokens: call.completionTokens,
      reward: null,
      advantage: null,
      verdict: role === 'verifier' ? marsVerdict(call.text) : null,
      meta: { status_code: call.statusCode, stop_reason: call.stopReason, call_reason: call.callReason, worker: file.worker, file: file.name, line: call.line },
    };
  });
}

/** The solution the chain ended on: the last Solver or Corrector reply that finished (`stop`), as MarsRL keeps it. */
function lastSolution(calls: readonly MarsCall[]): string | null {
  for (let k = calls.length - 1; k >= 0; k--) {
    const call = calls[k];
    if (SOLUTION_REASONS.includes(call.callReason) && call.finishReason === 'stop') return answerPart(call.text);
  }
  return null;
}

function problemOf(file: CallFile, calls: readonly MarsCall[], row: InputRow | null): ImportProblem {
  const step1 = calls.find((call) => call.callReason === 'step1');
  return {
    key: row?.qid !== undefined && row.qid !== null ? String(row.qid) : String(file.idx),
    question: row?.query ?? (step1 ? (statementOf(step1) ?? '') : ''),
    answer: row?.ansBox ?? '',
    meta: { idx: file.idx, qid: row?.qid ?? null, data_source: row?.dataSource ?? null, source: row?.source ?? null },
  };
}

/** Each finished Solver or Corrector reply's own answer, judged against `ans_box` (a MarsRL chain shows how the answer changed). */
function judgedTurns(turns: ImportTurn[], calls: readonly MarsCall[], reference: string): ImportTurn[] {
  return turns.map((turn, k) => {
    const call = calls[k];
    if (turn.role === 'verifier' || turn.role === null || !SOLUTION_REASONS.includes(call.callReason) || call.finishReason !== 'stop') return turn;
    const solution = answerPart(call.text);
    return { ...turn, answer: extractFinalAnswer(solution).answer, correct: reference === '' ? null : judgeMathAnswer(reference, solution).correct };
  });
}

/**
 * The episode. MarsRL's outputs are inference (the V-C reasoning system evaluated on a test
 * corpus, README "V-C Reasoning System Evaluation"), never training rollouts: split `test`, step 0.
 */
export function chainEpisode(file: CallFile, calls: readonly MarsCall[], replay: Replay, row: InputRow | null): ImportEpisode {
  const solution = lastSolution(calls);
  const answer = row?.ansBox ?? '';
  return {
    split: 'test',
    step: 0,
    problem: problemOf(file, calls, row),
    turns: judgedTurns(chainTurns(file, calls), calls, answer),
    finalAnswer: solution === null ? null : extractFinalAnswer(solution).answer,
    correct: answer === '' ? null : solution !== null && judgeMathAnswer(answer, solution).correct,
    group: null,
    meta: {
      outcome: replay.outcome ?? 'unknown',
      accepted: replay.outcome === 'accepted',
      abandoned: replay.outcome === 'abandoned',
      approvals: replay.approvals,
      errors: replay.errors,
      idx: file.idx,
      worker: file.worker,
      file: file.name,
      data_source: row?.dataSource ?? null,
      source: row?.source ?? null,
    },
  };
}

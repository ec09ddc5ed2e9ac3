/**
 * A worker's chain of calls replayed through MarsRL's own loop (vc_reasoning_system.py,
 * Agent.init_explorations and Agent._run_one_worker), to know where MarsRL ended it and how.
 *
 * The loop, as written there:
 *  - the Solver (`step1`) is called up to 3 times until a reply finishes with `stop`; none → exit;
 *  - the first Verifier call, then `correct_count = 1`, `error_count = 0` (the first verify counts
 *    as one approval when it approves; a rejection resets it to 0 below);
 *  - 10 iterations: a rejected solution → `correct_count = 0`, `error_count += 1`, a Corrector call
 *    (`correction`; not `stop` → exit), then a Verifier call; an approval → `correct_count += 1`,
 *    `error_count = 0`; `correct_count >= 4` → accepted; `error_count >= 10` → abandoned;
 *  - the 10 iterations spent → failed (neither).
 * A chain is ended when this replay reaches one of those exits; before that MarsRL is still
 * running it (or was stopped), and more calls may come.
 */
import type { MarsCall } from './calls';
import { marsVerdict } from './calls';

export type ChainOutcome =
  /** 4 consecutive approvals: MarsRL's "Correct solution found". */
  | 'accepted'
  /** 10 consecutive rejections (`error_count >= 10`). */
  | 'abandoned'
  /** 10 iterations without either. */
  | 'exhausted'
  /** No Solver reply finished in 3 tries, or a Corrector's reply did not finish (`finish_reason` not `stop`). */
  | 'unfinished-reply';

export interface Replay {
  /** Null while MarsRL has not ended the chain (calls missing), or when the calls are not in its order. */
  outcome: ChainOutcome | null;
  /** Calls the loop used (those after are not MarsRL's). */
  used: number;
  /** The first call not in MarsRL's order: its index and the call_reason the loop makes there. */
  unexpected: { index: number; expected: string } | null;
  approvals: number;
  errors: number;
}

const STEP1 = 'step1';
const VERIFY = 'verify_solution';
const CORRECTION = 'correction';

/** Why the replay stops before an exit: the calls ran out, or one is not what the loop calls next. */
class Stop {
  constructor(readonly unexpected: Replay['unexpected']) {}
}

class Calls {
  used = 0;
  approvals = 0;
  errors = 0;
  constructor(private readonly calls: readonly MarsCall[]) {}

  take(reason: string): MarsCall {
    const call = this.calls[this.used];
    if (call === undefined) throw new Stop(null);
    if (call.callReason !== reason) throw new Stop({ index: this.used, expected: reason });
    this.used++;
    return call;
  }

  verify(): boolean {
    return marsVerdict(this.take(VERIFY).text);
  }
}

/** Where and how MarsRL ended this chain (see the file comment). */
export function replayChain(calls: readonly MarsCall[]): Replay {
  const state = new Calls(calls);
  try {
    const outcome = runLoop(state);
    return { outcome, used: state.used, unexpected: null, approvals: state.approvals, errors: state.errors };
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
    return { outcome: null, used: state.used, unexpected: error.unexpected, approvals: state.approvals, errors: state.errors };
  }
}

function runLoop(state: Calls): ChainOutcome {
  let complete = false;
  for (let tries = 0; tries < 3 && !complete; tries++) complete = state.take(STEP1).finishReason === 'stop';
  if (!complete) return 'unfinished-reply';
  let approved = state.verify();
  state.approvals = 1;
  for (let iteration = 0; iteration < 10; iteration++) {
    if (!approved) {
      state.approvals = 0;
      state.errors++;
      if (state.take(CORRECTION).finishReason !== 'stop') return 'unfinished-reply';
    }
    approved = state.verify();
    if (approved) {
      state.approvals++;
      state.errors = 0;
    }
    if (state.approvals >= 4) return 'accepted';
    if (state.errors >= 10) return 'abandoned';
  }
  return 'exhausted';
}

/** Calls that produce a solution (extract_solution.py counts `step1`, `step2_refine` and `correction` as such). */
export const SOLUTION_REASONS: readonly string[] = [STEP1, 'step2_refine', CORRECTION];
export const ROLE_OF_REASON: Readonly<Record<string, 'solver' | 'verifier' | 'corrector'>> = {
  [STEP1]: 'solver',
  [VERIFY]: 'verifier',
  [CORRECTION]: 'corrector',
};

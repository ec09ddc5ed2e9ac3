/**
 * Typed messages between a pipelined run's trainer and its rollout process. Plain data that the
 * structured clone carries (Node's `advanced` IPC serialization, Electron's postMessage, or
 * `structuredClone` in one process); weights are one Float32Array per policy, whose ArrayBuffer
 * goes in the transfer list (moved without a copy where the channel allows it, copied once by the
 * IPC layer between processes).
 *
 *   rollout → trainer: `hello`; `ready` once the starting weights are in; then per step one
 *                      `batch` per agent as each finishes and one `step-done`; `failed` when
 *                      the rollout cannot go on.
 *   trainer → rollout: `init` (every policy's weights and the first step), `weights` after every
 *                      trained batch, `evaluate` (its share of a held-out evaluation, with the
 *                      weights to evaluate), `gradients` (parts of a minibatch offered for their
 *                      gradients, with the weights to differentiate) and `gradients-claimed`,
 *                      `stop` when the run ends for any reason.
 *   rollout → trainer: `evaluated` with the chains of its share; `gradients-started` and
 *                      `gradients-done` per offered part it takes (the gradient as one
 *                      Float32Array laid out as the weights, moved).
 */
import type { Role } from '#shared/agents';
import type { EvalChain, EvalPart, FixedSolution } from './evaluate';
import type { ModelIdentity, PolicyModelSource } from './policies';
import type { PolicySample, PpoOptions, PpoPartSums } from './ppo';
import type { RolloutTurn } from './rollout';

export interface PolicyWeights {
  policyId: string;
  /** How to rebuild the policy's model and tokenizer (either family); the trainable weights follow. */
  source: PolicyModelSource;
  /** The model the policy started from (kept with the copy, as the trainer has it). */
  identity: ModelIdentity;
  weights: Float32Array;
  /** The trainer's version of these weights (RL updates applied). */
  version: number;
  /** Planned updates consumed so far (see queues.ts); ≥ version − the base. */
  slot: number;
}

export type TrainerToRollout =
  | { type: 'init'; startStep: number; policies: PolicyWeights[] }
  | ({ type: 'weights' } & PolicyWeights)
  /**
   * Run these parts of the evaluation at step `at` with exactly these weights; with `fixed`, also
   * judge and repair the run's fixed set (evaluate.ts fixedSetMetrics).
   */
  | { type: 'evaluate'; at: number; parts: EvalPart[]; policies: PolicyWeights[]; fixed?: FixedSolution[] }
  /**
   * Parts of a minibatch of `minibatchTokens` response tokens offered for their PPO gradients, in
   * the order to take them: the rollout takes them one at a time (`gradients-started` before each)
   * until they are all done or the trainer has claimed the rest (`gradients-claimed`).
   */
  | { type: 'gradients'; id: number; agent: string; step: number; policy: PolicyWeights; parts: PolicySample[][]; options: PpoOptions; minibatchTokens: number }
  /** The trainer computes the parts of offer `id` from index `from` on: take only those before it. */
  | { type: 'gradients-claimed'; id: number; from: number }
  | { type: 'stop'; reason: string };

/** One turn as sent to the trainer: its episode (index in the step's problems) and the turn. */
export interface BatchTurn {
  episode: number;
  turn: RolloutTurn;
}

export interface EpisodeSummary {
  finalAnswer: string | null;
  correct: boolean;
  rounds: number;
  chains: number[][];
}

export type RolloutToTrainer =
  | { type: 'hello'; worker: string; pid: number }
  /** The starting weights are in: the rollout begins (the trainer may now evaluate). */
  | { type: 'ready' }
  | {
      type: 'batch';
      step: number;
      agent: string;
      role: Role;
      policyId: string;
      /** The slot the rollout planned this batch at (the trainer must be there when it starts it). */
      slot: number;
      /** Planned updates for this batch. */
      updates: number;
      turns: BatchTurn[];
    }
  | {
      type: 'step-done';
      step: number;
      problemKeys: string[];
      episodes: EpisodeSummary[];
      /** The turns of served, frozen agents (issue #16): scored and stored like the others, never trained (no batch). */
      servedTurns: BatchTurn[];
      /**
       * Wall time of the step's rollout, the part of it spent waiting for newer weights, and the
       * parts spent on the trainer's evaluation and gradient requests.
       */
      rolloutMs: number;
      waitMs: number;
      evalMs: number;
      gradientMs: number;
    }
  | { type: 'evaluated'; at: number; chains: Partial<Record<EvalPart, EvalChain[]>>; fixedMetrics?: Record<string, number> }
  | { type: 'gradients-started'; id: number; part: number }
  | { type: 'gradients-done'; id: number; part: number; flatGrads: Float32Array; sums: PpoPartSums }
  | { type: 'failed'; message: string };

/** One side of the trainer ↔ rollout channel. */
export interface Endpoint<In, Out> {
  send(message: Out, transfer?: ArrayBuffer[]): void;
  onMessage(listener: (message: In) => void): void;
  /** Resolves when every message sent so far has left this process (absent: nothing to wait for). */
  flush?(): Promise<void>;
}

export type TrainerEndpoint = Endpoint<RolloutToTrainer, TrainerToRollout>;
export type RolloutEndpoint = Endpoint<TrainerToRollout, RolloutToTrainer>;

/**
 * Both ends of a channel inside one process (tests, and `trainRun` called directly in pipeline
 * mode): messages are structured-cloned, as between processes, and delivered on a later turn of
 * the event loop.
 */
export function inProcessChannel(): { trainer: TrainerEndpoint; rollout: RolloutEndpoint } {
  const toTrainer: ((m: RolloutToTrainer) => void)[] = [];
  const toRollout: ((m: TrainerToRollout) => void)[] = [];
  const deliver = <M>(listeners: ((m: M) => void)[], message: M, transfer?: ArrayBuffer[]) => {
    const copy = structuredClone(message, transfer ? { transfer } : undefined);
    setImmediate(() => listeners.forEach((l) => l(copy)));
  };
  return {
    trainer: { send: (m, t) => deliver(toRollout, m, t), onMessage: (l) => toTrainer.push(l) },
    rollout: { send: (m, t) => deliver(toTrainer, m, t), onMessage: (l) => toRollout.push(l) },
  };
}

/**
 * Messages received and not yet taken, with a way to wait for the next one. Waiting ends early
 * when `signal` aborts.
 */
export class Inbox<M> {
  private readonly items: M[] = [];
  private wake: (() => void) | null = null;

  push(message: M): void {
    this.items.push(message);
    this.notify();
  }

  /** Wake a waiter without a message (e.g. the run was stopped). */
  notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Take every message received so far. */
  drain(): M[] {
    return this.items.splice(0, this.items.length);
  }

  /** Take the first message that matches, if one has arrived. */
  take<T extends M>(match: (m: M) => m is T): T | undefined {
    const i = this.items.findIndex(match);
    return i < 0 ? undefined : (this.items.splice(i, 1)[0] as T);
  }

  get size(): number {
    return this.items.length;
  }

  /** Resolves when a message arrives (or has already arrived), on `notify`, or when `signal` aborts. */
  wait(signal?: AbortSignal): Promise<void> {
    if (this.items.length > 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

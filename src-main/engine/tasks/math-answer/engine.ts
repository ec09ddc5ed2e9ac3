/**
 * The compute-engine side of the checker (issue #34): one engine, rewound after every comparison,
 * with the engine's own time limit as the soft bound (the thread's caller holds the hard one).
 *
 * Purity: `ComputeEngine` learns from what it parses (after `r(7,11)` the symbol r is a function,
 * and `(r+5)(r+5)` no longer reads as a product), so a checkpoint is taken right after the engine
 * is built and restored before every comparison: each comparison starts from the state of a
 * freshly built engine (test/tasks/math-answer-purity.test.ts plants such state and checks both
 * that it leaks without the rewind and that it does not with it).
 */
import { createRequire } from 'node:module';
import type { ComputeEngine } from '@cortex-js/compute-engine';
import { judgeAnswers, type AnswerVerdict } from './judge';
import { EngineOracle } from './values';

/** The compute-engine release the checker is written and versioned against (package.json pins it). */
export const COMPUTE_ENGINE_VERSION = '0.140.0';

export interface EngineVerdict extends AnswerVerdict {
  timedOut: boolean;
}

type Checkpoint = ReturnType<ComputeEngine['checkpoint']>;

/** A built engine: 0.3–0.5 s to import, 0.1–0.3 s to construct, so it is built once per thread. */
export function buildEngine(): ComputeEngine {
  const { ComputeEngine: Engine } = createRequire(import.meta.url)('@cortex-js/compute-engine') as typeof import('@cortex-js/compute-engine');
  return new Engine();
}

export class RewoundEngine {
  private readonly checkpoint: Checkpoint;

  constructor(
    private readonly ce: ComputeEngine = buildEngine(),
    /** Rewind before each comparison; false only to show, in the purity test, what the rewind prevents. */
    private readonly rewind = true,
  ) {
    this.checkpoint = ce.checkpoint('math-answer: fresh engine');
  }

  /** Compares two extracted answers within `softLimitMs` of the engine's own time. */
  judge(reference: string, answer: string, softLimitMs: number): EngineVerdict {
    if (this.rewind) this.ce.restore(this.checkpoint);
    try {
      const verdict = this.ce.withTimeLimit({ ms: softLimitMs, label: 'math-answer' }, () => judgeAnswers(reference, answer, new EngineOracle(this.ce)));
      return { ...verdict, timedOut: false };
    } catch (error) {
      const cancelled = (error as Error)?.name === 'CancellationError';
      return {
        equal: false,
        reason: cancelled ? `timeout: over the ${softLimitMs} ms budget of one comparison` : `the engine failed: ${(error as Error)?.message ?? String(error)}`,
        readReference: reference,
        readAnswer: answer,
        timedOut: cancelled,
      };
    }
  }

  /** The engine itself (the purity test plants state in it). */
  get engine(): ComputeEngine {
    return this.ce;
  }
}

/**
 * What the synchronous and the pipelined training loops share around an RL step: the run they
 * work in, and the end of a step (its metrics, then the evaluation and the checkpoint when due),
 * so a step ends the same way in either mode.
 */
import { saveRunCheckpoint } from './checkpoints';
import type { PolicyRuntime } from './policies';
import type { ProblemIds } from './records';
import type { RunShell } from './run-shell';
import type { TaskData } from './task-data';
import type { UpdateContext } from './update';

/** What the synchronous and the pipelined training loops both work with. */
export interface RunContext extends RunShell {
  worker: string;
  data: TaskData;
  problemIds: ProblemIds;
  policies: Map<string, PolicyRuntime>;
  checkpointRoot: string;
  update: UpdateContext;
  /** Write the served pool's metrics at a step (nothing when no role is served, or another process writes them). */
  poolMetrics: (at: number) => void;
}

/**
 * The end of RL step `step`: its metrics and the pool's are written and flushed before progress
 * reports them; then the held-out evaluation at step + 1 when `eval.every` says (the last step's
 * is the run's final one, made by the caller) and the checkpoint when `checkpoint_every` says or
 * the step is the last. False when the run was stopped during the evaluation.
 */
export async function endStep(run: RunContext, step: number, metrics: Record<string, number>, evaluate: (at: number) => Promise<boolean>): Promise<boolean> {
  const { config, writer, runId } = run;
  for (const [key, value] of Object.entries(metrics)) writer.metric({ runId, step, wallTime: run.wallTime(), key, value });
  run.poolMetrics(step);
  writer.flush();
  run.progress({ phase: 'rl', step: step + 1, totalSteps: config.optimization.steps, metrics });

  const isLast = step === config.optimization.steps - 1;
  if (!isLast && config.eval.every > 0 && (step + 1) % config.eval.every === 0) {
    if (!(await evaluate(step + 1))) return false;
  }
  if (isLast || (config.optimization.checkpoint_every > 0 && (step + 1) % config.optimization.checkpoint_every === 0)) {
    await saveRunCheckpoint(run.store, runId, run.checkpointRoot, run.policies, config, step, metrics);
  }
  return true;
}

/**
 * A training run's held-out evaluations: run here (the synchronous loop), or split between the
 * trainer and the pipeline's rollout process (pipeline-trainer.ts evaluateSplit), and recorded
 * the same way: metrics, the fixed judged set's metrics, the greedy chains as test-split episodes,
 * and the time this process spent as 'eval' spans of the timeline.
 */
import type { Role } from '#shared/agents';
import { evaluateAsync, evaluatePartAsync, fixedSetFrom, fixedSetMetrics, type EvalChain, type EvalPart, type EvaluationResult, type FixedSolution } from './evaluate';
import type { PolicyRuntime } from './policies';
import { logEvalEpisodes, type ProblemIds } from './records';
import type { ServedRole } from '../served/roles';
import type { RunShell } from './run-shell';
import { evaluationSet, type TaskData } from './task-data';

/** The event that keeps a run's fixed judged set of Solver answers. */
export const FIXED_SET_EVENT = 'eval_fixed_set';

export interface RunEvaluations {
  /** Evaluate the current policies here and store the result at step `at`. */
  run(at: number): Promise<Record<string, number>>;
  /** Run one part of the held-out evaluation here, with this process's current weights. */
  part(part: EvalPart): Promise<EvalChain[]>;
  /** Store an evaluation at step `at` (its metrics, its greedy chains, the span this process spent). */
  record(at: number, result: EvaluationResult, startedAt: number, endedAt: number, fixedMetrics?: Record<string, number>): Promise<Record<string, number>>;
  /** The run's fixed judged set, once the first evaluation has made it. */
  fixedSet(): FixedSolution[] | null;
}

export function runEvaluations(
  shell: RunShell,
  worker: string,
  data: TaskData,
  problemIds: ProblemIds,
  roles: Record<Role, PolicyRuntime>,
  served: Partial<Record<Role, ServedRole>>,
): RunEvaluations {
  const { store, runId, config, writer } = shell;
  const evalSet = evaluationSet(config, data);
  const evalContext = { family: data.family, policies: roles, served, config };
  // The fixed judged set (evaluate.ts): made by the run's first evaluation, kept in the store so
  // that a resumed run judges the same answers.
  let fixedSet = (store.events.latestOfKind(runId, FIXED_SET_EVENT)?.data?.solutions as FixedSolution[] | undefined) ?? null;
  const evalSpan = (at: number, startedAt: number, endedAt: number) =>
    writer.timelineSpan({ runId, kind: 'eval', agent: 'system', worker, step: at, policyVersion: roles.solver?.version ?? 0, startedAt, endedAt, tokens: 0 });

  const record = async (at: number, result: EvaluationResult, startedAt: number, endedAt: number, fixedMetrics?: Record<string, number>) => {
    if (fixedMetrics) Object.assign(result.metrics, fixedMetrics);
    else if (config.rollout.rounds > 0) {
      if (!fixedSet) {
        fixedSet = fixedSetFrom(evalSet.problems, result.sampledChains);
        store.events.log(runId, 'info', FIXED_SET_EVENT, `fixed judged set: the Solver's ${fixedSet.length} sampled answers to the held-out problems at step ${at}`, { solutions: fixedSet }, at);
      }
      const fixedStart = Date.now();
      Object.assign(result.metrics, await fixedSetMetrics(evalContext, evalSet.problems, fixedSet, evalSet.seed));
      // Evaluation time like the rest (the pipeline bench's RL clock starts after it).
      evalSpan(at, fixedStart, Date.now());
    }
    for (const [key, value] of Object.entries(result.metrics)) writer.metric({ runId, step: at, wallTime: shell.wallTime(), key, value });
    evalSpan(at, startedAt, endedAt);
    logEvalEpisodes(writer, problemIds, runId, at, result.greedyChains);
    writer.flush();
    shell.progress({ phase: 'eval', step: at, totalSteps: config.optimization.steps, metrics: result.metrics });
    return result.metrics;
  };

  return {
    run: async (at) => {
      const t0 = Date.now();
      const result = await evaluateAsync(evalContext, evalSet.problems, evalSet.seed);
      return record(at, result, t0, Date.now());
    },
    part: (part) => evaluatePartAsync(evalContext, evalSet.problems, evalSet.seed, part),
    record,
    fixedSet: () => fixedSet,
  };
}

/**
 * The synchronous loop (`pipeline.mode: sync`, the baseline): per step, every agent's rollouts,
 * then scoring, the step's rows, and one PPO update per agent in chain order.
 *
 * Why one update per agent: the per-agent gradient norm before clipping is the Dr. MAS
 * diagnostic, and updating each agent's turns as its own minibatch measures it exactly; agents
 * sharing a policy (Verifier1/Verifier2, or one shared policy) update it in turn.
 */
import type { Role } from '#shared/agents';
import type { PolicyRuntime } from './policies';
import { logEpisodes } from './records';
import type { ServedRole } from '../served/roles';
import { responseLength, rolloutEpisodesAsync, type RolloutEpisode, type RolloutTurn } from './rollout';
import type { RunEvaluations } from './run-evaluation';
import { yieldToEventLoop } from './run-shell';
import { scoreEpisodes, type ScoredEpisode } from './scoring';
import { rolloutMetrics } from './step-metrics';
import { endStep, type RunContext } from './steps';
import { stepProblems } from './task-data';
import { updateAgent } from './update';

export interface SyncRun extends RunContext {
  roles: Record<Role, PolicyRuntime>;
  /** Roles played by served models: in the rollout, never in the update loop. */
  served: Partial<Record<Role, ServedRole>>;
  evaluations: RunEvaluations;
}

export type SyncOutcome = { status: 'done' } | { status: 'interrupted'; step: number; reason: string };

/** Evaluation before the first step, the steps, and the final evaluation. */
export async function trainSync(run: SyncRun): Promise<SyncOutcome> {
  const { config, signal, cursor } = run;
  if (cursor.step === 0) await run.evaluations.run(0);
  const evaluate = async (at: number) => {
    await run.evaluations.run(at);
    return true;
  };
  for (; cursor.step < config.optimization.steps; cursor.step++) {
    const step = cursor.step;
    // Training is synchronous compute: yield once per step so stop messages and signals are
    // delivered (a worker's event loop would otherwise only see them after the last step).
    await yieldToEventLoop();
    if (signal?.aborted) return { status: 'interrupted', step, reason: String(signal.reason ?? 'stopped') };
    await endStep(run, step, await syncStep(run, step), evaluate);
  }
  if (config.optimization.steps > 0 || cursor.step === 0) await run.evaluations.run(config.optimization.steps);
  return { status: 'done' };
}

/** One step: rollouts → scores → the step's rows → one update per agent; returns the step's metrics. */
async function syncStep(run: SyncRun, step: number): Promise<Record<string, number>> {
  const { config, writer, runId, worker, data } = run;
  const { problems, seed } = stepProblems(config, data, step);
  const rolloutStart = Date.now();
  const episodes = await rolloutEpisodesAsync(
    {
      family: data.family,
      policies: run.roles,
      served: run.served,
      config,
      onSegment: (s) => writer.timelineSpan({ runId, kind: 'segment', agent: s.agent, worker, step, policyVersion: s.policyVersion, startedAt: s.startedAt, endedAt: s.endedAt, tokens: s.tokens }),
    },
    problems,
    seed,
  );
  const rolloutMs = Date.now() - rolloutStart;
  const scored = scoreEpisodes(config, episodes);
  logEpisodes(writer, run.problemIds, runId, step, episodes, scored, worker, config);
  const metrics = rolloutMetrics(config, episodes, scored);

  // One PPO update per agent, in chain order.
  const updateStart = Date.now();
  for (const [agent, items] of turnsByAgent(episodes, scored)) {
    if (run.signal?.aborted) break;
    // A served agent is frozen: its turns are scored and stored, never trained.
    if (run.served[items[0].turn.role]) continue;
    Object.assign(metrics, await updateAgent(run.update, agent, run.roles[items[0].turn.role], items, step));
  }
  const updateMs = Date.now() - updateStart;
  const stepTokens = episodes.reduce((a, e) => a + e.turns.reduce((b, t) => b + responseLength(t), 0), 0);
  metrics['perf/rollout_s'] = rolloutMs / 1000;
  metrics['perf/update_s'] = updateMs / 1000;
  metrics['perf/tokens_per_s'] = stepTokens / Math.max((rolloutMs + updateMs) / 1000, 1e-3);
  metrics['pipeline/staleness'] = 0;
  return metrics;
}

/** Each agent's turns of the step with their advantages, agents in the order they first speak. */
function turnsByAgent(episodes: readonly RolloutEpisode[], scored: readonly ScoredEpisode[]): Map<string, { turn: RolloutTurn; advantage: number }[]> {
  const byAgent = new Map<string, { turn: RolloutTurn; advantage: number }[]>();
  episodes.forEach((episode, e) =>
    episode.turns.forEach((turn, i) => {
      const list = byAgent.get(turn.agent) ?? [];
      list.push({ turn, advantage: scored[e].advantages[i].value });
      byAgent.set(turn.agent, list);
    }),
  );
  return byAgent;
}

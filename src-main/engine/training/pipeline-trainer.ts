/**
 * The trainer side of a pipelined run (`pipeline.mode: pipeline`). The rollout (another process,
 * or this one when `trainRun` is called directly) sends each agent's turns of a step as soon as
 * that agent's group is complete; they enter the agent's training queue, and the trainer takes
 * the oldest ready batch (queues.ts), scores it, applies the same PPO update per agent as the
 * synchronous trainer, and sends the policy's new weights back, while the rollout goes on.
 *
 * When scoring waits. With decoupled rewards and agentwise (or no-std) advantages a batch is
 * scored and trained the moment it arrives: the Solver's group trains while the Verifier
 * generates. A shared reward needs the episode's outcome and global / agent-mean / agent-std
 * advantages need every agent's rewards of the prompt, so then a step's batches wait until the
 * step's last agent has finished, and are scored with exactly the synchronous `scoreEpisodes`.
 *
 * A step ends (in arrival order, after its last batch): its episodes, turns, segments, rewards and
 * advantages are written in one batch, then its metrics, then evaluation and checkpoint when due,
 * as in the synchronous loop. Evaluations are split between the two processes (evaluateSplit), and
 * so is each minibatch's gradient when `pipeline.gradient_share` > 0: its back parts are offered to
 * the rollout, which takes them between segments or while it waits (run-support.ts minibatchStep)
 * and computes them with a copy of the exact current weights while this process computes the rest;
 * the parts add up to the whole minibatch's gradient (ppo.ts). Off-policy segments are not dropped: PPO's ratio uses each token's
 * stored behaviour log-probability, and the staleness of every batch is logged
 * (`<agent>/staleness`, `pipeline/staleness`).
 */
import { evaluationMetrics, evaluationParts, type EvalChain, type EvalPart, type EvaluationResult, type FixedSolution } from './evaluate';
import { Inbox, inProcessChannel, type PolicyWeights, type RolloutToTrainer, type TrainerEndpoint } from './pipeline-protocol';
import type { PpoRemotePart } from './ppo';
import { runRolloutLoop } from './pipeline-rollout';
import { readWeights } from '../model/readback';
import type { PolicyRuntime } from './policies';
import type { EndpointPool } from '../served/pool';
import { scoringScope, TrainingQueues } from './queues';
import type { RolloutEpisode } from './rollout';
import {
  logEpisodes,
  rolloutMetrics,
  saveRunCheckpoint,
  scoreAgentTurns,
  scoreEpisodes,
  stepProblems,
  updateAgent,
  yieldToEventLoop,
  type GradientOffload,
  type RunContext,
  type ScoredEpisode,
} from './run-support';
import { minNumber } from '../util/arrays';

type BatchMessage = Extract<RolloutToTrainer, { type: 'batch' }>;
type StepDone = Extract<RolloutToTrainer, { type: 'step-done' }>;

export interface PipelineRun extends RunContext {
  startStep: number;
  /** The rollout process's end of the channel; null runs the rollout in this process. */
  endpoint: TrainerEndpoint | null;
  /** Run one part of the held-out evaluation here, with this process's current weights. */
  evaluatePart: (part: EvalPart) => Promise<EvalChain[]>;
  /** Store an evaluation (metrics, greedy chains, this process's span). */
  recordEvaluation: (at: number, result: EvaluationResult, startedAt: number, endedAt: number, fixedMetrics?: Record<string, number>) => Promise<unknown>;
  /** The run's fixed judged set, once the first evaluation has made it. */
  fixedSet: () => FixedSolution[] | null;
  /** The run's pool of served models (issue #16), lent to a rollout in this process; null when no role is served. */
  pool: EndpointPool | null;
  /** Write the pool's metrics at a step. */
  poolMetrics: (at: number) => void;
  onStep: (step: number, metrics: Record<string, number>) => void;
}

export type PipelineOutcome = { status: 'done' } | { status: 'interrupted'; step: number; reason: string };

interface StepState {
  episodes: RolloutEpisode[];
  scored: ScoredEpisode[];
  scoredWhole: boolean;
  metrics: Record<string, number>;
  updateMs: number;
  staleness: number;
  tokens: number;
}

/** Thrown when the rollout reports that it cannot go on. */
export class RolloutFailedError extends Error {}

/** The run was stopped while the trainer waited for the rollout's share of a gradient. */
class PipelineStopped extends Error {}

export async function trainPipelined(run: PipelineRun): Promise<PipelineOutcome> {
  const { config, writer, runId, signal, policies } = run;
  const { scope } = scoringScope(config);
  const own = run.endpoint ? null : inProcessChannel();
  const endpoint = run.endpoint ?? own!.trainer;
  const inbox = new Inbox<RolloutToTrainer>();
  endpoint.onMessage((m) => inbox.push(m));

  let rolloutTask: Promise<void> | null = null;
  if (own) {
    const rolloutEnd = own.rollout;
    rolloutTask = runRolloutLoop({
      config,
      endpoint: rolloutEnd,
      worker: `${run.worker}/rollout`,
      signal,
      pool: run.pool,
      timeline: (span) => writer.timelineSpan({ ...span, runId }),
    }).catch((error: unknown) => rolloutEnd.send({ type: 'failed', message: error instanceof Error ? error.message : String(error) }));
  }

  const queues = new TrainingQueues<BatchMessage>(scope);
  const stepDone = new Map<number, StepDone>();
  const states = new Map<number, StepState>();
  const slots = new Map<string, number>([...policies].map(([id, p]) => [id, p.version]));
  let rolloutWorker: string | null = null;
  let rolloutReady = false;
  /** Gradient offers not yet settled: how many parts the rollout has started, and the parts it has done. */
  const openOffers = new Map<number, { started: number; done: Map<number, Extract<RolloutToTrainer, { type: 'gradients-done' }>> }>();
  const evaluated = new Map<number, Extract<RolloutToTrainer, { type: 'evaluated' }>>();
  let nextGradientId = 0;
  let failure: string | null = null;
  let idleMs = 0;
  let stopReason = 'the run ended';

  const handle = () => {
    for (const m of inbox.drain()) {
      if (m.type === 'hello') rolloutWorker = m.worker;
      else if (m.type === 'ready') rolloutReady = true;
      else if (m.type === 'evaluated') evaluated.set(m.at, m);
      else if (m.type === 'gradients-started') {
        const offer = openOffers.get(m.id);
        if (offer) offer.started = Math.max(offer.started, m.part + 1);
      } else if (m.type === 'gradients-done') openOffers.get(m.id)?.done.set(m.part, m);
      else if (m.type === 'batch') {
        // The turns join their episodes on arrival: episode-scoped scoring reads every agent's.
        const s = stateOf(m.step);
        for (const { episode, turn } of m.turns) s.episodes[episode].turns[turn.index] = turn;
        queues.push(m);
      } else if (m.type === 'step-done') {
        const s = stateOf(m.step);
        for (const { episode, turn } of m.servedTurns) s.episodes[episode].turns[turn.index] = turn;
        stepDone.set(m.step, m);
        queues.stepComplete(m.step);
      } else if (m.type === 'failed') failure = m.message;
    }
    if (failure !== null) throw new RolloutFailedError(`the rollout failed: ${failure}`);
  };
  /** Wait for the next message; false when the run was stopped. */
  const pump = async (): Promise<boolean> => {
    const t0 = Date.now();
    await inbox.wait(signal);
    idleMs += Date.now() - t0;
    handle();
    return !signal?.aborted;
  };
  // Read asynchronously on webgpu (readback.ts); the version and slot are taken before the read.
  const weightsOf = async (p: PolicyRuntime): Promise<PolicyWeights> => {
    const meta = { policyId: p.id, source: p.source, identity: p.identity, version: p.version, slot: slots.get(p.id)! };
    return { ...meta, weights: await readWeights(p.model) };
  };
  const interrupted = (): PipelineOutcome => {
    stopReason = String(signal?.reason ?? 'stopped');
    return { status: 'interrupted', step: run.cursor.step, reason: stopReason };
  };

  const stateOf = (step: number): StepState => {
    let s = states.get(step);
    if (!s) {
      const { problems } = stepProblems(config, run.data, step);
      const episodes = problems.map((problem) => ({ problem, turns: [], finalAnswer: null, correct: false, rounds: 0, chains: [] }));
      s = { episodes, scored: episodes.map(() => ({ rewards: [], advantages: [] })), scoredWhole: false, metrics: {}, updateMs: 0, staleness: 0, tokens: 0 };
      states.set(step, s);
    }
    return s;
  };
  const completeEpisodes = (step: number, s: StepState) => {
    const done = stepDone.get(step)!;
    const keys = s.episodes.map((e) => e.problem.key);
    if (done.problemKeys.join('\n') !== keys.join('\n')) throw new Error(`pipeline: the rollout's problems of step ${step} differ from the trainer's`);
    done.episodes.forEach((summary, e) => Object.assign(s.episodes[e], summary));
  };

  // Only a rollout in another process can compute while this one does.
  const offload: GradientOffload | undefined =
    config.pipeline.gradient_share > 0 && run.endpoint
      ? {
          share: config.pipeline.gradient_share,
          parts: config.pipeline.gradient_parts,
          offer: async ({ agent, step, policy, parts, options, minibatchTokens }) => {
            const id = nextGradientId++;
            const w = await weightsOf(policy);
            openOffers.set(id, { started: 0, done: new Map() });
            endpoint.send({ type: 'gradients', id, agent, step, policy: w, parts, options, minibatchTokens }, [w.weights.buffer as ArrayBuffer]);
            await endpoint.flush?.();
            const state = openOffers.get(id)!;
            return {
              poll: async () => {
                await yieldToEventLoop();
                handle();
              },
              started: () => state.started,
              claimFrom: (from) => endpoint.send({ type: 'gradients-claimed', id, from }),
              // Awaited taking in every other message (batches, finished steps) meanwhile.
              results: async (count) => {
                try {
                  const out: PpoRemotePart[] = [];
                  for (let part = 0; part < count; part++) {
                    while (!state.done.has(part)) {
                      if (!(await pump())) throw new PipelineStopped();
                    }
                    const done = state.done.get(part)!;
                    out.push({ flatGrads: done.flatGrads, sums: done.sums });
                  }
                  return out;
                } finally {
                  // Parts both processes began in the same moment come back later: dropped.
                  openOffers.delete(id);
                }
              },
            };
          },
        }
      : undefined;

  const trainBatch = async (batch: BatchMessage) => {
    const s = stateOf(batch.step);
    const policy = policies.get(batch.policyId)!;
    if (slots.get(batch.policyId) !== batch.slot) {
      throw new Error(`pipeline: ${batch.agent}'s batch of step ${batch.step} was planned at update ${batch.slot} of policy ${batch.policyId}, but the trainer is at ${slots.get(batch.policyId)}`);
    }
    if (scope === 'agent') scoreAgentTurns(config, s.episodes, batch.turns, s.scored);
    else if (!s.scoredWhole) {
      completeEpisodes(batch.step, s);
      s.scored = scoreEpisodes(config, s.episodes);
      s.scoredWhole = true;
    }
    const oldest = minNumber(batch.turns.flatMap(({ turn }) => turn.segments.map((g) => g.policyVersion)));
    const staleness = Number.isFinite(oldest) ? policy.version - oldest : 0;
    const t0 = Date.now();
    const metrics = await updateAgent(run.update, batch.agent, policy, batch.turns.map(({ episode, turn }) => ({ turn, advantage: s.scored[episode].advantages[turn.index].value })), batch.step, offload);
    s.updateMs += Date.now() - t0;
    Object.assign(s.metrics, metrics);
    s.metrics[`${batch.agent}/staleness`] = staleness;
    s.staleness = Math.max(s.staleness, staleness);
    s.tokens += batch.turns.reduce((a, { turn }) => a + turn.responseTokens.length, 0);
    slots.set(batch.policyId, batch.slot + batch.updates);
    const w = await weightsOf(policy);
    endpoint.send({ type: 'weights', ...w }, [w.weights.buffer as ArrayBuffer]);
  };

  /**
   * A held-out evaluation at step `at` on both cores: the rollout runs the greedy chains and the
   * controls with a copy of the current weights while this process runs the sampled chains; the
   * parts are exact (evaluate.ts), so the metrics equal a one-process evaluation. False when the
   * run was stopped meanwhile.
   */
  const evaluateSplit = async (at: number): Promise<boolean> => {
    const parts = evaluationParts(config);
    const remote: EvalPart[] = parts.filter((p) => p !== 'sampled');
    const snapshot = await Promise.all([...policies.values()].map(weightsOf));
    // The fixed set's judging and repairs (after the first evaluation, which makes the set) go
    // there too: that evens the two shares (the sampled chains here are the larger part).
    const fixed = run.fixedSet() ?? undefined;
    endpoint.send({ type: 'evaluate', at, parts: remote, policies: snapshot, fixed }, snapshot.map((w) => w.weights.buffer as ArrayBuffer));
    await endpoint.flush?.();
    const startedAt = Date.now();
    const chains: Partial<Record<EvalPart, EvalChain[]>> = {};
    for (const part of parts) if (!remote.includes(part)) chains[part] = await run.evaluatePart(part);
    const endedAt = Date.now();
    while (!evaluated.has(at)) {
      if (!(await pump())) return false;
    }
    const answer = evaluated.get(at)!;
    evaluated.delete(at);
    Object.assign(chains, answer.chains);
    await run.recordEvaluation(at, evaluationMetrics(config, chains), startedAt, endedAt, answer.fixedMetrics);
    return true;
  };

  let lastStepEnd = Date.now();
  const finishStep = async (step: number): Promise<boolean> => {
    const s = stateOf(step);
    if (!s.scoredWhole) completeEpisodes(step, s);
    const done = stepDone.get(step)!;
    // Served agents send no batch; with agent-local scoring their turns are scored here.
    if (scope === 'agent' && done.servedTurns.length > 0) scoreAgentTurns(config, s.episodes, done.servedTurns, s.scored);
    const metrics = rolloutMetrics(config, s.episodes, s.scored);
    Object.assign(metrics, s.metrics);
    logEpisodes(writer, run.problemIds, runId, step, s.episodes, s.scored, rolloutWorker ?? run.worker, config);
    const now = Date.now();
    const stepS = (now - lastStepEnd) / 1000;
    lastStepEnd = now;
    metrics['perf/rollout_s'] = (done.rolloutMs - done.waitMs - done.evalMs - done.gradientMs) / 1000;
    metrics['pipeline/rollout_gradient_s'] = done.gradientMs / 1000;
    metrics['perf/update_s'] = s.updateMs / 1000;
    metrics['perf/step_s'] = stepS;
    metrics['perf/tokens_per_s'] = s.tokens / Math.max(stepS, 1e-3);
    metrics['pipeline/staleness'] = s.staleness;
    metrics['pipeline/rollout_wait_s'] = done.waitMs / 1000;
    metrics['pipeline/trainer_idle_s'] = idleMs / 1000;
    metrics['pipeline/queued_batches'] = queues.depth();
    idleMs = 0;
    for (const [key, value] of Object.entries(metrics)) writer.metric({ runId, step, wallTime: run.wallTime(), key, value });
    run.poolMetrics(step);
    writer.flush();
    states.delete(step);
    stepDone.delete(step);
    run.onStep(step, metrics);

    const isLast = step === config.optimization.steps - 1;
    if (!isLast && config.eval.every > 0 && (step + 1) % config.eval.every === 0) {
      if (!(await evaluateSplit(step + 1))) return false;
    }
    if (isLast || (config.optimization.checkpoint_every > 0 && (step + 1) % config.optimization.checkpoint_every === 0)) {
      await saveRunCheckpoint(run.store, runId, run.checkpointRoot, policies, config, step, metrics);
    }
    run.cursor.step = step + 1;
    return true;
  };

  try {
    while (rolloutWorker === null) {
      if (!(await pump())) return interrupted();
    }
    const init = await Promise.all([...policies.values()].map(weightsOf));
    endpoint.send({ type: 'init', startStep: run.startStep, policies: init }, init.map((w) => w.weights.buffer as ArrayBuffer));
    // The rollout starts the first step while the starting policies are evaluated, once it has
    // the weights (a long evaluation would otherwise hold the message back).
    while (!rolloutReady) {
      if (!(await pump())) return interrupted();
    }
    if (run.startStep === 0 && !(await evaluateSplit(0))) return interrupted();
    lastStepEnd = Date.now();
    while (run.cursor.step < config.optimization.steps) {
      if (signal?.aborted) return interrupted();
      handle();
      const item = queues.next();
      if (!item) {
        if (!(await pump())) return interrupted();
        continue;
      }
      if (item.kind === 'batch') {
        try {
          await trainBatch(item.batch);
        } catch (error) {
          if (error instanceof PipelineStopped) return interrupted();
          throw error;
        }
        // The new weights leave before the next update starts.
        await endpoint.flush?.();
      } else if (!(await finishStep(item.step))) return interrupted();
      // Let stop requests and the rollout's messages in between batches.
      await yieldToEventLoop();
    }
    // The final evaluation, as in the synchronous loop (a run of 0 steps evaluates twice at 0).
    if ((config.optimization.steps > 0 || run.startStep === 0) && !(await evaluateSplit(config.optimization.steps))) return interrupted();
    return { status: 'done' };
  } finally {
    endpoint.send({ type: 'stop', reason: stopReason });
    if (rolloutTask) await rolloutTask;
  }
}

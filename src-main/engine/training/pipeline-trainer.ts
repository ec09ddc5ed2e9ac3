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
 * the rollout, which takes them between segments or while it waits (update.ts minibatchStep)
 * and computes them with a copy of the exact current weights while this process computes the rest;
 * the parts add up to the whole minibatch's gradient (ppo.ts). Off-policy segments are not dropped: PPO's ratio uses each token's
 * stored behaviour log-probability, and the staleness of every batch is logged
 * (`<agent>/staleness`, `pipeline/staleness`).
 */
import { evaluationMetrics, evaluationParts, type EvalChain, type EvalPart } from './evaluate';
import { Inbox, inProcessChannel, type PolicyWeights, type RolloutToTrainer, type TrainerEndpoint } from './pipeline-protocol';
import type { PpoRemotePart } from './ppo';
import { runRolloutLoop } from './pipeline-rollout';
import { readWeights } from '../model/readback';
import type { PolicyRuntime } from './policies';
import type { EndpointPool } from '../served/pool';
import { scoringScope, TrainingQueues, type ScoringScope } from './queues';
import { logEpisodes } from './records';
import type { RolloutEpisode } from './rollout';
import type { RunEvaluations } from './run-evaluation';
import { yieldToEventLoop } from './run-shell';
import { scoreAgentTurns, scoreEpisodes, type ScoredEpisode } from './scoring';
import { rolloutMetrics } from './step-metrics';
import { endStep, type RunContext } from './steps';
import { stepProblems } from './task-data';
import { updateAgent, type GradientOffer, type GradientOffload } from './update';
import { minNumber } from '../util/arrays';

type BatchMessage = Extract<RolloutToTrainer, { type: 'batch' }>;
type StepDone = Extract<RolloutToTrainer, { type: 'step-done' }>;
type GradientsDone = Extract<RolloutToTrainer, { type: 'gradients-done' }>;

export interface PipelineRun extends RunContext {
  startStep: number;
  /** The rollout process's end of the channel; null runs the rollout in this process. */
  endpoint: TrainerEndpoint | null;
  /** Runs and records the held-out evaluations (this process's share, and the whole record). */
  evaluations: RunEvaluations;
  /** The run's pool of served models (issue #16), lent to a rollout in this process; null when no role is served. */
  pool: EndpointPool | null;
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
  const trainer = new PipelineTrainer(run);
  try {
    return await trainer.train();
  } finally {
    await trainer.stop();
  }
}

/** The trainer's state between the rollout's messages: queues, steps in progress, open gradient offers. */
class PipelineTrainer {
  private readonly endpoint: TrainerEndpoint;
  private readonly inbox = new Inbox<RolloutToTrainer>();
  private readonly scope: ScoringScope;
  private readonly queues: TrainingQueues<BatchMessage>;
  private readonly rolloutTask: Promise<void> | null = null;
  private readonly stepDone = new Map<number, StepDone>();
  private readonly states = new Map<number, StepState>();
  /** Each policy's update count, the slot its next batch was planned at (queues.ts). */
  private readonly slots: Map<string, number>;
  /** Gradient offers not yet settled: how many parts the rollout has started, and the parts it has done. */
  private readonly openOffers = new Map<number, { started: number; done: Map<number, GradientsDone> }>();
  private readonly evaluated = new Map<number, Extract<RolloutToTrainer, { type: 'evaluated' }>>();
  /** Only a rollout in another process can compute while this one does. */
  private readonly offload: GradientOffload | undefined;
  private rolloutWorker: string | null = null;
  private rolloutReady = false;
  private nextGradientId = 0;
  private failure: string | null = null;
  private idleMs = 0;
  private lastStepEnd = Date.now();
  private stopReason = 'the run ended';

  constructor(private readonly run: PipelineRun) {
    const { config, policies } = run;
    this.scope = scoringScope(config).scope;
    this.queues = new TrainingQueues<BatchMessage>(this.scope);
    this.slots = new Map([...policies].map(([id, p]) => [id, p.version]));
    const own = run.endpoint ? null : inProcessChannel();
    this.endpoint = run.endpoint ?? own!.trainer;
    this.endpoint.onMessage((m) => this.inbox.push(m));
    if (own) {
      const rolloutEnd = own.rollout;
      this.rolloutTask = runRolloutLoop({
        config,
        endpoint: rolloutEnd,
        worker: `${run.worker}/rollout`,
        signal: run.signal,
        pool: run.pool,
        timeline: (span) => run.writer.timelineSpan({ ...span, runId: run.runId }),
      }).catch((error: unknown) => rolloutEnd.send({ type: 'failed', message: error instanceof Error ? error.message : String(error) }));
    }
    if (config.pipeline.gradient_share > 0 && run.endpoint) {
      this.offload = { share: config.pipeline.gradient_share, parts: config.pipeline.gradient_parts, offer: (request) => this.offer(request) };
    }
  }

  /** Hello, the starting weights, the first evaluation, then batches and finished steps in queue order, then the final evaluation. */
  async train(): Promise<PipelineOutcome> {
    const { run } = this;
    const { config, signal } = run;
    while (this.rolloutWorker === null) {
      if (!(await this.pump())) return this.interrupted();
    }
    const init = await Promise.all([...run.policies.values()].map((p) => this.weightsOf(p)));
    this.endpoint.send({ type: 'init', startStep: run.startStep, policies: init }, init.map((w) => w.weights.buffer as ArrayBuffer));
    // The rollout starts the first step while the starting policies are evaluated, once it has
    // the weights (a long evaluation would otherwise hold the message back).
    while (!this.rolloutReady) {
      if (!(await this.pump())) return this.interrupted();
    }
    if (run.startStep === 0 && !(await this.evaluateSplit(0))) return this.interrupted();
    this.lastStepEnd = Date.now();
    while (run.cursor.step < config.optimization.steps) {
      if (signal?.aborted) return this.interrupted();
      this.handle();
      const item = this.queues.next();
      if (!item) {
        if (!(await this.pump())) return this.interrupted();
        continue;
      }
      if (item.kind === 'batch') {
        try {
          await this.trainBatch(item.batch);
        } catch (error) {
          if (error instanceof PipelineStopped) return this.interrupted();
          throw error;
        }
        // The new weights leave before the next update starts.
        await this.endpoint.flush?.();
      } else if (!(await this.finishStep(item.step))) return this.interrupted();
      // Let stop requests and the rollout's messages in between batches.
      await yieldToEventLoop();
    }
    // The final evaluation, as in the synchronous loop (a run of 0 steps evaluates twice at 0).
    if ((config.optimization.steps > 0 || run.startStep === 0) && !(await this.evaluateSplit(config.optimization.steps))) return this.interrupted();
    return { status: 'done' };
  }

  /** Tells the rollout to stop, and waits for it when it runs in this process. */
  async stop(): Promise<void> {
    this.endpoint.send({ type: 'stop', reason: this.stopReason });
    if (this.rolloutTask) await this.rolloutTask;
  }

  private handle(): void {
    for (const m of this.inbox.drain()) {
      if (m.type === 'hello') this.rolloutWorker = m.worker;
      else if (m.type === 'ready') this.rolloutReady = true;
      else if (m.type === 'evaluated') this.evaluated.set(m.at, m);
      else if (m.type === 'gradients-started') {
        const offer = this.openOffers.get(m.id);
        if (offer) offer.started = Math.max(offer.started, m.part + 1);
      } else if (m.type === 'gradients-done') this.openOffers.get(m.id)?.done.set(m.part, m);
      else if (m.type === 'batch') {
        // The turns join their episodes on arrival: episode-scoped scoring reads every agent's.
        const s = this.stateOf(m.step);
        for (const { episode, turn } of m.turns) s.episodes[episode].turns[turn.index] = turn;
        this.queues.push(m);
      } else if (m.type === 'step-done') {
        const s = this.stateOf(m.step);
        for (const { episode, turn } of m.servedTurns) s.episodes[episode].turns[turn.index] = turn;
        this.stepDone.set(m.step, m);
        this.queues.stepComplete(m.step);
      } else if (m.type === 'failed') this.failure = m.message;
    }
    if (this.failure !== null) throw new RolloutFailedError(`the rollout failed: ${this.failure}`);
  }

  /** Wait for the next message; false when the run was stopped. */
  private async pump(): Promise<boolean> {
    const t0 = Date.now();
    await this.inbox.wait(this.run.signal);
    this.idleMs += Date.now() - t0;
    this.handle();
    return !this.run.signal?.aborted;
  }

  // Read asynchronously on webgpu (readback.ts); the version and slot are taken before the read.
  private async weightsOf(p: PolicyRuntime): Promise<PolicyWeights> {
    const meta = { policyId: p.id, source: p.source, identity: p.identity, version: p.version, slot: this.slots.get(p.id)! };
    return { ...meta, weights: await readWeights(p.model) };
  }

  private interrupted(): PipelineOutcome {
    this.stopReason = String(this.run.signal?.reason ?? 'stopped');
    return { status: 'interrupted', step: this.run.cursor.step, reason: this.stopReason };
  }

  private stateOf(step: number): StepState {
    let s = this.states.get(step);
    if (!s) {
      const { problems } = stepProblems(this.run.config, this.run.data, step);
      const episodes = problems.map((problem) => ({ problem, turns: [], finalAnswer: null, correct: false, rounds: 0, chains: [] }));
      s = { episodes, scored: episodes.map(() => ({ rewards: [], advantages: [] })), scoredWhole: false, metrics: {}, updateMs: 0, staleness: 0, tokens: 0 };
      this.states.set(step, s);
    }
    return s;
  }

  private completeEpisodes(step: number, s: StepState): void {
    const done = this.stepDone.get(step)!;
    const keys = s.episodes.map((e) => e.problem.key);
    if (done.problemKeys.join('\n') !== keys.join('\n')) throw new Error(`pipeline: the rollout's problems of step ${step} differ from the trainer's`);
    done.episodes.forEach((summary, e) => Object.assign(s.episodes[e], summary));
  }

  /** Offers parts of a minibatch's gradient to the rollout (update.ts minibatchStep takes it from here). */
  private async offer({ agent, step, policy, parts, options, minibatchTokens }: Parameters<GradientOffload['offer']>[0]): Promise<GradientOffer> {
    const { endpoint } = this;
    const id = this.nextGradientId++;
    const w = await this.weightsOf(policy);
    this.openOffers.set(id, { started: 0, done: new Map() });
    endpoint.send({ type: 'gradients', id, agent, step, policy: w, parts, options, minibatchTokens }, [w.weights.buffer as ArrayBuffer]);
    await endpoint.flush?.();
    const state = this.openOffers.get(id)!;
    return {
      poll: async () => {
        await yieldToEventLoop();
        this.handle();
      },
      started: () => state.started,
      claimFrom: (from) => endpoint.send({ type: 'gradients-claimed', id, from }),
      // Awaited taking in every other message (batches, finished steps) meanwhile.
      results: async (count) => {
        try {
          const out: PpoRemotePart[] = [];
          for (let part = 0; part < count; part++) {
            while (!state.done.has(part)) {
              if (!(await this.pump())) throw new PipelineStopped();
            }
            const done = state.done.get(part)!;
            out.push({ flatGrads: done.flatGrads, sums: done.sums });
          }
          return out;
        } finally {
          // Parts both processes began in the same moment come back later: dropped.
          this.openOffers.delete(id);
        }
      },
    };
  }

  /** Scores an agent's batch (now, or with the whole step when the scheme needs it), updates its policy, sends the new weights. */
  private async trainBatch(batch: BatchMessage): Promise<void> {
    const { run, slots } = this;
    const s = this.stateOf(batch.step);
    const policy = run.policies.get(batch.policyId)!;
    if (slots.get(batch.policyId) !== batch.slot) {
      throw new Error(`pipeline: ${batch.agent}'s batch of step ${batch.step} was planned at update ${batch.slot} of policy ${batch.policyId}, but the trainer is at ${slots.get(batch.policyId)}`);
    }
    if (this.scope === 'agent') scoreAgentTurns(run.config, s.episodes, batch.turns, s.scored);
    else if (!s.scoredWhole) {
      this.completeEpisodes(batch.step, s);
      s.scored = scoreEpisodes(run.config, s.episodes);
      s.scoredWhole = true;
    }
    const oldest = minNumber(batch.turns.flatMap(({ turn }) => turn.segments.map((g) => g.policyVersion)));
    const staleness = Number.isFinite(oldest) ? policy.version - oldest : 0;
    const t0 = Date.now();
    const metrics = await updateAgent(run.update, batch.agent, policy, batch.turns.map(({ episode, turn }) => ({ turn, advantage: s.scored[episode].advantages[turn.index].value })), batch.step, this.offload);
    s.updateMs += Date.now() - t0;
    Object.assign(s.metrics, metrics);
    s.metrics[`${batch.agent}/staleness`] = staleness;
    s.staleness = Math.max(s.staleness, staleness);
    s.tokens += batch.turns.reduce((a, { turn }) => a + turn.responseTokens.length, 0);
    slots.set(batch.policyId, batch.slot + batch.updates);
    const w = await this.weightsOf(policy);
    this.endpoint.send({ type: 'weights', ...w }, [w.weights.buffer as ArrayBuffer]);
  }

  /**
   * A held-out evaluation at step `at` on both cores: the rollout runs the greedy chains and the
   * controls with a copy of the current weights while this process runs the sampled chains; the
   * parts are exact (evaluate.ts), so the metrics equal a one-process evaluation. False when the
   * run was stopped meanwhile.
   */
  private async evaluateSplit(at: number): Promise<boolean> {
    const { run, endpoint } = this;
    const parts = evaluationParts(run.config);
    const remote: EvalPart[] = parts.filter((p) => p !== 'sampled');
    const snapshot = await Promise.all([...run.policies.values()].map((p) => this.weightsOf(p)));
    // The fixed set's judging and repairs (after the first evaluation, which makes the set) go
    // there too: that evens the two shares (the sampled chains here are the larger part).
    const fixed = run.evaluations.fixedSet() ?? undefined;
    endpoint.send({ type: 'evaluate', at, parts: remote, policies: snapshot, fixed }, snapshot.map((w) => w.weights.buffer as ArrayBuffer));
    await endpoint.flush?.();
    const startedAt = Date.now();
    const chains: Partial<Record<EvalPart, EvalChain[]>> = {};
    for (const part of parts) if (!remote.includes(part)) chains[part] = await run.evaluations.part(part);
    const endedAt = Date.now();
    while (!this.evaluated.has(at)) {
      if (!(await this.pump())) return false;
    }
    const answer = this.evaluated.get(at)!;
    this.evaluated.delete(at);
    Object.assign(chains, answer.chains);
    await run.evaluations.record(at, evaluationMetrics(run.config, chains), startedAt, endedAt, answer.fixedMetrics);
    return true;
  }

  /** A step whose batches are all trained: its rows, its metrics, then evaluation and checkpoint when due. */
  private async finishStep(step: number): Promise<boolean> {
    const { run } = this;
    const { config } = run;
    const s = this.stateOf(step);
    if (!s.scoredWhole) this.completeEpisodes(step, s);
    const done = this.stepDone.get(step)!;
    // Served agents send no batch; with agent-local scoring their turns are scored here.
    if (this.scope === 'agent' && done.servedTurns.length > 0) scoreAgentTurns(config, s.episodes, done.servedTurns, s.scored);
    const metrics = rolloutMetrics(config, s.episodes, s.scored);
    Object.assign(metrics, s.metrics);
    logEpisodes(run.writer, run.problemIds, run.runId, step, s.episodes, s.scored, this.rolloutWorker ?? run.worker, config);
    const now = Date.now();
    const stepS = (now - this.lastStepEnd) / 1000;
    this.lastStepEnd = now;
    metrics['perf/rollout_s'] = (done.rolloutMs - done.waitMs - done.evalMs - done.gradientMs) / 1000;
    metrics['pipeline/rollout_gradient_s'] = done.gradientMs / 1000;
    metrics['perf/update_s'] = s.updateMs / 1000;
    metrics['perf/step_s'] = stepS;
    metrics['perf/tokens_per_s'] = s.tokens / Math.max(stepS, 1e-3);
    metrics['pipeline/staleness'] = s.staleness;
    metrics['pipeline/rollout_wait_s'] = done.waitMs / 1000;
    metrics['pipeline/trainer_idle_s'] = this.idleMs / 1000;
    metrics['pipeline/queued_batches'] = this.queues.depth();
    this.idleMs = 0;
    this.states.delete(step);
    this.stepDone.delete(step);
    if (!(await endStep(run, step, metrics, (at) => this.evaluateSplit(at)))) return false;
    run.cursor.step = step + 1;
    return true;
  }
}

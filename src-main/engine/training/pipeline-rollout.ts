/**
 * The rollout side of a pipelined run (MarsRL's agentic pipeline parallelism): it holds its own
 * copies of the policies, built from the weights the trainer sends at the start, and generates
 * each step's episodes agent by agent. The moment an agent's group is complete its turns go to
 * the trainer as one batch (tokens, behaviour log-probabilities, segments with the policy version
 * that wrote each, parse and correctness), while the rollout goes on with the next agent, and the
 * next step.
 *
 * At the start of each stage (an agent's first segments, and where unfinished sequences carry
 * over to the next stage) it takes in the newest weights the trainer has sent for the policy it is
 * decoding with (the decode cache is rebuilt because the weights changed), and between any two
 * segments it never decodes with weights more than `max_staleness` versions behind the version the
 * batch will be trained at: it takes newer weights or waits for them, and records the wait in the
 * timeline (queues.ts explains the bound).
 *
 * It also runs the trainer's requested share of each held-out evaluation (evaluate.ts parts, with
 * the exact weights the trainer sends), between segments, so evaluations take both cores too; and
 * the parts of a minibatch's gradient the trainer offers (`pipeline.gradient_share`,
 * `gradient_parts`), between segments and while it waits for weights: an update costs the trainer
 * about twice what a rollout of the same turns costs this process, so without help the trainer is
 * the bottleneck and this process waits.
 *
 * It writes only its own timeline spans (segment decodes, waits, its evaluation share); every
 * trajectory row goes through the trainer, the one writer of turns, rewards and advantages.
 */
import type { RunConfig } from '../config/schema';
import type { Role } from '#shared/agents';
import { poolFromConfig, usedEndpoints } from '../served/config';
import type { ServedEventSink } from '../served/events';
import type { EndpointPool } from '../served/pool';
import { servedRoles } from '../served/roles';
import { createOptimizer } from '../model/optim';
import type { TimelineRow } from '../store/types';
import { syncWhereReadable } from '../model/readback';
import { evaluatePartAsync, fixedSetMetrics, type EvalChain, type EvalPart } from './evaluate';
import { Inbox, type PolicyWeights, type RolloutEndpoint, type TrainerToRollout } from './pipeline-protocol';
import { buildPolicyModel, PolicyRuntime, rolePolicies } from './policies';
import { flattenGradients, flattenGradientsAsync, ppoPartGradients, ppoPartGradientsAsync } from './ppo';
import { plannedUpdates, scoringScope, StalenessPlanner } from './queues';
import type { ServedRole } from '../served/roles';
import { drive, rolloutSteps, type DriverPause, type RolloutContext } from './rollout';
import { yieldToEventLoop } from './run-shell';
import { evaluationSet, loadTaskData, stepProblems, type TaskData } from './task-data';

export interface RolloutLoopOptions {
  config: RunConfig;
  endpoint: RolloutEndpoint;
  /** Name of this process in timeline rows. */
  worker: string;
  signal?: AbortSignal;
  /** Receives this process's timeline spans (segment decodes and staleness waits). */
  timeline?: (span: Omit<TimelineRow, 'id' | 'runId'>) => void;
  /**
   * The pool of served models (issue #16) when the rollout shares the trainer's process; absent,
   * a config with served roles gets a pool of this process's own (closed at the end).
   */
  pool?: EndpointPool | null;
  /** Receives the own pool's events (retries, failures, replicas down), named by endpoint, never by key. */
  onEvent?: ServedEventSink;
  /** Receives the own pool's metrics after each step. */
  poolMetrics?: (step: number, metrics: Record<string, number>) => void;
}

/** The run ended (trainer said stop, or this process was stopped): leave quietly. */
class RolloutStopped extends Error {}

type InitMessage = Extract<TrainerToRollout, { type: 'init' }>;

/**
 * Generate episodes for the trainer until the last step is sent and the trainer says stop, or
 * until stopped. Resolves when done; rejects only on a real failure (the caller reports it).
 */
export async function runRolloutLoop(options: RolloutLoopOptions): Promise<void> {
  const loop = new RolloutLoop(options);
  const { config, signal } = options;
  const onAbort = () => loop.abort.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) loop.abort.abort();
  let ownPool: EndpointPool | null = null;
  try {
    const data = loadTaskData(config);
    const servedEndpoints = usedEndpoints(config);
    const pool = options.pool ?? (servedEndpoints.size > 0 ? (ownPool = poolFromConfig(config, { onEvent: options.onEvent, healthChecks: true })) : null);
    // Served, frozen roles: answered by the pool, never sent as batches (nothing to train).
    const served = servedRoles(pool, config);
    const start = await loop.start();
    const roles = rolePolicies(config, loop.policies);
    const planner = new StalenessPlanner(config.pipeline.max_staleness, scoringScope(config).scope, Object.fromEntries(loop.slots));
    for (let step = start.startStep; step < config.optimization.steps; step++) {
      await loop.rolloutStep(step, { data, roles, served, planner });
      if (ownPool) options.poolMetrics?.(step, ownPool.metrics());
    }
    // Everything is sent; stay until the trainer ends the run (it may still be training).
    for (;;) {
      loop.receive();
      await loop.serveRequests(data, served);
      await loop.inbox.wait(loop.abort.signal);
    }
  } catch (error) {
    if (error instanceof RolloutStopped) return;
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    loop.dispose();
    ownPool?.close();
  }
}

/** What one step's rollout reads besides the loop's own state. */
interface StepInputs {
  data: TaskData;
  roles: Record<Role, PolicyRuntime>;
  served: Partial<Record<Role, ServedRole>>;
  planner: StalenessPlanner;
}

/** The rollout process's state: its policies and their update slots, the trainer's requests not yet served. */
class RolloutLoop {
  readonly inbox = new Inbox<TrainerToRollout>();
  readonly abort = new AbortController();
  readonly policies = new Map<string, PolicyRuntime>();
  readonly slots = new Map<string, number>();
  /** Copies for evaluations and gradient shares, loaded with the weights each request names. */
  private readonly evalPolicies = new Map<string, PolicyRuntime>();
  /** The newest weights received per policy, not yet taken in. */
  private readonly mailbox = new Map<string, PolicyWeights>();
  private readonly evaluations: Extract<TrainerToRollout, { type: 'evaluate' }>[] = [];
  private readonly gradientRequests: Extract<TrainerToRollout, { type: 'gradients' }>[] = [];
  /** Per offer not yet finished: the parts before this index are this process's to take. */
  private readonly takeBefore = new Map<number, number>();
  private init: InitMessage | null = null;
  private stopReason: string | null = null;
  private evalMs = 0;
  private gradientMs = 0;

  constructor(private readonly options: RolloutLoopOptions) {
    options.endpoint.onMessage((m) => this.inbox.push(m));
  }

  receive(): void {
    for (const m of this.inbox.drain()) {
      if (m.type === 'stop') {
        this.stopReason = m.reason;
        this.abort.abort();
      } else if (m.type === 'init') this.init = m;
      else if (m.type === 'evaluate') this.evaluations.push(m);
      else if (m.type === 'gradients') {
        this.gradientRequests.push(m);
        this.takeBefore.set(m.id, m.parts.length);
      } else if (m.type === 'gradients-claimed' && this.takeBefore.has(m.id)) this.takeBefore.set(m.id, Math.min(m.from, this.takeBefore.get(m.id)!));
      else if (m.type === 'weights') {
        const held = this.mailbox.get(m.policyId);
        if (!held || m.slot > held.slot) this.mailbox.set(m.policyId, m);
      }
    }
    if (this.abort.signal.aborted) throw new RolloutStopped(this.stopReason ?? 'stopped');
  }

  /** Hello, then the trainer's starting weights, then ready. */
  async start(): Promise<InitMessage> {
    const { config, endpoint } = this.options;
    endpoint.send({ type: 'hello', worker: this.options.worker, pid: process.pid });
    while (!this.init) {
      this.receive();
      if (!this.init) await this.inbox.wait(this.abort.signal);
    }
    const start: InitMessage = this.init;
    for (const p of start.policies) {
      const { model, tokenizer } = buildPolicyModel(p.source);
      const policy = new PolicyRuntime(p.policyId, config.policies[p.policyId], model, tokenizer, createOptimizer(model, config.policies[p.policyId].optimizer), p.source, p.identity);
      policy.adoptWeights(p.weights, p.version);
      this.policies.set(p.policyId, policy);
      this.slots.set(p.policyId, p.slot);
    }
    endpoint.send({ type: 'ready' });
    return start;
  }

  dispose(): void {
    for (const p of this.policies.values()) p.dispose();
    for (const p of this.evalPolicies.values()) p.dispose();
  }

  private copyWith(p: PolicyWeights): PolicyRuntime {
    const { config } = this.options;
    let copy = this.evalPolicies.get(p.policyId);
    if (!copy) {
      const { model, tokenizer } = buildPolicyModel(p.source);
      copy = new PolicyRuntime(p.policyId, config.policies[p.policyId], model, tokenizer, createOptimizer(model, config.policies[p.policyId].optimizer), p.source, p.identity);
      this.evalPolicies.set(p.policyId, copy);
    }
    copy.adoptWeights(p.weights, p.version);
    return copy;
  }

  /** Run the evaluation shares the trainer asked for, with the weights it sent. */
  private async serveEvaluations(data: TaskData, served: Partial<Record<Role, ServedRole>>): Promise<void> {
    const { config, endpoint } = this.options;
    const evalSet = evaluationSet(config, data);
    while (this.evaluations.length > 0) {
      const request = this.evaluations.shift()!;
      for (const p of request.policies) this.copyWith(p);
      const ctx = { family: data.family, policies: rolePolicies(config, this.evalPolicies), served, config };
      const startedAt = Date.now();
      const chains: Partial<Record<EvalPart, EvalChain[]>> = {};
      for (const part of request.parts) chains[part] = await evaluatePartAsync(ctx, evalSet.problems, evalSet.seed, part);
      const fixedMetrics = request.fixed ? await fixedSetMetrics(ctx, evalSet.problems, request.fixed, evalSet.seed) : undefined;
      this.evalMs += Date.now() - startedAt;
      this.options.timeline?.({ kind: 'eval', agent: 'system', worker: this.options.worker, step: request.at, policyVersion: ctx.policies.solver?.version ?? 0, startedAt, endedAt: Date.now(), tokens: 0 });
      endpoint.send({ type: 'evaluated', at: request.at, chains, fixedMetrics });
      await endpoint.flush?.();
    }
  }

  /**
   * Take the offered parts one at a time, with the weights sent, until the offer runs out or the
   * trainer claims the rest; each is announced before it is computed, so the trainer never
   * computes a part this process has begun (a claim crossing an announcement costs one part twice).
   */
  private async serveGradients(): Promise<void> {
    const { endpoint } = this.options;
    while (this.gradientRequests.length > 0) {
      const request = this.gradientRequests.shift()!;
      const copy = this.copyWith(request.policy);
      for (let part = 0; ; part++) {
        await yieldToEventLoop();
        this.receive();
        if (part >= this.takeBefore.get(request.id)!) break;
        endpoint.send({ type: 'gradients-started', id: request.id, part });
        await endpoint.flush?.();
        const startedAt = Date.now();
        const [piece, opts, tokens] = [request.parts[part], request.options, request.minibatchTokens];
        // The synchronous forms where reads are synchronous (wasm/cpu), the asynchronous ones on webgpu.
        const result = await syncWhereReadable(() => ppoPartGradients(copy.model, piece, opts, tokens), () => ppoPartGradientsAsync(copy.model, piece, opts, tokens));
        const flatGrads = await syncWhereReadable(() => flattenGradients(copy.model, result.grads), () => flattenGradientsAsync(copy.model, result.grads));
        for (const g of result.grads) g.dispose();
        const endedAt = Date.now();
        this.gradientMs += endedAt - startedAt;
        // Like the trainer's update spans, it carries the version the update produces.
        this.options.timeline?.({ kind: 'update', agent: request.agent, worker: this.options.worker, step: request.step, policyVersion: request.policy.version + 1, startedAt, endedAt, tokens: result.sums.tokens });
        endpoint.send({ type: 'gradients-done', id: request.id, part, flatGrads, sums: result.sums }, [flatGrads.buffer as ArrayBuffer]);
        await endpoint.flush?.();
      }
      this.takeBefore.delete(request.id);
    }
  }

  /** Serve the trainer's requests; returns the milliseconds spent. */
  async serveRequests(data: TaskData, served: Partial<Record<Role, ServedRole>>): Promise<number> {
    const before = this.evalMs + this.gradientMs;
    // Gradients first: the trainer is waiting for them in the middle of an update.
    await this.serveGradients();
    await this.serveEvaluations(data, served);
    await this.serveGradients();
    return this.evalMs + this.gradientMs - before;
  }

  /** Take in the newest weights for a policy, if newer than the ones held. */
  private adopt(policyId: string): void {
    const next = this.mailbox.get(policyId);
    if (!next) return;
    this.mailbox.delete(policyId);
    if (next.slot <= this.slots.get(policyId)!) return;
    this.policies.get(policyId)!.adoptWeights(next.weights, next.version);
    this.slots.set(policyId, next.slot);
  }

  /** One step's episodes, each agent's group sent as a batch when complete, then the step's summary. */
  async rolloutStep(step: number, inputs: StepInputs): Promise<void> {
    const { config, endpoint, worker } = this.options;
    const { data, served, planner } = inputs;
    this.receive();
    planner.beginStep();
    const { problems, seed } = stepProblems(config, data, step);
    const pace = { batchSlot: 0, waitMs: 0 };
    const evalBefore = this.evalMs;
    const gradientBefore = this.gradientMs;
    const stepStart = Date.now();
    const ctx: RolloutContext = {
      family: data.family,
      policies: inputs.roles,
      served,
      config,
      onSegment: (s) => this.options.timeline?.({ kind: 'segment', agent: s.agent, worker, step, policyVersion: s.policyVersion, startedAt: s.startedAt, endedAt: s.endedAt, tokens: s.tokens }),
    };
    const episodes = await drive(rolloutSteps(ctx, problems, seed), (pause) => this.onPause(pause, step, inputs, pace));
    endpoint.send({
      type: 'step-done',
      step,
      problemKeys: problems.map((p) => p.key),
      episodes: episodes.map((e) => ({ finalAnswer: e.finalAnswer, correct: e.correct, rounds: e.rounds, chains: e.chains })),
      servedTurns: episodes.flatMap((e, episode) => e.turns.filter((turn) => served[turn.role]).map((turn) => ({ episode, turn }))),
      rolloutMs: Date.now() - stepStart,
      waitMs: pace.waitMs,
      evalMs: this.evalMs - evalBefore,
      gradientMs: this.gradientMs - gradientBefore,
    });
  }

  /** Where the rollout pauses: an agent's group begins or is complete, or a segment is about to be decoded. */
  private async onPause(pause: DriverPause, step: number, inputs: StepInputs, pace: { batchSlot: number; waitMs: number }): Promise<void> {
    const { config, endpoint } = this.options;
    const { planner } = inputs;
    if (pause.kind === 'agent-start') {
      pace.batchSlot = planner.batchSlot(pause.policy.id);
      return;
    }
    if (pause.kind === 'agent-done') {
      const { minibatch_size: minibatch, ppo_epochs: epochs } = config.optimization;
      const updates = plannedUpdates(pause.turns.filter((t) => t.responseTokens.length > 0).length, minibatch, epochs);
      planner.commit(pause.policy.id, updates);
      endpoint.send({
        type: 'batch', step, agent: pause.agent, role: pause.role, policyId: pause.policy.id, slot: pace.batchSlot, updates,
        turns: pause.turns.map((turn, i) => ({ episode: pause.episodes[i], turn })),
      });
      await endpoint.flush?.();
      return;
    }
    // Before a segment: let messages in, serve evaluations, hold the staleness bound.
    await yieldToEventLoop();
    this.receive();
    await this.serveRequests(inputs.data, inputs.served);
    const id = pause.policy.id;
    // Newer weights are taken in where a stage begins (a group's first segment, or where
    // unfinished sequences carry over), or when the bound requires them. Within a stage they
    // wait: swapping there rebuilds the decode cache of every live sequence, a prefill that
    // costs about as much as the stage's remaining segments.
    if (pause.segment === 0) this.adopt(id);
    if (!planner.mayDecode(id, pace.batchSlot, this.slots.get(id)!)) this.adopt(id);
    if (!planner.mayDecode(id, pace.batchSlot, this.slots.get(id)!)) {
      const waitStart = Date.now();
      const versionBefore = pause.policy.version;
      let servedMs = 0;
      while (!planner.mayDecode(id, pace.batchSlot, this.slots.get(id)!)) {
        await this.inbox.wait(this.abort.signal);
        this.receive();
        servedMs += await this.serveRequests(inputs.data, inputs.served);
        this.adopt(id);
      }
      const waitEnd = Date.now();
      // Time spent on the trainer's requests meanwhile is theirs, not waiting.
      pace.waitMs += waitEnd - waitStart - servedMs;
      this.options.timeline?.({ kind: 'wait', agent: pause.agent, worker: this.options.worker, step, policyVersion: versionBefore, startedAt: waitStart, endedAt: waitEnd, tokens: 0 });
    }
  }
}

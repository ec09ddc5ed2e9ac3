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
import { servedRole } from '../served/roles';
import { createOptimizer } from '../model/optim';
import type { TimelineRow } from '../store/types';
import { syncWhereReadable } from '../model/readback';
import { evaluatePartAsync, fixedSetMetricsAsync, type EvalChain, type EvalPart } from './evaluate';
import { Inbox, type PolicyWeights, type RolloutEndpoint, type TrainerToRollout } from './pipeline-protocol';
import { buildPolicyModel, PolicyRuntime, rolePolicies } from './policies';
import { flattenGradients, flattenGradientsAsync, ppoPartGradients, ppoPartGradientsAsync } from './ppo';
import { plannedUpdates, scoringScope, StalenessPlanner } from './queues';
import { drive, rolloutSteps, type RolloutContext, type DriverPause, type ServedRole } from './rollout';
import { evaluationSet, loadTaskData, stepProblems, yieldToEventLoop } from './run-support';

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

/**
 * Generate episodes for the trainer until the last step is sent and the trainer says stop, or
 * until stopped. Resolves when done; rejects only on a real failure (the caller reports it).
 */
export async function runRolloutLoop(options: RolloutLoopOptions): Promise<void> {
  const { config, endpoint, signal } = options;
  const inbox = new Inbox<TrainerToRollout>();
  endpoint.onMessage((m) => inbox.push(m));
  const abort = new AbortController();
  let stopReason: string | null = null;
  const onAbort = () => abort.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) abort.abort();
  // The newest weights received per policy, not yet taken in.
  const mailbox = new Map<string, PolicyWeights>();
  let init: Extract<TrainerToRollout, { type: 'init' }> | null = null;
  const evaluations: Extract<TrainerToRollout, { type: 'evaluate' }>[] = [];
  const gradientRequests: Extract<TrainerToRollout, { type: 'gradients' }>[] = [];
  /** Per offer not yet finished: the parts before this index are this process's to take. */
  const takeBefore = new Map<number, number>();
  const receive = () => {
    for (const m of inbox.drain()) {
      if (m.type === 'stop') {
        stopReason = m.reason;
        abort.abort();
      } else if (m.type === 'init') init = m;
      else if (m.type === 'evaluate') evaluations.push(m);
      else if (m.type === 'gradients') {
        gradientRequests.push(m);
        takeBefore.set(m.id, m.parts.length);
      } else if (m.type === 'gradients-claimed' && takeBefore.has(m.id)) takeBefore.set(m.id, Math.min(m.from, takeBefore.get(m.id)!));
      else if (m.type === 'weights') {
        const held = mailbox.get(m.policyId);
        if (!held || m.slot > held.slot) mailbox.set(m.policyId, m);
      }
    }
    if (abort.signal.aborted) throw new RolloutStopped(stopReason ?? 'stopped');
  };
  const policies = new Map<string, PolicyRuntime>();
  /** Copies for evaluations and gradient shares, loaded with the weights each request names. */
  const evalPolicies = new Map<string, PolicyRuntime>();
  const copyWith = (p: PolicyWeights): PolicyRuntime => {
    let copy = evalPolicies.get(p.policyId);
    if (!copy) {
      const { model, tokenizer } = buildPolicyModel(p.source);
      copy = new PolicyRuntime(p.policyId, config.policies[p.policyId], model, tokenizer, createOptimizer(model, config.policies[p.policyId].optimizer), p.source, p.identity);
      evalPolicies.set(p.policyId, copy);
    }
    copy.adoptWeights(p.weights, p.version);
    return copy;
  };
  let ownPool: EndpointPool | null = null;
  try {
    const data = loadTaskData(config);
    const servedEndpoints = usedEndpoints(config);
    const pool = options.pool ?? (servedEndpoints.size > 0 ? (ownPool = poolFromConfig(config, { onEvent: options.onEvent, healthChecks: true })) : null);
    // Served, frozen roles: answered by the pool, never sent as batches (nothing to train).
    const served: Partial<Record<Role, ServedRole>> = {};
    if (pool) for (const roles of servedEndpoints.values()) for (const role of roles) served[role] = servedRole(pool, config, role);
    endpoint.send({ type: 'hello', worker: options.worker, pid: process.pid });
    while (!init) {
      receive();
      if (!init) await inbox.wait(abort.signal);
    }
    const start: Extract<TrainerToRollout, { type: 'init' }> = init;
    const slots = new Map<string, number>();
    for (const p of start.policies) {
      const { model, tokenizer } = buildPolicyModel(p.source);
      const policy = new PolicyRuntime(p.policyId, config.policies[p.policyId], model, tokenizer, createOptimizer(model, config.policies[p.policyId].optimizer), p.source, p.identity);
      policy.adoptWeights(p.weights, p.version);
      policies.set(p.policyId, policy);
      slots.set(p.policyId, p.slot);
    }
    const roles = rolePolicies(config, policies);
    endpoint.send({ type: 'ready' });
    const evalSet = evaluationSet(config, data);
    /** Run the evaluation shares the trainer asked for, with the weights it sent. */
    let evalMs = 0;
    const serveEvaluations = async () => {
      while (evaluations.length > 0) {
        const request = evaluations.shift()!;
        for (const p of request.policies) copyWith(p);
        const ctx = { family: data.family, policies: rolePolicies(config, evalPolicies), served, config };
        const startedAt = Date.now();
        const chains: Partial<Record<EvalPart, EvalChain[]>> = {};
        for (const part of request.parts) chains[part] = await evaluatePartAsync(ctx, evalSet.problems, evalSet.seed, part);
        const fixedMetrics = request.fixed ? await fixedSetMetricsAsync(ctx, evalSet.problems, request.fixed, evalSet.seed) : undefined;
        evalMs += Date.now() - startedAt;
        options.timeline?.({ kind: 'eval', agent: 'system', worker: options.worker, step: request.at, policyVersion: ctx.policies.solver?.version ?? 0, startedAt, endedAt: Date.now(), tokens: 0 });
        endpoint.send({ type: 'evaluated', at: request.at, chains, fixedMetrics });
        await endpoint.flush?.();
      }
    };
    /**
     * Take the offered parts one at a time, with the weights sent, until the offer runs out or the
     * trainer claims the rest; each is announced before it is computed, so the trainer never
     * computes a part this process has begun (a claim crossing an announcement costs one part twice).
     */
    let gradientMs = 0;
    const serveGradients = async () => {
      while (gradientRequests.length > 0) {
        const request = gradientRequests.shift()!;
        const copy = copyWith(request.policy);
        for (let part = 0; ; part++) {
          await yieldToEventLoop();
          receive();
          if (part >= takeBefore.get(request.id)!) break;
          endpoint.send({ type: 'gradients-started', id: request.id, part });
          await endpoint.flush?.();
          const startedAt = Date.now();
          const [piece, opts, tokens] = [request.parts[part], request.options, request.minibatchTokens];
          // The synchronous forms where reads are synchronous (wasm/cpu), the asynchronous ones on webgpu.
          const result = await syncWhereReadable(() => ppoPartGradients(copy.model, piece, opts, tokens), () => ppoPartGradientsAsync(copy.model, piece, opts, tokens));
          const flatGrads = await syncWhereReadable(() => flattenGradients(copy.model, result.grads), () => flattenGradientsAsync(copy.model, result.grads));
          for (const g of result.grads) g.dispose();
          const endedAt = Date.now();
          gradientMs += endedAt - startedAt;
          // Like the trainer's update spans, it carries the version the update produces.
          options.timeline?.({ kind: 'update', agent: request.agent, worker: options.worker, step: request.step, policyVersion: request.policy.version + 1, startedAt, endedAt, tokens: result.sums.tokens });
          endpoint.send({ type: 'gradients-done', id: request.id, part, flatGrads, sums: result.sums }, [flatGrads.buffer as ArrayBuffer]);
          await endpoint.flush?.();
        }
        takeBefore.delete(request.id);
      }
    };
    /** Serve the trainer's requests; returns the milliseconds spent. */
    const serveRequests = async (): Promise<number> => {
      const before = evalMs + gradientMs;
      // Gradients first: the trainer is waiting for them in the middle of an update.
      await serveGradients();
      await serveEvaluations();
      await serveGradients();
      return evalMs + gradientMs - before;
    };
    const { scope } = scoringScope(config);
    const planner = new StalenessPlanner(config.pipeline.max_staleness, scope, Object.fromEntries(slots));
    const { minibatch_size: minibatch, ppo_epochs: epochs } = config.optimization;

    /** Take in the newest weights for a policy, if newer than the ones held. */
    const adopt = (policyId: string) => {
      const next = mailbox.get(policyId);
      if (!next) return;
      mailbox.delete(policyId);
      if (next.slot <= slots.get(policyId)!) return;
      policies.get(policyId)!.adoptWeights(next.weights, next.version);
      slots.set(policyId, next.slot);
    };

    for (let step = start.startStep; step < config.optimization.steps; step++) {
      receive();
      planner.beginStep();
      const { problems, seed } = stepProblems(config, data, step);
      let batchSlot = 0;
      let waitMs = 0;
      const evalBefore = evalMs;
      const gradientBefore = gradientMs;
      const stepStart = Date.now();
      const ctx: RolloutContext = {
        family: data.family,
        policies: roles,
        served,
        config,
        onSegment: (s) => options.timeline?.({ kind: 'segment', agent: s.agent, worker: options.worker, step, policyVersion: s.policyVersion, startedAt: s.startedAt, endedAt: s.endedAt, tokens: s.tokens }),
      };
      const onPause = async (pause: DriverPause) => {
        if (pause.kind === 'agent-start') {
          batchSlot = planner.batchSlot(pause.policy.id);
          return;
        }
        if (pause.kind === 'agent-done') {
          const updates = plannedUpdates(pause.turns.filter((t) => t.responseTokens.length > 0).length, minibatch, epochs);
          planner.commit(pause.policy.id, updates);
          endpoint.send({
            type: 'batch', step, agent: pause.agent, role: pause.role, policyId: pause.policy.id, slot: batchSlot, updates,
            turns: pause.turns.map((turn, i) => ({ episode: pause.episodes[i], turn })),
          });
          await endpoint.flush?.();
          return;
        }
        // Before a segment: let messages in, serve evaluations, hold the staleness bound.
        await yieldToEventLoop();
        receive();
        await serveRequests();
        const id = pause.policy.id;
        // Newer weights are taken in where a stage begins (a group's first segment, or where
        // unfinished sequences carry over), or when the bound requires them. Within a stage they
        // wait: swapping there rebuilds the decode cache of every live sequence, a prefill that
        // costs about as much as the stage's remaining segments.
        if (pause.segment === 0) adopt(id);
        if (!planner.mayDecode(id, batchSlot, slots.get(id)!)) adopt(id);
        if (!planner.mayDecode(id, batchSlot, slots.get(id)!)) {
          const waitStart = Date.now();
          const versionBefore = pause.policy.version;
          let servedMs = 0;
          while (!planner.mayDecode(id, batchSlot, slots.get(id)!)) {
            await inbox.wait(abort.signal);
            receive();
            servedMs += await serveRequests();
            adopt(id);
          }
          const waitEnd = Date.now();
          // Time spent on the trainer's requests meanwhile is theirs, not waiting.
          waitMs += waitEnd - waitStart - servedMs;
          options.timeline?.({ kind: 'wait', agent: pause.agent, worker: options.worker, step, policyVersion: versionBefore, startedAt: waitStart, endedAt: waitEnd, tokens: 0 });
        }
      };
      const episodes = await drive(rolloutSteps(ctx, problems, seed), onPause);
      endpoint.send({
        type: 'step-done',
        step,
        problemKeys: problems.map((p) => p.key),
        episodes: episodes.map((e) => ({ finalAnswer: e.finalAnswer, correct: e.correct, rounds: e.rounds, chains: e.chains })),
        servedTurns: episodes.flatMap((e, episode) => e.turns.filter((turn) => served[turn.role]).map((turn) => ({ episode, turn }))),
        rolloutMs: Date.now() - stepStart,
        waitMs,
        evalMs: evalMs - evalBefore,
        gradientMs: gradientMs - gradientBefore,
      });
      if (ownPool) options.poolMetrics?.(step, ownPool.metrics());
    }
    // Everything is sent; stay until the trainer ends the run (it may still be training).
    for (;;) {
      receive();
      await serveRequests();
      await inbox.wait(abort.signal);
    }
  } catch (error) {
    if (error instanceof RolloutStopped) return;
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    for (const p of policies.values()) p.dispose();
    for (const p of evalPolicies.values()) p.dispose();
    ownPool?.close();
  }
}

/**
 * One MarsRL run from start (or from its last checkpoint) to the end: warm start when a policy
 * has no starting checkpoint, then RL steps of grouped rollouts → rewards → advantages → one
 * PPO update per agent, with held-out evaluation and checkpoints. Every turn, segment, reward,
 * advantage and metric goes into the store through the batched writer.
 *
 * Why one update per agent: the per-agent gradient norm before clipping is the Dr. MAS
 * diagnostic, and updating each agent's turns as its own minibatch measures it exactly; agents
 * sharing a policy (Verifier1/Verifier2, or one shared policy) update it in turn.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Role, RunConfig } from '../config/schema';
import { ROLES } from '../config/schema';
import { initBackend, type BackendInfo } from '../model/backend';
import { Tokenizer } from '../model/tokenizer';
import { computeAdvantages, computeRewards, meanInflationFactors } from '../rl';
import type { BatchWriter, Store } from '../store';
import { getTaskFamily } from '../tasks';
import type { Problem, TaskFamily } from '../tasks/types';
import { Rng } from '../util/rng';
import { evaluate } from './evaluate';
import { createPolicy, loadPolicies, rolePolicies, savePolicies, usedPolicyIds, type PolicyRuntime } from './policies';
import { ppoStep, responseLogProbs, type PolicySample } from './ppo';
import { pretrainPolicy, sampleSolverSolutions } from './pretrain';
import { rolloutEpisodes, type RolloutEpisode, type RolloutTurn } from './rollout';

export interface TrainProgress {
  phase: 'setup' | 'pretrain' | 'eval' | 'rl' | 'done';
  step: number;
  totalSteps: number;
  metrics: Record<string, number>;
  message?: string;
}

export interface TrainOptions {
  store: Store;
  runId: number;
  config: RunConfig;
  /** Folder for checkpoints (the run's folder). */
  runDir: string;
  /** Name of this process in segment and timeline rows. */
  worker?: string;
  signal?: AbortSignal;
  onProgress?: (progress: TrainProgress) => void;
  /** Continue from the latest checkpoint in `runDir` instead of starting fresh. */
  resume?: boolean;
  /**
   * Fault injection, for tests of the failure paths: make every PPO loss from this step on NaN,
   * as a diverged policy would.
   */
  injectNanLossFromStep?: number;
}

export type TrainOutcome = { status: 'done'; step: number } | { status: 'interrupted'; step: number; reason: string } | { status: 'failed'; step: number; reason: string };

/** Raised when `optimization.nan_tolerance` updates in a row were skipped for NaN/Inf. */
export class NonFiniteError extends Error {}

export interface TaskData {
  family: TaskFamily;
  tokenizer: Tokenizer;
  train: Problem[];
  test: Problem[];
}

export function loadTaskData(config: RunConfig): TaskData {
  const family = getTaskFamily(config.task.family, { path: config.task.jsonl_path, checker: config.task.checker });
  const tokenizer = new Tokenizer(family.charset);
  const train = family.generate({ seed: config.seed, difficulty: config.task.difficulty, count: config.task.train_size, split: 'train' });
  const test = family.generate({ seed: config.seed, difficulty: config.task.difficulty, count: config.task.test_size, split: 'test' });
  return { family, tokenizer, train, test };
}

function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN;
}

function std(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  return Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / values.length);
}

/** Problem ids in the store, inserted the first time a problem is used in this run. */
class ProblemIds {
  private readonly ids = new Map<string, number>();
  constructor(
    private readonly store: Store,
    private readonly runId: number,
  ) {
    const rows = store.db.prepare('SELECT id, split, problem_key FROM problems WHERE run_id = ?').all(runId) as { id: number; split: string; problem_key: string }[];
    for (const r of rows) this.ids.set(`${r.split}:${r.problem_key}`, r.id);
  }

  idOf(writer: BatchWriter, problem: Problem): number {
    const key = `${problem.split}:${problem.key}`;
    let id = this.ids.get(key);
    if (id === undefined) {
      id = writer.newId('problems');
      writer.problem({ id, runId: this.runId, split: problem.split, family: problem.family, problemKey: problem.key, question: problem.question, answer: problem.answer, meta: problem.meta });
      this.ids.set(key, id);
    }
    return id;
  }
}

export async function trainRun(options: TrainOptions): Promise<TrainOutcome> {
  const { store, runId, config, signal } = options;
  const worker = options.worker ?? `trainer-${process.pid}`;
  const progress = (p: TrainProgress) => options.onProgress?.(p);
  const writer = store.writer({ maxPending: 4000, flushIntervalMs: 500 });
  const runStart = store.runs.get(runId)?.startedAt ?? Date.now();
  const wallTime = () => (Date.now() - runStart) / 1000;
  const policies = new Map<string, PolicyRuntime>();
  let step = 0;
  try {
    progress({ phase: 'setup', step: 0, totalSteps: config.optimization.steps, metrics: {}, message: 'choosing a backend' });
    const backend: BackendInfo = await initBackend(config.runtime.backend);
    store.runs.setBackend(runId, backend.name, backend as unknown as Record<string, unknown>);
    for (const skipped of backend.skipped) {
      store.events.log(runId, 'info', 'backend_skipped', `${skipped.backend}: ${skipped.reason}`, { ...skipped });
    }

    const data = loadTaskData(config);
    const problemIds = new ProblemIds(store, runId);
    const checkpointRoot = path.join(options.runDir, 'checkpoints');

    if (options.resume) {
      const latest = store.events.latestCheckpoint(runId);
      if (!latest) throw new Error(`run ${runId} has no checkpoint to resume from`);
      const loaded = loadPolicies(path.dirname(latest.path), config);
      for (const [id, p] of loaded.policies) policies.set(id, p);
      step = loaded.step + 1;
      store.events.log(runId, 'info', 'resumed', `resumed from the checkpoint of step ${loaded.step}`, { path: latest.path }, loaded.step);
    } else {
      const needWarmStart: PolicyRuntime[] = [];
      for (const id of usedPolicyIds(config)) {
        const { policy, fromCheckpoint } = createPolicy(id, config.policies[id], data.tokenizer, config.seed);
        policies.set(id, policy);
        if (fromCheckpoint) store.events.log(runId, 'info', 'init_checkpoint', `policy ${id} starts from ${fromCheckpoint}`, { policy: id, path: fromCheckpoint });
        else needWarmStart.push(policy);
      }
      if (needWarmStart.length > 0) await warmStart(options, data, policies, needWarmStart, writer, wallTime);
    }
    const roles = rolePolicies(config, policies);
    if (config.optimization.kl_coef > 0) {
      for (const p of policies.values()) {
        const { createModel } = await import('../model/gpt');
        p.reference = createModel(p.model.config, 0);
        p.reference.setWeights(p.model.getWeights());
      }
    }

    const evalProblems = data.test.slice(0, config.eval.problems);
    const runEvaluation = (at: number) => {
      const t0 = Date.now();
      const result = evaluate({ family: data.family, tokenizer: data.tokenizer, policies: roles, config }, evalProblems, (config.seed ^ 0x5eed) >>> 0);
      const evalMs = Date.now() - t0;
      for (const [key, value] of Object.entries(result.metrics)) writer.metric({ runId, step: at, wallTime: wallTime(), key, value });
      writer.timelineSpan({ runId, kind: 'eval', agent: 'system', worker, step: at, policyVersion: roles.solver.version, startedAt: t0, endedAt: t0 + evalMs, tokens: 0 });
      logEvalEpisodes(writer, problemIds, runId, at, result.greedyChains);
      writer.flush();
      progress({ phase: 'eval', step: at, totalSteps: config.optimization.steps, metrics: result.metrics });
      return result.metrics;
    };

    if (step === 0) runEvaluation(0);
    let consecutiveSkips = 0;

    for (; step < config.optimization.steps; step++) {
      // Training is synchronous compute: yield once per step so stop messages and signals are
      // delivered (a worker's event loop would otherwise only see them after the last step).
      await yieldToEventLoop();
      if (signal?.aborted) return finishInterrupted(store, runId, step, String(signal.reason ?? 'stopped'), writer);
      const stepRng = new Rng(config.seed, `step:${step}`);
      const problems = Array.from({ length: config.rollout.problems_per_step }, () => data.train[stepRng.int(0, data.train.length - 1)]);
      const rolloutStart = Date.now();
      const episodes = rolloutEpisodes(
        {
          family: data.family,
          tokenizer: data.tokenizer,
          policies: roles,
          config,
          onSegment: (s) => writer.timelineSpan({ runId, kind: 'segment', agent: s.agent, worker, step, policyVersion: s.policyVersion, startedAt: s.startedAt, endedAt: s.endedAt, tokens: s.tokens }),
        },
        problems,
        stepRng.nextUint32(),
      );
      const rolloutMs = Date.now() - rolloutStart;
      const scored = scoreEpisodes(config, episodes);
      logEpisodes(writer, problemIds, runId, step, episodes, scored, worker, config);
      const metrics = rolloutMetrics(config, episodes, scored);

      // One PPO update per agent, in chain order.
      const updateStart = Date.now();
      const byAgent = new Map<string, { turn: RolloutTurn; advantage: number }[]>();
      episodes.forEach((episode, e) =>
        episode.turns.forEach((turn, i) => {
          const list = byAgent.get(turn.agent) ?? [];
          list.push({ turn, advantage: scored[e].advantages[i].value });
          byAgent.set(turn.agent, list);
        }),
      );
      for (const [agent, items] of byAgent) {
        if (signal?.aborted) break;
        const policy = roles[items[0].turn.role];
        const samples: PolicySample[] = items
          .filter(({ turn }) => turn.responseTokens.length > 0)
          .map(({ turn, advantage }) => ({
            tokens: [...turn.promptTokens, ...turn.responseTokens],
            responseStart: turn.promptTokens.length,
            behaviourLogProbs: turn.behaviourLogProbs,
            advantage,
          }));
        if (samples.length === 0) continue;
        if (policy.reference) {
          const refs = responseLogProbs(policy.reference, samples, config.rollout.temperature, data.tokenizer.padId);
          samples.forEach((s, i) => (s.referenceLogProbs = refs[i]));
        }
        const norms: number[] = [];
        const agentStats = { loss: [] as number[], entropy: [] as number[], kl: [] as number[], clip: [] as number[] };
        for (let epoch = 0; epoch < config.optimization.ppo_epochs; epoch++) {
          for (let start = 0; start < samples.length; start += config.optimization.minibatch_size) {
            const t0 = Date.now();
            const batch = samples.slice(start, start + config.optimization.minibatch_size);
            const poisoned = options.injectNanLossFromStep !== undefined && step >= options.injectNanLossFromStep;
            const r = ppoStep(policy.model, policy.optimizer, poisoned ? batch.map((s) => ({ ...s, advantage: Number.NaN })) : batch, {
              clip: config.optimization.ppo_clip,
              klCoef: config.optimization.kl_coef,
              temperature: config.rollout.temperature,
              padId: data.tokenizer.padId,
            });
            writer.timelineSpan({ runId, kind: 'update', agent, worker, step, policyVersion: policy.version, startedAt: t0, endedAt: Date.now(), tokens: r.tokens });
            if (r.skipped) {
              consecutiveSkips++;
              store.events.log(runId, 'warning', 'non_finite_update', `${agent} update skipped at step ${step}: ${r.skipReason}`, { agent, reason: r.skipReason }, step);
              if (consecutiveSkips >= config.optimization.nan_tolerance) {
                throw new NonFiniteError(`${consecutiveSkips} updates in a row had a NaN/Inf loss or gradient (last: ${agent} at step ${step}, ${r.skipReason}); lower the learning rate or enable clipping (optimization.nan_tolerance = ${config.optimization.nan_tolerance})`);
              }
              continue;
            }
            consecutiveSkips = 0;
            norms.push(r.gradNorm);
            agentStats.loss.push(r.loss);
            agentStats.entropy.push(r.entropy);
            agentStats.kl.push(r.kl);
            agentStats.clip.push(r.clipFraction);
          }
        }
        if (norms.length) {
          metrics[`${agent}/grad_norm`] = mean(norms);
          metrics[`${agent}/loss`] = mean(agentStats.loss);
          metrics[`${agent}/entropy`] = mean(agentStats.entropy);
          metrics[`${agent}/kl`] = mean(agentStats.kl);
          metrics[`${agent}/clip_fraction`] = mean(agentStats.clip);
        }
      }
      const updateMs = Date.now() - updateStart;
      const stepTokens = episodes.reduce((a, e) => a + e.turns.reduce((b, t) => b + t.responseTokens.length, 0), 0);
      metrics['perf/rollout_s'] = rolloutMs / 1000;
      metrics['perf/update_s'] = updateMs / 1000;
      metrics['perf/tokens_per_s'] = stepTokens / Math.max((rolloutMs + updateMs) / 1000, 1e-3);
      metrics['pipeline/staleness'] = 0;
      for (const [key, value] of Object.entries(metrics)) writer.metric({ runId, step, wallTime: wallTime(), key, value });
      writer.flush();
      progress({ phase: 'rl', step: step + 1, totalSteps: config.optimization.steps, metrics });

      const isLast = step === config.optimization.steps - 1;
      if (!isLast && config.eval.every > 0 && (step + 1) % config.eval.every === 0) runEvaluation(step + 1);
      if (isLast || (config.optimization.checkpoint_every > 0 && (step + 1) % config.optimization.checkpoint_every === 0)) {
        saveRunCheckpoint(store, runId, checkpointRoot, policies, data.tokenizer, config, step, metrics);
      }
    }
    if (config.optimization.steps > 0 || step === 0) runEvaluation(config.optimization.steps);
    writer.close();
    progress({ phase: 'done', step: config.optimization.steps, totalSteps: config.optimization.steps, metrics: {} });
    return { status: 'done', step: config.optimization.steps };
  } catch (error) {
    try {
      writer.close();
    } catch {
      // The original error matters more than a failed final flush.
    }
    const reason = error instanceof Error ? error.message : String(error);
    store.events.log(runId, 'error', error instanceof NonFiniteError ? 'non_finite_stop' : 'training_error', reason, error instanceof Error && error.stack ? { stack: error.stack } : null, step);
    return { status: 'failed', step, reason };
  } finally {
    for (const p of policies.values()) p.dispose();
  }
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function finishInterrupted(store: Store, runId: number, step: number, reason: string, writer: BatchWriter): TrainOutcome {
  writer.close();
  store.events.log(runId, 'warning', 'interrupted', `stopped before step ${step}: ${reason}`, null, step);
  return { status: 'interrupted', step, reason };
}

function saveRunCheckpoint(store: Store, runId: number, root: string, policies: Map<string, PolicyRuntime>, tokenizer: Tokenizer, config: RunConfig, step: number, metrics: Record<string, number>): void {
  const dir = path.join(root, `step-${String(step).padStart(6, '0')}`);
  const written = savePolicies(dir, policies, tokenizer, config, step, { runId });
  for (const target of written) {
    store.events.addCheckpoint({ runId, step, policyId: path.basename(target), path: target, createdAt: Date.now(), metrics: null });
  }
  store.events.log(runId, 'info', 'checkpoint', `checkpoint at step ${step}`, { dir, metrics }, step);
  // Keep the two newest checkpoints and every one that evaluation might pick later.
  const all = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => d.startsWith('step-')).sort() : [];
  for (const old of all.slice(0, -2)) fs.rmSync(path.join(root, old), { recursive: true, force: true });
}

interface ScoredEpisode {
  rewards: { value: number; components: Record<string, number> }[];
  advantages: { value: number; mu: number; sigma: number; groupKey: string }[];
}

/** Rewards by the configured scheme, then advantages over all agents' turns of one problem. */
export function scoreEpisodes(config: RunConfig, episodes: readonly RolloutEpisode[]): ScoredEpisode[] {
  return episodes.map((episode, e) => {
    const rewardTurns = episode.turns.map((t) => ({ agent: t.agent, role: t.role, correct: t.correct, formatValid: t.formatValid }));
    const rewards = computeRewards(config.reward.scheme, rewardTurns, { correct: episode.correct }, { formatPenalty: config.reward.format_penalty });
    // The group key is the prompt: one problem's turns across agents (Dr. MAS: agent k's samples
    // for the same prompt).
    const groupKey = `${e}:${episode.problem.key}`;
    const advantages = computeAdvantages(
      episode.turns.map((t, i) => ({ agent: t.agent, reward: rewards[i].value, groupKey })),
      config.advantage.mode,
      { std: config.advantage.std, singleSample: config.advantage.single_sample, eps: config.advantage.eps },
    );
    return { rewards: rewards.map((r) => ({ value: r.value, components: { ...r.components } })), advantages };
  });
}

function rolloutMetrics(config: RunConfig, episodes: readonly RolloutEpisode[], scored: readonly ScoredEpisode[]): Record<string, number> {
  const metrics: Record<string, number> = {};
  const byAgent = new Map<string, { reward: number[]; advantage: number[]; length: number[]; correct: boolean[]; formatValid: boolean[] }>();
  const inflationInput: { agent: string; reward: number; groupKey: string }[] = [];
  episodes.forEach((episode, e) =>
    episode.turns.forEach((turn, i) => {
      const s = byAgent.get(turn.agent) ?? { reward: [], advantage: [], length: [], correct: [], formatValid: [] };
      s.reward.push(scored[e].rewards[i].value);
      s.advantage.push(scored[e].advantages[i].value);
      s.length.push(turn.responseTokens.length);
      s.correct.push(turn.correct);
      s.formatValid.push(turn.formatValid);
      byAgent.set(turn.agent, s);
      inflationInput.push({ agent: turn.agent, reward: scored[e].rewards[i].value, groupKey: String(e) });
    }),
  );
  for (const [agent, s] of byAgent) {
    metrics[`${agent}/reward/mean`] = mean(s.reward);
    metrics[`${agent}/reward/std`] = std(s.reward);
    metrics[`${agent}/advantage/mean`] = mean(s.advantage);
    metrics[`${agent}/advantage/std`] = std(s.advantage);
    metrics[`${agent}/response_length`] = mean(s.length);
    metrics[`${agent}/accuracy`] = mean(s.correct.map(Number));
    metrics[`${agent}/format_valid`] = mean(s.formatValid.map(Number));
    metrics[`${agent}/samples`] = s.reward.length;
  }
  for (const [agent, factor] of Object.entries(meanInflationFactors(inflationInput))) metrics[`${agent}/inflation`] = factor;
  metrics['system/accuracy'] = mean(episodes.map((e) => Number(e.correct)));
  metrics['solver/accuracy'] = byAgent.has('solver') ? mean(byAgent.get('solver')!.correct.map(Number)) : Number.NaN;
  // Verifier precision/recall of rejecting wrong solutions, and Corrector fix rate, per round.
  for (let round = 1; round <= config.rollout.rounds; round++) {
    let rejections = 0;
    let caught = 0;
    let wrong = 0;
    let fixed = 0;
    let wrongInputs = 0;
    for (const episode of episodes) {
      for (const t of episode.turns) {
        if (t.round !== round) continue;
        if (t.role === 'verifier') {
          const judged = episode.turns[t.parent!];
          if (!judged.correct) wrong++;
          if (t.verdict === 'reject') {
            rejections++;
            if (!judged.correct) caught++;
          }
        } else if (t.role === 'corrector') {
          const repaired = episode.turns[t.repairs!];
          if (!repaired.correct) {
            wrongInputs++;
            if (t.correct) fixed++;
          }
        }
      }
    }
    if (rejections > 0) metrics[`verifier${round}/precision`] = caught / rejections;
    if (wrong > 0) metrics[`verifier${round}/recall`] = caught / wrong;
    if (wrongInputs > 0) metrics[`corrector${round}/fix_rate`] = fixed / wrongInputs;
  }
  for (const key of Object.keys(metrics)) if (!Number.isFinite(metrics[key])) delete metrics[key];
  return metrics;
}

function logEpisodes(
  writer: BatchWriter,
  problemIds: ProblemIds,
  runId: number,
  step: number,
  episodes: readonly RolloutEpisode[],
  scored: readonly ScoredEpisode[],
  worker: string,
  config: RunConfig,
): number[][] {
  const now = Date.now();
  return episodes.map((episode, e) => {
    const problemId = problemIds.idOf(writer, episode.problem);
    const episodeId = writer.newId('episodes');
    writer.episode({ id: episodeId, runId, step, problemId, split: 'train', finalAnswer: episode.finalAnswer, correct: episode.correct, rounds: episode.rounds, meta: { chains: episode.chains.length } });
    const ids: number[] = [];
    episode.turns.forEach((turn, i) => {
      const id = writer.newId('turns');
      ids.push(id);
      writer.turn({
        id, runId, episodeId, step, agent: turn.agent, policyId: turn.policyId, round: turn.round, groupId: turn.groupId,
        parentTurnId: turn.parent === null ? null : ids[turn.parent], sampleIndex: turn.sampleIndex, prompt: turn.promptText,
        text: turn.text, tokenCount: turn.responseTokens.length, parsed: turn.role === 'verifier' ? turn.verdict : turn.answer,
        correct: turn.correct, formatValid: turn.formatValid, policyVersionMin: turn.policyVersionMin, policyVersionMax: turn.policyVersionMax, createdAt: now,
      });
      for (const seg of turn.segments) {
        writer.segment({ id: writer.newId('segments'), turnId: id, runId, segIndex: seg.index, tokenStart: seg.tokenStart, tokenEnd: seg.tokenEnd, text: seg.text, finished: seg.finished, policyVersion: seg.policyVersion, startedAt: seg.startedAt, endedAt: seg.endedAt, worker });
      }
      writer.reward({ turnId: id, runId, value: scored[e].rewards[i].value, components: scored[e].rewards[i].components, scheme: config.reward.scheme });
      const adv = scored[e].advantages[i];
      writer.advantage({ turnId: id, runId, value: adv.value, mode: config.advantage.mode, groupKey: adv.groupKey, mu: adv.mu, sigma: adv.sigma });
    });
    return ids;
  });
}

/** The greedy evaluation chains of a step, stored as test-split episodes for the browser. */
function logEvalEpisodes(writer: BatchWriter, problemIds: ProblemIds, runId: number, step: number, chains: ReturnType<typeof evaluate>['greedyChains']): void {
  const now = Date.now();
  for (const chain of chains) {
    const problemId = problemIds.idOf(writer, chain.problem);
    const episodeId = writer.newId('episodes');
    writer.episode({ id: episodeId, runId, step, problemId, split: 'test', finalAnswer: chain.finalAnswer, correct: chain.finalCorrect, rounds: chain.steps.filter((s) => s.role === 'verifier').length, meta: { eval: 'greedy' } });
    let parent: number | null = null;
    for (const s of chain.steps) {
      const id = writer.newId('turns');
      writer.turn({
        id, runId, episodeId, step, agent: s.role === 'solver' ? 'solver' : `${s.role}${s.round}`, policyId: s.role, round: s.round, groupId: 0,
        parentTurnId: parent, sampleIndex: 0, prompt: s.prompt, text: s.text, tokenCount: s.text.length,
        parsed: s.role === 'verifier' ? (s.verdict ?? null) : (s.answer ?? null), correct: s.correct, formatValid: true,
        policyVersionMin: 0, policyVersionMax: 0, createdAt: now,
      });
      parent = id;
    }
  }
}

async function warmStart(
  options: TrainOptions,
  data: TaskData,
  policies: Map<string, PolicyRuntime>,
  targets: PolicyRuntime[],
  writer: BatchWriter,
  wallTime: () => number,
): Promise<void> {
  const { store, runId, config } = options;
  const heldOut = data.test.slice(0, Math.min(100, data.test.length));
  const roles = rolePolicies(config, policies);
  let solverSamples: Map<string, string> | undefined;
  // The Solver first: the Verifier and Corrector then learn from its real samples.
  const ordered = [...targets].sort((a, b) => Number(b === roles.solver) - Number(a === roles.solver));
  let globalStep = 0;
  for (const policy of ordered) {
    if (policy !== roles.solver && !solverSamples && ROLES.some((r: Role) => roles[r] === roles.solver)) {
      const sampleProblems = data.train.slice(0, Math.min(512, data.train.length));
      const texts = sampleSolverSolutions(roles.solver, data.tokenizer, sampleProblems, config, config.seed + 3);
      solverSamples = new Map(sampleProblems.map((p, i) => [p.key, texts[i]]));
    }
    await yieldToEventLoop();
    if (options.signal?.aborted) throw new Error('stopped during warm start');
    store.events.log(runId, 'info', 'warm_start', `warm-starting policy ${policy.id} for ${config.pretrain.steps} steps`, { policy: policy.id });
    await pretrainPolicy(policy, {
      family: data.family,
      tokenizer: data.tokenizer,
      config,
      pretrain: config.pretrain,
      train: data.train,
      heldOut,
      seed: config.seed,
      solverSamples,
      evalEvery: Math.max(50, Math.floor(config.pretrain.steps / 4)),
      signal: options.signal,
      onProgress: (p) => {
        if (p.step % 10 === 0) {
          writer.metric({ runId, step: globalStep, wallTime: wallTime(), key: `pretrain/${p.policyId}/loss`, value: p.loss });
          options.onProgress?.({ phase: 'pretrain', step: p.step, totalSteps: p.steps, metrics: { loss: p.loss }, message: `warm start ${p.policyId}` });
        }
        globalStep++;
      },
      onEval: (e) => {
        for (const [role, score] of Object.entries(e.scores)) {
          writer.metric({ runId, step: globalStep, wallTime: wallTime(), key: `pretrain/${e.policyId}/${role}_score`, value: score! });
        }
      },
    });
    if (options.signal?.aborted) throw new Error('stopped during warm start');
  }
}

/**
 * What the synchronous and the pipelined trainer share: the step's problems, scoring, one PPO
 * update per agent, the metrics of a step, and the rows a step writes to the store. Both loops
 * call these same functions, so a batch is scored, trained and stored the same way in either mode.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import { agentName } from '#shared/agents';
import { Tokenizer } from '../gpt/tokenizer';
import { classBalanceWeights, computeAdvantages, computeRewards, meanInflationFactors, type RewardOptions, type TurnAdvantage } from '../rl';
import type { BatchWriter, Store } from '../store';
import { getTaskFamily } from '../tasks';
import type { Problem, TaskFamily } from '../tasks/types';
import { Rng } from '../util/rng';
import type { evaluate } from './evaluate';
import { savePolicies, type PolicyRuntime } from './policies';
import { addPpoParts, applyPpoPartsAsync, ppoPartGradientsAsync, ppoStepAsync, responseLogProbsAsync, responseTokenCount, type PolicySample, type PpoOptions, type PpoPart, type PpoRemotePart, type PpoStepResult } from './ppo';
import { responseLength, type RolloutEpisode, type RolloutTurn } from './rollout';

/** Raised when `optimization.nan_tolerance` updates in a row were skipped for NaN/Inf. */
export class NonFiniteError extends Error {}

export interface TaskData {
  family: TaskFamily;
  /** The task's character tokenizer: the GPT family's vocabulary (a Hugging Face policy brings its own). */
  tokenizer: Tokenizer;
  train: Problem[];
  test: Problem[];
}

export function loadTaskData(config: RunConfig): TaskData {
  const family = getTaskFamily(config.task.family, {
    path: config.task.jsonl_path,
    checker: config.task.checker,
    mathPath: config.task.math_path,
    generator: config.task.math_generator,
    prompts: config.prompts,
  });
  const tokenizer = new Tokenizer(family.charset);
  const train = family.generate({ seed: config.seed, difficulty: config.task.difficulty, count: config.task.train_size, split: 'train' });
  const test = family.generate({ seed: config.seed, difficulty: config.task.difficulty, count: config.task.test_size, split: 'test' });
  return { family, tokenizer, train, test };
}

/** The reward options of a run's config (format penalty, role scales). */
export function rewardOptions(config: RunConfig): RewardOptions {
  return { formatPenalty: config.reward.format_penalty, roleScale: config.reward.scale };
}

export function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN;
}

export function std(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  return Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / values.length);
}

/** Problem ids in the store, inserted the first time a problem is used in this run. */
export class ProblemIds {
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

export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export async function saveRunCheckpoint(store: Store, runId: number, root: string, policies: Map<string, PolicyRuntime>, config: RunConfig, step: number, metrics: Record<string, number>): Promise<void> {
  const dir = path.join(root, `step-${String(step).padStart(6, '0')}`);
  const written = await savePolicies(dir, policies, config, step, { runId });
  for (const target of written) {
    store.events.addCheckpoint({ runId, step, policyId: path.basename(target), path: target, createdAt: Date.now(), metrics: null });
  }
  store.events.log(runId, 'info', 'checkpoint', `checkpoint at step ${step}`, { dir, metrics }, step);
  // Keep the two newest checkpoints and every one that evaluation might pick later.
  const all = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => d.startsWith('step-')).sort() : [];
  for (const old of all.slice(0, -2)) fs.rmSync(path.join(root, old), { recursive: true, force: true });
}


/** The held-out problems every evaluation of a run uses, and its seed. */
export function evaluationSet(config: RunConfig, data: TaskData): { problems: Problem[]; seed: number } {
  return { problems: data.test.slice(0, config.eval.problems), seed: (config.seed ^ 0x5eed) >>> 0 };
}

/**
 * The problems of RL step `step` and the seed of its rollout: a pure function of the config's
 * seed and the step, so a resumed run, and the rollout process of a pipelined run, draw exactly
 * the problems the synchronous run draws.
 */
export function stepProblems(config: RunConfig, data: TaskData, step: number): { problems: Problem[]; seed: number } {
  const stepRng = new Rng(config.seed, `step:${step}`);
  const problems = Array.from({ length: config.rollout.problems_per_step }, () => data.train[stepRng.int(0, data.train.length - 1)]);
  return { problems, seed: stepRng.nextUint32() };
}

/**
 * Rewards and advantages of one agent's turns without the rest of the episode, for a config
 * whose scoring is agent-local (queues.ts `scoringScope` = 'agent'): a decoupled reward reads only
 * the turn, and agentwise / no-std advantages read only agent k's turns of the prompt, so the
 * values equal `scoreEpisodes` over the finished episodes. Results are written into `scored` at
 * each turn's index.
 */
export function scoreAgentTurns(config: RunConfig, episodes: readonly RolloutEpisode[], turns: readonly { episode: number; turn: RolloutTurn }[], scored: ScoredEpisode[]): void {
  const byEpisode = new Map<number, RolloutTurn[]>();
  for (const { episode, turn } of turns) {
    const list = byEpisode.get(episode) ?? [];
    list.push(turn);
    byEpisode.set(episode, list);
  }
  for (const [e, list] of byEpisode) {
    // The outcome is not known yet; an agent-local scheme does not read it.
    const rewards = computeRewards(config.reward.scheme, list.map((t) => ({ agent: t.agent, role: t.role, correct: t.correct, formatValid: t.formatValid })), { correct: false }, rewardOptions(config));
    const groupKey = `${e}:${episodes[e].problem.key}`;
    const advantages = computeAdvantages(
      list.map((t, i) => ({ agent: t.agent, reward: rewards[i].value, groupKey })),
      config.advantage.mode,
      { std: config.advantage.std, singleSample: config.advantage.single_sample, eps: config.advantage.eps },
    );
    list.forEach((t, i) => {
      scored[e].rewards[t.index] = { value: rewards[i].value, components: { ...rewards[i].components } };
      scored[e].advantages[t.index] = advantages[i];
    });
  }
  if (config.advantage.verifier_class_balance) balanceVerifierClasses(turns.map(({ episode, turn }) => ({ episode, turn, advantage: scored[episode].advantages[turn.index] })));
}

/**
 * Whether the solution a Verifier turn judged is right, read from the turn itself: its verdict and
 * whether that verdict was right (`correct`) give the truth it was judged against. null when the
 * verdict could not be parsed (a format failure says nothing about the solution).
 */
function judgedRight(turn: RolloutTurn): boolean | null {
  if (turn.verdict === null) return null;
  return (turn.verdict === 'approve') === turn.correct;
}

/**
 * `advantage.verifier_class_balance`: every Verifier agent's advantages of one step, weighted by
 * the class of the solution each turn judged (rl/advantages.ts classBalanceWeights), in place. A
 * turn whose own verdict was unparseable takes its class from a sibling that judged the same
 * solution (same episode and group). The items must be all of the step's turns of the agents
 * they hold: the pipeline's per-agent batches and the synchronous whole step both are.
 */
function balanceVerifierClasses(items: readonly { episode: number; turn: RolloutTurn; advantage: TurnAdvantage }[]): void {
  const byAgent = new Map<string, (typeof items)[number][]>();
  const groupTruth = new Map<string, boolean>();
  for (const item of items) {
    if (item.turn.role !== 'verifier') continue;
    const list = byAgent.get(item.turn.agent);
    if (list) list.push(item);
    else byAgent.set(item.turn.agent, [item]);
    const truth = judgedRight(item.turn);
    if (truth !== null) groupTruth.set(`${item.episode}:${item.turn.groupId}`, truth);
  }
  for (const list of byAgent.values()) {
    const weights = classBalanceWeights(list.map(({ episode, turn }) => groupTruth.get(`${episode}:${turn.groupId}`) ?? null));
    list.forEach(({ advantage }, i) => {
      advantage.value *= weights[i];
      advantage.weight = weights[i];
    });
  }
}

export interface UpdateContext {
  store: Store;
  runId: number;
  config: RunConfig;
  writer: BatchWriter;
  worker: string;
  injectNanLossFromStep?: number;
  /** Updates skipped for NaN/Inf in a row, across agents and steps. */
  skips: { consecutive: number };
}

/** What the synchronous and the pipelined training loops both work with. */
export interface RunContext {
  store: Store;
  runId: number;
  config: RunConfig;
  writer: BatchWriter;
  worker: string;
  data: TaskData;
  problemIds: ProblemIds;
  policies: Map<string, PolicyRuntime>;
  checkpointRoot: string;
  signal?: AbortSignal;
  update: UpdateContext;
  wallTime: () => number;
  /** The next step to train (for the outcome when a failure ends the run). */
  cursor: { step: number };
}

/**
 * Parts of one minibatch offered to another process (the pipeline's rollout worker), which takes
 * them one at a time in the offered order, with exactly the weights `policy` had when offered.
 */
export interface GradientOffer {
  /** Let the other process's messages in. */
  poll(): Promise<void>;
  /** How many offered parts (from the first) the other process has started, as far as known here. */
  started(): number;
  /** This process computes the offered parts from index `from` on: the other one takes only those before it. */
  claimFrom(from: number): void;
  /** The gradients of the first `count` offered parts (all started), as they arrive. */
  results(count: number): Promise<PpoRemotePart[]>;
}

/** Computes parts of minibatch gradients in another process while it would otherwise wait. */
export interface GradientOffload {
  /** Most of a minibatch's parts offered (pipeline.gradient_share, 0 < share < 1). */
  share: number;
  /** Parts a minibatch is cut into (pipeline.gradient_parts, ≥ 2). */
  parts: number;
  /** Offers parts; resolves once the offer has left this process. */
  offer(request: { agent: string; step: number; policy: PolicyRuntime; parts: PolicySample[][]; options: PpoOptions; minibatchTokens: number }): Promise<GradientOffer>;
}

/**
 * Cuts a minibatch into at most `parts` runs of consecutive samples with about equal tokens,
 * prompts included (the cost of a forward and backward pass grows with them); no part is empty.
 */
export function splitByTokens(samples: readonly PolicySample[], parts: number): PolicySample[][] {
  const total = samples.reduce((n, s) => n + s.tokens.length, 0);
  const pieces: PolicySample[][] = [];
  let current: PolicySample[] = [];
  let seen = 0;
  for (const sample of samples) {
    current.push(sample);
    seen += sample.tokens.length;
    // Close a part once the tokens so far reach its share of the whole.
    if (pieces.length < parts - 1 && seen >= ((pieces.length + 1) * total) / parts) {
      pieces.push(current);
      current = [];
    }
  }
  if (current.length > 0) pieces.push(current);
  return pieces;
}

/**
 * One minibatch, shared with the other process (work sharing, issue #5). The minibatch is cut into
 * parts; the back `share` of them are offered, last part first, and the other process takes them
 * one at a time whenever it would otherwise wait (between its segments, or at once when it waits
 * for weights), while this process computes from the front. Where they meet this process claims
 * each offered part the other has not started before computing it, so it never waits for work
 * that has not begun: at most for the one part the other is computing. A part both started in the
 * same moment is computed twice and counted once (this process's). The parts' gradients add up to
 * the minibatch's (ppo.ts), so the update is the same wherever they were computed.
 */
export async function minibatchStep(policy: PolicyRuntime, batch: PolicySample[], options: PpoOptions, agent: string, step: number, offload: GradientOffload | undefined): Promise<PpoStepResult> {
  const pieces = offload ? splitByTokens(batch, offload.parts) : [batch];
  const offered = offload ? Math.min(Math.floor(offload.share * pieces.length), pieces.length - 1) : 0;
  if (offered < 1) return ppoStepAsync(policy.model, policy.optimizer, batch, options);
  const minibatchTokens = responseTokenCount(batch);
  // Offer index j is piece P − 1 − j: the other process works down from the last piece.
  const pieceOf = (j: number) => pieces[pieces.length - 1 - j];
  const offer = await offload!.offer({ agent, step, policy, parts: Array.from({ length: offered }, (_, j) => pieceOf(j)), options, minibatchTokens });
  let own: PpoPart | null = null;
  // The asynchronous forms work on every backend; on webgpu they are the only ones (readback.ts).
  const compute = async (piece: PolicySample[]) => {
    const part = await ppoPartGradientsAsync(policy.model, piece, options, minibatchTokens);
    own = own ? addPpoParts(own, part) : part;
  };
  let away: PpoRemotePart[];
  try {
    for (let i = 0; i < pieces.length - offered; i++) {
      await compute(pieces[i]);
      await offer.poll();
    }
    // The meeting: claim the highest offer index not started, until the other process holds the rest.
    let limit = offered;
    for (;;) {
      await offer.poll();
      if (offer.started() >= limit) break;
      limit -= 1;
      offer.claimFrom(limit);
      await compute(pieceOf(limit));
    }
    away = await offer.results(limit);
  } catch (error) {
    for (const g of (own as PpoPart | null)?.grads ?? []) g.dispose();
    throw error;
  }
  return applyPpoPartsAsync(policy.model, policy.optimizer, own!, away);
}

/**
 * One agent's PPO update on its turns of a step: `ppo_epochs` passes of minibatches, each
 * recorded as an 'update' span; a NaN/Inf loss or gradient skips that minibatch with an event,
 * and `nan_tolerance` skips in a row raise NonFiniteError. Returns the agent's metrics (gradient
 * norm before clipping, loss, entropy, KL, clip fraction) when any update was applied.
 */
export async function updateAgent(
  ctx: UpdateContext,
  agent: string,
  policy: PolicyRuntime,
  items: readonly { turn: RolloutTurn; advantage: number }[],
  step: number,
  offload?: GradientOffload,
): Promise<Record<string, number>> {
  const { config, store, runId, writer } = ctx;
  const metrics: Record<string, number> = {};
  const samples: PolicySample[] = items
    .filter(({ turn }) => turn.responseTokens.length > 0)
    .map(({ turn, advantage }) => ({
      tokens: [...turn.promptTokens, ...turn.responseTokens],
      responseStart: turn.promptTokens.length,
      behaviourLogProbs: turn.behaviourLogProbs,
      advantage,
    }));
  if (samples.length === 0) return metrics;
  if (policy.reference) {
    const refs = await responseLogProbsAsync(policy.reference, samples, config.rollout.temperature, policy.tokenizer.padId);
    samples.forEach((s, i) => (s.referenceLogProbs = refs[i]));
  }
  const options: PpoOptions = { clip: config.optimization.ppo_clip, klCoef: config.optimization.kl_coef, temperature: config.rollout.temperature, padId: policy.tokenizer.padId };
  const norms: number[] = [];
  const agentStats = { loss: [] as number[], entropy: [] as number[], kl: [] as number[], clip: [] as number[] };
  for (let epoch = 0; epoch < config.optimization.ppo_epochs; epoch++) {
    for (let start = 0; start < samples.length; start += config.optimization.minibatch_size) {
      const t0 = Date.now();
      const batch = samples.slice(start, start + config.optimization.minibatch_size);
      const poisoned = ctx.injectNanLossFromStep !== undefined && step >= ctx.injectNanLossFromStep;
      const r = await minibatchStep(policy, poisoned ? batch.map((s) => ({ ...s, advantage: Number.NaN })) : batch, options, agent, step, offload);
      writer.timelineSpan({ runId, kind: 'update', agent, worker: ctx.worker, step, policyVersion: policy.version, startedAt: t0, endedAt: Date.now(), tokens: r.tokens });
      if (r.skipped) {
        ctx.skips.consecutive++;
        store.events.log(runId, 'warning', 'non_finite_update', `${agent} update skipped at step ${step}: ${r.skipReason}`, { agent, reason: r.skipReason }, step);
        if (ctx.skips.consecutive >= config.optimization.nan_tolerance) {
          throw new NonFiniteError(`${ctx.skips.consecutive} updates in a row had a NaN/Inf loss or gradient (last: ${agent} at step ${step}, ${r.skipReason}); lower the learning rate or enable clipping (optimization.nan_tolerance = ${config.optimization.nan_tolerance})`);
        }
        continue;
      }
      ctx.skips.consecutive = 0;
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
  return metrics;
}

export interface ScoredEpisode {
  rewards: { value: number; components: Record<string, number> }[];
  advantages: TurnAdvantage[];
}

/**
 * Whether each turn's trajectory ended right, for shared rewards. A grouped episode holds many
 * trajectories (Solver sample → Verifier → Corrector → …); giving every turn the one
 * majority-vote outcome of the episode would make every reward in a group equal, so GRPO-style
 * normalization would see σ = 0 and nothing would train. Instead a turn shares the outcome of the
 * chains that run through it (the right answer of the chain's last Solver/Corrector turn),
 * by majority when several chains pass through it; a Solver sample no Verifier selected is its
 * own trajectory.
 */
export function trajectoryOutcomes(episode: RolloutEpisode): boolean[] {
  const votes = episode.turns.map(() => ({ right: 0, total: 0 }));
  for (const chain of episode.chains) {
    const decider = [...chain].reverse().find((i) => episode.turns[i].role !== 'verifier');
    const right = decider !== undefined && episode.turns[decider].correct;
    for (const i of chain) {
      votes[i].total++;
      if (right) votes[i].right++;
    }
  }
  return episode.turns.map((t, i) => (votes[i].total === 0 ? t.correct : votes[i].right * 2 >= votes[i].total));
}

/** Rewards by the configured scheme, then advantages over all agents' turns of one problem. */
export function scoreEpisodes(config: RunConfig, episodes: readonly RolloutEpisode[]): ScoredEpisode[] {
  const scored = episodes.map((episode, e) => {
    const rewardTurns = episode.turns.map((t) => ({ agent: t.agent, role: t.role, correct: t.correct, formatValid: t.formatValid }));
    let rewards;
    if (config.reward.scheme === 'shared') {
      const outcomes = trajectoryOutcomes(episode);
      rewards = rewardTurns.map((turn, i) => computeRewards('shared', [turn], { correct: outcomes[i] }, rewardOptions(config))[0]);
    } else {
      rewards = computeRewards(config.reward.scheme, rewardTurns, { correct: episode.correct }, rewardOptions(config));
    }
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
  if (config.advantage.verifier_class_balance) {
    balanceVerifierClasses(episodes.flatMap((episode, e) => episode.turns.map((turn, i) => ({ episode: e, turn, advantage: scored[e].advantages[i] }))));
  }
  return scored;
}

export function rolloutMetrics(config: RunConfig, episodes: readonly RolloutEpisode[], scored: readonly ScoredEpisode[]): Record<string, number> {
  const metrics: Record<string, number> = {};
  const byAgent = new Map<string, { reward: number[]; advantage: number[]; length: number[]; correct: boolean[]; formatValid: boolean[] }>();
  const inflationInput: { agent: string; reward: number; groupKey: string }[] = [];
  episodes.forEach((episode, e) =>
    episode.turns.forEach((turn, i) => {
      const s = byAgent.get(turn.agent) ?? { reward: [], advantage: [], length: [], correct: [], formatValid: [] };
      s.reward.push(scored[e].rewards[i].value);
      s.advantage.push(scored[e].advantages[i].value);
      s.length.push(responseLength(turn));
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
    let judgedTurns = 0;
    for (const episode of episodes) {
      for (const t of episode.turns) {
        if (t.round !== round) continue;
        if (t.role === 'verifier') {
          const judged = episode.turns[t.parent!];
          judgedTurns++;
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
    const verifier = agentName('verifier', round);
    if (rejections > 0) metrics[`${verifier}/precision`] = caught / rejections;
    if (wrong > 0) metrics[`${verifier}/recall`] = caught / wrong;
    // The share of right solutions among those judged: far from 0.5, rejecting (or approving)
    // everything pays (advantage.verifier_class_balance).
    if (judgedTurns > 0) metrics[`${verifier}/judged_right_share`] = (judgedTurns - wrong) / judgedTurns;
    if (wrongInputs > 0) metrics[`${agentName('corrector', round)}/fix_rate`] = fixed / wrongInputs;
  }
  for (const key of Object.keys(metrics)) if (!Number.isFinite(metrics[key])) delete metrics[key];
  return metrics;
}

export function logEpisodes(
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
        text: turn.text, tokenCount: responseLength(turn), parsed: turn.role === 'verifier' ? turn.verdict : turn.answer,
        correct: turn.correct, formatValid: turn.formatValid, policyVersionMin: turn.policyVersionMin, policyVersionMax: turn.policyVersionMax, createdAt: now,
      });
      for (const seg of turn.segments) {
        writer.segment({ id: writer.newId('segments'), turnId: id, runId, segIndex: seg.index, tokenStart: seg.tokenStart, tokenEnd: seg.tokenEnd, text: seg.text, finished: seg.finished, policyVersion: seg.policyVersion, startedAt: seg.startedAt, endedAt: seg.endedAt, worker });
      }
      writer.reward({ turnId: id, runId, value: scored[e].rewards[i].value, components: scored[e].rewards[i].components, scheme: config.reward.scheme });
      const adv = scored[e].advantages[i];
      writer.advantage({ turnId: id, runId, value: adv.value, mode: config.advantage.mode, groupKey: adv.groupKey, mu: adv.mu, sigma: adv.sigma, weight: adv.weight });
    });
    return ids;
  });
}

/** The greedy evaluation chains of a step, stored as test-split episodes for the browser. */
export function logEvalEpisodes(writer: BatchWriter, problemIds: ProblemIds, runId: number, step: number, chains: ReturnType<typeof evaluate>['greedyChains']): void {
  const now = Date.now();
  for (const chain of chains) {
    const problemId = problemIds.idOf(writer, chain.problem);
    const episodeId = writer.newId('episodes');
    writer.episode({ id: episodeId, runId, step, problemId, split: 'test', finalAnswer: chain.finalAnswer, correct: chain.finalCorrect, rounds: chain.steps.filter((s) => s.role === 'verifier').length, meta: { eval: 'greedy' } });
    let parent: number | null = null;
    for (const s of chain.steps) {
      const id = writer.newId('turns');
      writer.turn({
        id, runId, episodeId, step, agent: agentName(s.role, s.round), policyId: s.role, round: s.round, groupId: 0,
        parentTurnId: parent, sampleIndex: 0, prompt: s.prompt, text: s.text, tokenCount: s.tokens,
        parsed: s.role === 'verifier' ? (s.verdict ?? null) : (s.answer ?? null), correct: s.correct, formatValid: s.formatValid,
        policyVersionMin: 0, policyVersionMax: 0, createdAt: now,
      });
      parent = id;
    }
  }
}


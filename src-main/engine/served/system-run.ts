/**
 * Reasoning-system runs (issue #16): the Solver / Verifier / Corrector system run, inference
 * only, on a run's held-out problems, with each agent served by an endpoint of the pool or played
 * by a local checkpoint (the same code; no caller knows which).
 *
 * Two modes (`system.mode`):
 * - `loop`, MarsRL's public reasoning system: the Solver answers, then up to `max_iterations`
 *   times the Verifier judges the current solution; an approval counts, `approvals` consecutive
 *   ones accept it; a rejection resets the count and the Corrector repairs the solution with the
 *   Verifier's report. The answer is the last solution (accepted or not; `system/accepted` says
 *   how often the loop accepted).
 * - `chain`, the unrolled chain the RL runs evaluate (training/evaluate.ts `runChains`):
 *   `rollout.rounds` Verifier → Corrector rounds, ending at the first approval.
 * Metrics are those of RL evaluation, computed by the same function (`evaluationMetrics`): greedy
 * Solver-alone and system accuracy, the two controls (an oracle Verifier; the Corrector on every
 * answer without a Verifier), and avg@k / pass@k over `system.k` sampled chains per problem.
 *
 * Every call is a turn of a test-split episode (one episode per chain) in the tables RL runs use,
 * written when the call starts; a streamed reply fills its segments as it arrives (the batched
 * writer flushes them within its interval, so the trajectory browser shows the turn being
 * written), and its text and judgement are filled in when it ends.
 *
 * Resumable: a stop lets the calls in flight finish and starts no more. A resumed run replays
 * each chain from its stored turns (their texts decide what follows, so the chain takes the same
 * path) and calls only where no finished turn is stored; a turn left unfinished (a killed worker)
 * is marked superseded and its call made again.
 *
 * Failures: the pool retries what can be retried (429, 5xx, timeouts, cut streams); a call that
 * still fails counts against the chain's `error_budget`, and a chain over it is marked failed
 * (no answer: wrong). An error no retry can fix (a refused key, a model not served) ends the run,
 * resumable once fixed.
 */
import type { RunConfig } from '../config/schema';
import { agentName, ROLES, type Role } from '#shared/agents';
import type { Verdict } from '../agents';
import { chatMessagesOf, textFormatOf } from '../agents/prompts';
import { initBackend } from '../model/backend';
import { describeStoreFailure, type BatchWriter, type Store } from '../store';
import type { TurnView } from '../store';
import { answerCheckerVersion } from '../tasks/registry';
import type { Problem } from '../tasks/types';
import { evaluationMetrics, type ChainStep, type EvalChain, type EvalPart } from '../training/evaluate';
import { createPolicy, type PolicyRuntime } from '../training/policies';
import { decodeInSegmentsAsync } from '../training/rollout';
import { computeRewards } from '../rl/rewards';
import { evaluationSet, loadTaskData, ProblemIds, rewardOptions } from '../training/run-support';
import type { TrainOutcome, TrainProgress } from '../training/trainer';
import { hashString } from '../util/rng';
import { EndpointError } from './client';
import { callSampling } from './roles';
import { poolFromConfig, probeIssues, runProbePrompt, usedEndpoints } from './config';
import type { EndpointPool, PoolOptions } from './pool';

export interface SystemRunOptions {
  store: Store;
  runId: number;
  config: RunConfig;
  /** Name of this process in segment rows. */
  worker?: string;
  /** Aborted: no new call starts; the calls in flight finish and are stored. */
  signal?: AbortSignal;
  onProgress?: (progress: TrainProgress) => void;
  /** Continue a stopped run from its stored turns. */
  resume?: boolean;
  /** Where API keys are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Pool timing overrides (tests: short backoff). */
  pool?: Partial<Omit<PoolOptions, 'endpoints' | 'agents'>>;
}

/** The event a system run logs when a chain ran out of its error budget. */
export const CHAIN_FAILED_EVENT = 'system/chain_failed';

/** How a reply was judged: its parsed answer or verdict, whether that is right, whether it parsed. */
type Judged = Omit<ChainStep, 'role' | 'round' | 'prompt' | 'text' | 'tokens'>;

/** One agent call of a chain. */
interface CallSpec {
  role: Role;
  agent: string;
  round: number;
  prompt: string;
  temperature: number;
  seed: number;
}

interface CallReply {
  text: string;
  /** From the server's usage, or the local decode; null when unknown. */
  tokens: number | null;
}

interface StreamSink {
  delta(text: string): void;
  /** What streamed so far is void (a cut stream is sent again). */
  restart(): void;
}

/** Plays one role: through the pool (served) or with a local policy. */
type AgentCaller = (spec: CallSpec, sink: StreamSink) => Promise<CallReply>;

/** A run stops on this: no retry or budget helps (wrong key, model not served, bad request). */
class FatalCallError extends Error {}

/** Stop requested: the chain ends here, unfinished, and a resume continues it. */
class StoppedError extends Error {}

function servedCaller(pool: EndpointPool, config: RunConfig, role: Role): AgentCaller {
  return async (spec, sink) => {
    const result = await pool.chat(spec.agent, chatMessagesOf(spec.prompt) ?? [{ role: 'user', content: spec.prompt }], {
      sampling: callSampling(config, role, spec.temperature, spec.seed),
      onChunk: (c) => (c.restart ? sink.restart() : c.index === 0 && c.delta ? sink.delta(c.delta) : undefined),
    });
    const choice = result.choices[0];
    if (!choice) throw new EndpointError(`endpoint ${pool.endpointOf(spec.agent)}: the reply has no choice`, pool.endpointOf(spec.agent), 'malformed', 200, true, result.attempts);
    return { text: choice.text, tokens: result.usage?.completionTokens ?? null };
  };
}

function localCaller(policy: PolicyRuntime, config: RunConfig): AgentCaller {
  return async (spec, sink) => {
    // Local decoding is synchronous on wasm/cpu: let stop messages and streamed replies of served agents through first.
    await new Promise((resolve) => setImmediate(resolve));
    const promptTokens = policy.tokenizer.promptTokens(spec.role, spec.prompt);
    const [result] = await decodeInSegmentsAsync(
      policy,
      [{ promptText: spec.prompt, promptTokens, streamId: 0 }],
      {
        seed: spec.seed,
        temperature: spec.temperature,
        topP: spec.temperature === 0 ? 1 : config.rollout.top_p,
        topK: spec.temperature === 0 ? 0 : config.rollout.top_k,
        maxNewTokens: Math.max(1, Math.min(config.rollout.max_response_tokens, policy.model.context - promptTokens.length)),
        segmentTokens: config.pipeline.segment_tokens,
        maxSegments: config.pipeline.max_segments,
        agent: spec.agent,
      },
    );
    for (const s of result.segments) sink.delta(s.text);
    return { text: policy.tokenizer.responseText(result.responseTokens), tokens: result.responseTokens.length };
  };
}

/** A seed per call, the same on every attempt of the run: (evaluation seed, part, problem, sample, position). */
function callSeed(base: number, part: EvalPart, problem: number, sample: number, position: number): number {
  return hashString(`${base}:${part}:${problem}:${sample}:${position}`) & 0x7fffffff;
}

/** An episode of earlier attempts: a part's chains of one problem. */
interface StoredEpisode {
  episodeId: number;
  /** Finished turns of each chain (by sample), in the order they were made. */
  turns: Map<number, TurnView[]>;
  done: boolean;
}

/** Counting semaphore: at most `size` chains at once. */
function limiter(size: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

export async function systemRun(options: SystemRunOptions): Promise<TrainOutcome> {
  const { store, runId, config } = options;
  const system = config.system;
  if (!system) throw new Error('systemRun: the config has no system block');
  const worker = options.worker ?? `system-${process.pid}`;
  const progress = (p: TrainProgress) => options.onProgress?.(p);
  const writer = store.writer({ maxPending: 2000, flushIntervalMs: 250 });
  const runStart = store.runs.get(runId)?.startedAt ?? Date.now();
  const wallTime = () => (Date.now() - runStart) / 1000;
  const locals: PolicyRuntime[] = [];
  let pool: EndpointPool | null = null;
  let poolTimer: NodeJS.Timeout | null = null;
  const counters = { calls: 0, stored: 0, failedCalls: 0 };
  try {
    const data = loadTaskData(config);
    const format = textFormatOf(data.family);
    const served = usedEndpoints(config);
    const servedRoles = new Set([...served.values()].flat());
    const callers = {} as Record<Role, AgentCaller>;
    if (servedRoles.size > 0) {
      pool = poolFromConfig(config, {
        ...options.pool,
        env: options.env,
        healthChecks: true,
        probePrompt: runProbePrompt(config),
        onEvent: (e) => store.events.log(runId, e.level, e.kind, e.message, e.data),
      });
      progress({ phase: 'setup', step: 0, totalSteps: 0, metrics: {}, message: `probing ${served.size} endpoint${served.size === 1 ? '' : 's'}` });
      const issues = probeIssues(await pool.probe());
      if (issues.length > 0) throw new FatalCallError(issues.map((i) => `${i.path}: ${i.message}`).join('; '));
    }
    const localRoles = ROLES.filter((r) => !servedRoles.has(r));
    if (localRoles.length > 0) {
      const backend = await initBackend(config.runtime.backend);
      store.runs.setBackend(runId, backend.name, backend as unknown as Record<string, unknown>);
      const byId = new Map<string, PolicyRuntime>();
      for (const role of localRoles) {
        const id = config.agents[role];
        if (!byId.has(id)) {
          const policyConfig = config.policies[id];
          if (!policyConfig.init && policyConfig.model.kind !== 'hf') {
            throw new FatalCallError(`policies.${id}: a reasoning-system run does not train; give the policy an init checkpoint, a Hugging Face model or an endpoint`);
          }
          const { policy } = createPolicy(id, policyConfig, data.tokenizer, config.seed);
          byId.set(id, policy);
          locals.push(policy);
        }
        callers[role] = localCaller(byId.get(id)!, config);
      }
    }
    for (const role of servedRoles) callers[role] = servedCaller(pool!, config, role);

    const { problems, seed } = evaluationSet(config, data);
    const k = system.k ?? config.eval.k;
    const parts: EvalPart[] = ['greedy', ...(system.controls ? (['oracle', 'corrector-always'] as const) : []), 'sampled'];
    const problemIds = new ProblemIds(store, runId);

    // What earlier attempts finished, by chain.
    const stored = new Map<string, StoredEpisode>();
    let attempt = store.runs.get(runId)?.attempt ?? 1;
    if (options.resume) {
      let unfinished = 0;
      const pending: TurnView[] = [];
      for (let after = 0; ; ) {
        const page = store.trajectories.pageEpisodes({ runId, split: 'test', afterId: after, limit: 1000 });
        for (const e of page.items) {
          const meta = e.meta as { eval?: EvalPart; problem?: number } | null;
          if (!meta?.eval || meta.problem === undefined) continue;
          const turns = store.trajectories.episodeTurns(e.id).filter((t) => t.supersededBy === null);
          const bySample = new Map<number, TurnView[]>();
          for (const t of turns) {
            if (t.correct === null) {
              pending.push(t);
              continue;
            }
            bySample.set(t.sampleIndex, [...(bySample.get(t.sampleIndex) ?? []), t]);
            if (t.policyId !== ORACLE) counters.stored++;
          }
          stored.set(`${meta.eval}:${meta.problem}`, { episodeId: e.id, turns: bySample, done: e.correct !== null });
        }
        if (page.nextCursor === null) break;
        after = page.nextCursor;
      }
      const begun = store.runs.beginAttempt(runId, counters.stored, Date.now(), answerCheckerVersion(config.task.family));
      attempt = begun.attempt;
      for (const t of pending) {
        store.trajectories.supersedeTurn(t.id, attempt);
        unfinished++;
      }
      store.events.log(runId, 'info', 'resumed', `resumed as attempt ${attempt}: ${counters.stored} finished calls are kept and not repeated; ${unfinished} unfinished turn${unfinished === 1 ? '' : 's'} are made again`, { attempt, finishedCalls: counters.stored, unfinished });
    }

    if (pool) {
      const snapshot = () => {
        for (const [key, value] of Object.entries(pool!.metrics())) writer.metric({ runId, step: counters.stored + counters.calls, wallTime: wallTime(), key, value });
      };
      poolTimer = setInterval(snapshot, system.metrics_every_s * 1000);
      poolTimer.unref();
    }

    const totalChains = problems.length * (parts.length - 1) + problems.length * k;
    let chainsDone = 0;
    const concurrency = Math.max(1, ...[...served.keys()].map((name) => config.endpoints![name].concurrency));
    const limit = limiter(concurrency);
    const results: Partial<Record<EvalPart, EvalChain[]>> = {};
    let fatal: Error | null = null;

    // One episode per part and problem; a sampled part's k chains share it, so their Solver
    // samples form one group (the trajectory browser's and the preference pairs' unit).
    const episodes = new Map<string, { id: number; chains: EvalChain[]; expected: number; done: boolean }>();
    const episodeOf = (part: EvalPart, problem: Problem, p: number, samples: number) => {
      const key = `${part}:${p}`;
      let e = episodes.get(key);
      if (!e) {
        const previous = stored.get(key);
        let id = previous?.episodeId;
        if (id === undefined) {
          id = writer.newId('episodes');
          writer.episode({ id, runId, step: 0, problemId: problemIds.idOf(writer, problem), split: 'test', finalAnswer: null, correct: null, rounds: 0, meta: { eval: part, system: system.mode, problem: p, chains: samples } });
        }
        e = { id, chains: [], expected: samples, done: previous?.done ?? false };
        episodes.set(key, e);
      }
      return e;
    };
    /** Once every chain of an episode ended: its outcome is the majority of the chains' answers. */
    const finishEpisode = (e: { id: number; chains: EvalChain[]; expected: number; done: boolean }, problem: Problem) => {
      if (e.chains.length < e.expected || e.done) return;
      const votes = new Map<string, number>();
      for (const c of e.chains) if (c.finalAnswer !== null) votes.set(c.finalAnswer, (votes.get(c.finalAnswer) ?? 0) + 1);
      const answer = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
      writer.episodeOutcome(e.id, answer, answer !== null && data.family.checkAnswer(problem, answer), Math.max(0, ...e.chains.map((c) => c.steps.filter((x) => x.role === 'verifier').length)));
    };

    const runOne = async (part: EvalPart, problem: Problem, p: number, sample: number, samples: number): Promise<EvalChain> => {
      const previous = stored.get(`${part}:${p}`);
      const episode = episodeOf(part, problem, p, samples);
      const episodeId = episode.id;
      const temperature = part === 'sampled' ? config.rollout.temperature : 0;
      const chain: EvalChain = { problem, sample, steps: [], solverCorrect: false, finalAnswer: null, finalCorrect: false };
      const replay = previous?.turns.get(sample) ?? [];
      let cursor = 0;
      let parentTurn: number | null = null;
      let errors = 0;

      /** One step of the chain: replayed from a stored turn, else made (a call, or the oracle's verdict) and stored. */
      const step = async (role: Role, round: number, prompt: string, judge: (text: string) => Judged, oracleText?: string): Promise<ChainStep & Judged> => {
        const agent = agentName(role, round);
        const storedTurn = replay[cursor];
        if (storedTurn) {
          if (storedTurn.agent !== agent || storedTurn.prompt !== prompt) {
            throw new FatalCallError(`episode ${episodeId}: stored turn ${storedTurn.id} (${storedTurn.agent}) does not match the chain's next call (${agent}); the run's config changed since it was stopped`);
          }
          cursor++;
          parentTurn = storedTurn.id;
          const s = { role, round, prompt, text: storedTurn.text, tokens: storedTurn.tokenCount, ...judge(storedTurn.text) };
          chain.steps.push(s);
          return s;
        }
        if (previous?.done) throw new StoppedError('failed earlier');
        const policyId = oracleText === undefined ? config.agents[role] : ORACLE;
        for (;;) {
          if (oracleText === undefined && options.signal?.aborted) throw new StoppedError('stopped');
          const id = writer.newId('turns');
          const startedAt = Date.now();
          // The Solver samples of an episode are one group; each later turn is its chain's own.
          const groupId = role === 'solver' ? 0 : sample + 1;
          writer.turn({ id, runId, episodeId, step: 0, agent, policyId, round, groupId, parentTurnId: parentTurn, sampleIndex: sample, prompt, text: '', tokenCount: 0, parsed: null, correct: null, formatValid: false, policyVersionMin: 0, policyVersionMax: 0, createdAt: startedAt });
          const segments = segmentWriter(writer, store, runId, id, worker, config.pipeline.segment_tokens);
          let reply: CallReply;
          try {
            reply = oracleText === undefined ? await callers[role]({ role, agent, round, prompt, temperature, seed: callSeed(seed, part, p, sample, chain.steps.length) }, segments) : { text: oracleText, tokens: null };
          } catch (error) {
            // The failed call's turn stays, superseded, beside the retry that replaces it.
            writer.flush();
            store.trajectories.supersedeTurn(id, attempt);
            if (error instanceof EndpointError && !error.retryable) throw new FatalCallError(error.message);
            counters.failedCalls++;
            errors++;
            if (errors > system.error_budget) throw error;
            continue;
          }
          segments.finish(reply.text);
          const s = { role, round, prompt, text: reply.text, tokens: reply.tokens ?? segments.count(), ...judge(reply.text) };
          writer.turnResult({ id, text: reply.text, tokenCount: s.tokens, parsed: role === 'verifier' ? (s.verdict ?? null) : (s.answer ?? null), correct: s.correct, formatValid: s.formatValid });
          if (oracleText === undefined) {
            // MarsRL's agent-specific reward (as RL runs log it), so reward filters and preference pairs work on these turns.
            const [reward] = computeRewards('decoupled', [{ agent, role, correct: s.correct, formatValid: s.formatValid }], { correct: s.correct }, rewardOptions(config));
            writer.reward({ turnId: id, runId, value: reward.value, components: { ...reward.components }, scheme: 'decoupled' });
          }
          if (oracleText === undefined) counters.calls++;
          parentTurn = id;
          chain.steps.push(s);
          return s;
        }
      };

      const solution = (checkProblem: Problem) => (text: string) => {
        const parsed = format.parseSolution(text);
        return { answer: parsed.answer, correct: data.family.checkAnswer(checkProblem, parsed.answer), formatValid: parsed.formatValid };
      };
      const verdictOf = (judgedCorrect: boolean) => (text: string) => {
        const parsed = format.parseVerdict(text);
        return { verdict: parsed.verdict, correct: parsed.verdict !== null && (parsed.verdict === 'approve') === judgedCorrect, formatValid: parsed.formatValid };
      };

      try {
        const first = await step('solver', 0, format.solverPrompt(problem), solution(problem));
        chain.solverCorrect = first.correct;
        let current = { text: first.text, answer: first.answer ?? null, correct: first.correct };
        const mode = part === 'oracle' ? 'oracle' : part === 'corrector-always' ? 'corrector-always' : 'model';
        const loop = system.mode === 'loop';
        const rounds = mode === 'corrector-always' ? 1 : loop ? system.max_iterations : config.rollout.rounds;
        let approvals = 0;
        let accepted = false;
        for (let round = 1; round <= rounds; round++) {
          let verdict: Verdict | null = null;
          let report: string | null = null;
          if (mode === 'model') {
            const v = await step('verifier', round, format.verifierPrompt(problem, current.text), verdictOf(current.correct));
            verdict = v.verdict ?? null;
            report = v.text;
          } else if (mode === 'oracle') {
            verdict = current.correct ? 'approve' : 'reject';
            const text = format.verdictText(verdict);
            await step('verifier', round, ORACLE_PROMPT, () => ({ verdict, correct: true, formatValid: true }), text);
            report = text;
          } else verdict = 'reject';
          if (verdict !== 'reject') {
            // An approval (or an unparseable verdict, which does not reject): the chain stops,
            // the loop counts it and judges the same solution again until enough in a row.
            approvals++;
            if (!loop || mode === 'corrector-always' || approvals >= system.approvals) {
              accepted = verdict === 'approve';
              break;
            }
            continue;
          }
          approvals = 0;
          const fixed = await step('corrector', round, format.correctorPrompt(problem, current.text, report), solution(problem));
          current = { text: fixed.text, answer: fixed.answer ?? null, correct: fixed.correct };
        }
        chain.finalAnswer = current.answer;
        chain.finalCorrect = current.correct;
        (chain as EvalChain & { accepted?: boolean }).accepted = accepted;
      } catch (error) {
        if (error instanceof StoppedError && error.message === 'stopped') throw error;
        if (error instanceof FatalCallError) throw error;
        // Over the error budget (now, or in an earlier attempt): the chain has no answer.
        chain.finalAnswer = null;
        chain.finalCorrect = false;
        if (!previous?.done) {
          store.events.log(runId, 'warning', CHAIN_FAILED_EVENT, `${part} chain ${sample} of problem ${problem.key}: ${errors} failed calls, over system.error_budget (${system.error_budget}); marked failed: ${(error as Error).message}`, { episodeId, part, problem: p, sample, errors });
        }
        (chain as EvalChain & { failed?: boolean }).failed = true;
      }
      episode.chains.push(chain);
      finishEpisode(episode, problem);
      chainsDone++;
      progress({ phase: 'pretrain', step: chainsDone, totalSteps: totalChains, metrics: {}, message: 'reasoning system' });
      return chain;
    };

    for (const part of parts) {
      const jobs: Array<Promise<EvalChain | null>> = [];
      const samples = part === 'sampled' ? k : 1;
      problems.forEach((problem, p) => {
        for (let s = 0; s < samples; s++) {
          jobs.push(
            limit(async () => {
              if (fatal || options.signal?.aborted) return null;
              try {
                return await runOne(part, problem, p, s, samples);
              } catch (error) {
                // Noted before the slot passes on, so no further chain starts after a fatal error.
                if (!(error instanceof StoppedError)) fatal ??= error as Error;
                return null;
              }
            }),
          );
        }
      });
      const chains = await Promise.all(jobs);
      if (fatal) throw fatal;
      if (options.signal?.aborted) {
        writer.close();
        store.events.log(runId, 'warning', 'interrupted', `stopped after ${counters.stored + counters.calls} calls: ${String(options.signal.reason ?? 'stopped')}; resume continues without repeating them`, null, 0);
        return { status: 'interrupted', step: 0, reason: String(options.signal.reason ?? 'stopped') };
      }
      results[part] = chains as EvalChain[];
    }

    const evalConfig = { ...config, eval: { ...config.eval, k }, rollout: { ...config.rollout, rounds: system.controls ? Math.max(1, config.rollout.rounds) : 0 } };
    // evaluationMetrics reads the controls only when rounds > 0; a system run without them fills them in as absent.
    const { metrics } = evaluationMetrics(evalConfig as RunConfig, system.controls ? results : { ...results, oracle: [], 'corrector-always': [] });
    if (!system.controls) {
      delete metrics['eval/control/oracle_verifier/accuracy'];
      delete metrics['eval/control/corrector_always/accuracy'];
    }
    const all = Object.values(results).flat();
    const greedy = results.greedy!;
    metrics['system/calls'] = counters.stored + counters.calls;
    metrics['system/failed_calls'] = counters.failedCalls;
    metrics['system/failed_chains'] = all.filter((c) => (c as { failed?: boolean }).failed).length;
    if (system.mode === 'loop') metrics['system/accepted'] = greedy.filter((c) => (c as { accepted?: boolean }).accepted).length / Math.max(1, greedy.length);
    for (const [key, value] of Object.entries(metrics)) writer.metric({ runId, step: 0, wallTime: wallTime(), key, value });
    if (pool) for (const [key, value] of Object.entries(pool.metrics())) writer.metric({ runId, step: counters.stored + counters.calls, wallTime: wallTime(), key, value });
    writer.close();
    progress({ phase: 'eval', step: 0, totalSteps: 0, metrics });
    progress({ phase: 'done', step: 0, totalSteps: 0, metrics: {} });
    return { status: 'done', step: 0 };
  } catch (error) {
    try {
      writer.close();
    } catch {
      // The original error matters more than a failed final flush.
    }
    const reason = describeStoreFailure(error, store.path) ?? (error instanceof Error ? error.message : String(error));
    try {
      store.events.log(runId, 'error', 'system_error', reason, error instanceof Error && !(error instanceof FatalCallError) && error.stack ? { stack: error.stack } : null, 0);
    } catch {
      // A full disk refuses the event too; the outcome still carries the reason.
    }
    return { status: 'failed', step: 0, reason };
  } finally {
    if (poolTimer) clearInterval(poolTimer);
    pool?.close();
    for (const p of locals) p.dispose();
  }
}

/** The policy id of an oracle verdict's turn (not a call: the truth of the solution judged). */
const ORACLE = 'oracle';
const ORACLE_PROMPT = '(oracle)';

/**
 * A turn's segments as its reply streams in: every `segmentTokens` deltas (about a token each
 * from an OpenAI-compatible stream) become a segment row, so the browser sees the turn grow;
 * token ranges count deltas. A restart (the stream was cut and is sent again) drops them.
 */
function segmentWriter(writer: BatchWriter, store: Store, runId: number, turnId: number, worker: string, segmentTokens: number) {
  let index = 0;
  let tokens = 0;
  let pendingText = '';
  let pendingTokens = 0;
  let startedAt = Date.now();
  const emit = (finished: boolean) => {
    if (pendingText.length === 0 && !finished) return;
    const endedAt = Date.now();
    writer.segment({ id: writer.newId('segments'), turnId, runId, segIndex: index++, tokenStart: tokens, tokenEnd: tokens + pendingTokens, text: pendingText, finished, policyVersion: 0, startedAt, endedAt, worker });
    tokens += pendingTokens;
    pendingText = '';
    pendingTokens = 0;
    startedAt = endedAt;
  };
  return {
    delta(text: string) {
      pendingText += text;
      pendingTokens++;
      if (pendingTokens >= segmentTokens) emit(false);
    },
    restart() {
      writer.flush();
      store.trajectories.discardSegments(turnId);
      index = 0;
      tokens = 0;
      pendingText = '';
      pendingTokens = 0;
      startedAt = Date.now();
    },
    /** The last segment; when nothing streamed (a local decode, a non-streaming server) the whole text is one. */
    finish(text: string) {
      if (index === 0 && pendingText.length === 0) {
        pendingText = text;
        pendingTokens = text.length > 0 ? 1 : 0;
      }
      emit(true);
    },
    count: () => tokens,
  };
}

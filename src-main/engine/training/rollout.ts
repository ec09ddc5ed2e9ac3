/**
 * Grouped agentic rollouts of the unrolled MarsRL chain (MarsRL, arXiv 2511.11373, §3):
 *
 *   Solver (group of G per problem)
 *     → Verifier1: selects k solutions, samples a group for each
 *     → Corrector1: selects k rejections, samples a group for each
 *     → Verifier2: selects k corrections … up to `rollout.rounds` rounds.
 *
 * Correctors only receive rejections, and a problem's episode stops early when no verdict of a
 * round rejects. Every response is decoded in segments of S tokens, at most M per stage
 * (`pipeline.segment_tokens`, `pipeline.max_segments`); each segment records the policy version
 * that wrote it, so a turn whose decode spans a weight update is corrected by its stored
 * behaviour log-probabilities rather than silently treated as on-policy.
 */
import type { RunConfig } from '../config/schema';
import type { Role } from '#shared/agents';
import { selectInputs, type Verdict } from '../agents';
import { agentName } from '#shared/agents';
import { textFormatOf } from '../agents/prompts';
import { episodeFinalAnswer, type ChainTurn } from '../agents/outcome';
import { takeGpuFault } from '../model/backend';
import { kvCacheBytes } from '../checkpoint/families';
import { GpuMemoryError, memoryBudget } from '../model/gpu-memory';
import { assertAsyncReadable, canReadSync } from '../model/readback';
import { decodeSegment, decodeSegmentAsync, disposeDecodeState, startDecode } from '../model/sampling';
import type { Problem, TaskFamily } from '../tasks/types';
import { Rng } from '../util/rng';
import type { SegmentRecord, ServedRole } from '../served/roles';
import type { PolicyRuntime } from './policies';
import { maxOf, minOf } from '../util/arrays';
import { episodeChains } from '../rl/outcomes';

export interface RolloutTurn {
  /** Position of this turn in its episode's list (parents come first). */
  index: number;
  agent: string;
  role: Role;
  round: number;
  policyId: string;
  /** Which group of the episode this turn was sampled in (0 = the Solver group). */
  groupId: number;
  sampleIndex: number;
  /** The turn this one read (the judged solution, or the report a Corrector repairs). */
  parent: number | null;
  /** For a Corrector: the solution the report judged (what is being repaired). */
  repairs: number | null;
  promptText: string;
  promptTokens: number[];
  responseTokens: number[];
  /**
   * A served turn's length as its endpoint counted it (`usage.completion_tokens`, else the
   * streamed deltas): it has no token ids of a local tokenizer (issue #16). Unset for decoded turns.
   */
  servedTokens?: number;
  /** Behaviour log-probability of each response token (the distribution actually sampled). */
  behaviourLogProbs: number[];
  text: string;
  answer: string | null;
  verdict: Verdict | null;
  formatValid: boolean;
  /**
   * Solver/Corrector: the final answer is right. Verifier: the verdict matches the truth of the
   * judged solution (approves a right one, rejects a wrong one).
   */
  correct: boolean;
  segments: SegmentRecord[];
  policyVersionMin: number;
  policyVersionMax: number;
}

/** Tokens a turn generated: its response's ids, or for a served turn the endpoint's count. */
export function responseLength(turn: RolloutTurn): number {
  return turn.servedTokens ?? turn.responseTokens.length;
}

export interface RolloutEpisode {
  problem: Problem;
  turns: RolloutTurn[];
  finalAnswer: string | null;
  /** The system's final answer is right (majority over the verified chains). */
  correct: boolean;
  /** Verify/correct rounds that actually ran (fewer when nothing was rejected). */
  rounds: number;
  /** Chains from a verified Solver turn to a leaf, as turn indices. */
  chains: number[][];
}

export interface RolloutContext {
  family: TaskFamily;
  /** Each role's policy, with its own model and tokenizer (a served role's entry is not used). */
  policies: Record<Role, PolicyRuntime>;
  /** Roles played by served models instead of their policies. */
  served?: Partial<Record<Role, ServedRole>>;
  config: RunConfig;
  /** Called after each decoded segment, e.g. to log the pipeline timeline. */
  onSegment?: (info: { agent: string; policyId: string; tokens: number; startedAt: number; endedAt: number; policyVersion: number }) => void;
}

interface DecodeRequest {
  promptText: string;
  promptTokens: number[];
  streamId: number;
}

interface DecodeResult {
  responseTokens: number[];
  behaviourLogProbs: number[];
  segments: SegmentRecord[];
}

/**
 * Where a rollout pauses, so a driver can act between segments: before every segment decode
 * (`segment`: the pipeline swaps in newer weights here and holds the staleness bound), when an
 * agent's group starts (`agent-start`) and when it is complete (`agent-done`: its turns can go to
 * training). A synchronous driver ignores every pause, which is exactly the uninterrupted rollout.
 */
export type RolloutPause =
  | { kind: 'segment'; agent: string; policy: PolicyRuntime; stage: number; segment: number; live: number }
  | { kind: 'agent-start'; agent: string; role: Role; policy: PolicyRuntime; turns: number }
  /** `episodes[i]` is the index (in the step's problems) of the episode `turns[i]` belongs to. */
  | { kind: 'agent-done'; agent: string; role: Role; policy: PolicyRuntime; turns: RolloutTurn[]; episodes: number[] }
  /**
   * Work the computation cannot finish synchronously (a WebGPU readback, a served model's reply):
   * the driver awaits `promise` and resumes the computation with its value (see `awaitIn`).
   */
  | { kind: 'await'; what: string; promise: Promise<unknown> };

/** The pauses a driver's handler sees: every one but `await`, which `drive` resolves itself. */
export type DriverPause = Exclude<RolloutPause, { kind: 'await' }>;

/** A paused computation: it yields pauses, and an `await` pause is resumed with its promise's value. */
export type RolloutSteps<T> = Generator<RolloutPause, T, unknown>;

/**
 * Wait for `promise` inside a paused computation: `const v = yield* awaitIn(p, 'what')`. Only
 * `drive` can resume it; `drain` refuses, naming `what`.
 */
export function* awaitIn<T>(promise: Promise<T>, what: string): RolloutSteps<T> {
  return (yield { kind: 'await', what, promise }) as T;
}

/**
 * Run a paused computation to its end without acting on any pause. Synchronous: a computation
 * that must await something (`awaitIn`) is refused, naming it, and must be run with `drive`.
 */
export function drain<T>(steps: RolloutSteps<T>): T {
  let r = steps.next();
  while (!r.done) {
    if (r.value.kind === 'await') {
      // The promise is already running; keep its rejection from surfacing as an unhandled one.
      r.value.promise.catch(() => undefined);
      const what = r.value.what;
      steps.return(undefined as T);
      throw new Error(`${what} cannot complete synchronously; run this computation with drive() (an asynchronous backend or a served model is in use)`);
    }
    r = steps.next();
  }
  return r.value;
}

/**
 * Run a paused computation, awaiting `onPause` at every pause (an `await` pause is awaited here and
 * never reaches `onPause`); a throw (or an abort the handler
 * raises) ends the computation and releases its decode caches.
 */
export async function drive<T>(steps: RolloutSteps<T>, onPause: (pause: DriverPause) => Promise<void> | void): Promise<T> {
  let r = steps.next();
  try {
    while (!r.done) {
      if (r.value.kind === 'await') {
        r = steps.next(await r.value.promise);
        continue;
      }
      await onPause(r.value);
      r = steps.next();
    }
  } catch (error) {
    steps.return(undefined as T);
    throw error;
  }
  return r.value;
}

/**
 * Decode a batch in segments of `segmentTokens`, at most `maxSegments` per stage; sequences that
 * finish leave after each segment, the rest carry over to the next stage until the response
 * budget ends them.
 */
export function decodeInSegments(
  policy: PolicyRuntime,
  requests: readonly DecodeRequest[],
  options: DecodeOptions,
  onSegment?: RolloutContext['onSegment'],
): DecodeResult[] {
  return drain(decodeInSegmentsSteps(policy, requests, options, onSegment));
}

/** `decodeInSegments` on every backend, WebGPU included (its decode awaits each readback). */
export function decodeInSegmentsAsync(
  policy: PolicyRuntime,
  requests: readonly DecodeRequest[],
  options: DecodeOptions,
  onSegment?: RolloutContext['onSegment'],
): Promise<DecodeResult[]> {
  return drive(decodeInSegmentsSteps(policy, requests, options, onSegment), () => undefined);
}

export interface DecodeOptions {
  seed: number;
  temperature: number;
  topP: number;
  /** Top-k truncation (0 = none), before top-p. */
  topK?: number;
  maxNewTokens: number;
  segmentTokens: number;
  maxSegments: number;
  agent: string;
}

/**
 * `decodeInSegments`, pausing before every segment. Stage k decodes at most M segments; a
 * sequence that finishes leaves (its row idles and the cache compacts), an unfinished one carries
 * over to stage k + 1. Each segment records `policy.version` as read after the pause, so weights
 * swapped in during a pause (between segments or stages) are the ones recorded, and the decode
 * cache is rebuilt from the tokens so far because the model's weights version changed.
 *
 * On a backend without synchronous readback (webgpu in Node, readback.ts) each segment is decoded
 * with the model's asynchronous twins and awaited through `awaitIn`, so the computation must be
 * driven (`drive`); elsewhere the synchronous decode runs as before, the faster path on wasm/cpu.
 */
export function* decodeInSegmentsSteps(
  policy: PolicyRuntime,
  requests: readonly DecodeRequest[],
  options: DecodeOptions,
  onSegment?: RolloutContext['onSegment'],
): RolloutSteps<DecodeResult[]> {
  if (requests.length === 0) return [];
  const asyncReads = !canReadSync();
  if (asyncReads) assertAsyncReadable(policy.model, `decoding ${options.agent} (policy "${policy.id}")`);
  const state = startDecode(
    requests.map((r) => r.promptTokens),
    {
      maxNewTokens: options.maxNewTokens,
      temperature: options.temperature,
      topP: options.topP,
      topK: options.topK ?? 0,
      stopTokens: [...policy.tokenizer.stopTokens],
      seed: options.seed,
      streamIds: requests.map((r) => r.streamId),
      // Turns keep the behaviour log-probabilities only: greedy evaluation and tempered rollouts
      // skip a pass of exp over the vocabulary per token (Qwen3's: about 1.4 ms).
      rawLogProbs: false,
    },
  );
  const segments: SegmentRecord[][] = requests.map(() => []);
  // The batch's key/value cache, reserved against the run's device-memory budget before it is built.
  const budget = memoryBudget();
  const positions = Math.min(policy.model.context, maxOf(requests, (r) => r.promptTokens.length) + options.maxNewTokens);
  budget?.reserveCache(policy.id, kvCacheBytes(policy.model, requests.length, positions), `${requests.length} sequences of up to ${positions} tokens (${options.agent})`);
  try {
    let stage = 0;
    while (state.sequences.some((s) => !s.finished)) {
      for (let segment = 0; segment < options.maxSegments && state.sequences.some((s) => !s.finished); segment++) {
        yield { kind: 'segment', agent: options.agent, policy, stage, segment, live: state.sequences.filter((s) => !s.finished).length };
        const before = state.sequences.map((s) => s.tokens.length);
        const startedAt = Date.now();
        const version = policy.version;
        if (asyncReads) yield* awaitIn(decodeSegmentAsync(policy.model, state, options.segmentTokens), `decoding a segment of ${options.agent} on the webgpu backend`);
        else decodeSegment(policy.model, state, options.segmentTokens);
        const fault = takeGpuFault();
        if (fault) throw new GpuMemoryError(`${fault} while decoding ${requests.length} sequences for ${options.agent} (policy "${policy.id}"); shrink rollout.solver_group, rollout.max_response_tokens or policies.${policy.id}.model, or set runtime.gpu_memory_limit_mb below the device's memory`);
        const endedAt = Date.now();
        let produced = 0;
        state.sequences.forEach((s, i) => {
          if (s.tokens.length === before[i]) return;
          produced += s.tokens.length - before[i];
          segments[i].push({
            index: segments[i].length,
            tokenStart: before[i],
            tokenEnd: s.tokens.length,
            text: policy.tokenizer.responseText(s.tokens.slice(before[i])),
            finished: s.finished,
            policyVersion: version,
            startedAt,
            endedAt,
          });
        });
        onSegment?.({ agent: options.agent, policyId: policy.id, tokens: produced, startedAt, endedAt, policyVersion: version });
      }
      stage++;
      if (stage > options.maxNewTokens + 1) throw new Error('segment decode did not terminate');
    }
  } finally {
    disposeDecodeState(state);
    budget?.releaseCache(policy.id);
  }
  return state.sequences.map((s, i) => ({ responseTokens: s.tokens, behaviourLogProbs: s.logProbs, segments: segments[i] }));
}

function versionsOf(segments: readonly SegmentRecord[], fallback: number): [number, number] {
  if (segments.length === 0) return [fallback, fallback];
  return [minOf(segments, (s) => s.policyVersion), maxOf(segments, (s) => s.policyVersion)];
}

interface PendingTurn {
  episode: number;
  role: Role;
  round: number;
  groupId: number;
  sampleIndex: number;
  parent: number | null;
  repairs: number | null;
  promptText: string;
}

function newTurn(
  episode: RolloutEpisode,
  p: PendingTurn,
  agent: string,
  policyId: string,
  promptTokens: number[],
  text: string,
  segments: SegmentRecord[],
  responseTokens: number[],
  [vMin, vMax]: [number, number],
  behaviourLogProbs: number[] = [],
): RolloutTurn {
  return {
    index: episode.turns.length,
    agent,
    role: p.role,
    round: p.round,
    policyId,
    groupId: p.groupId,
    sampleIndex: p.sampleIndex,
    parent: p.parent,
    repairs: p.repairs,
    promptText: p.promptText,
    promptTokens,
    responseTokens,
    behaviourLogProbs,
    text,
    answer: null,
    verdict: null,
    formatValid: false,
    correct: false,
    segments,
    policyVersionMin: vMin,
    policyVersionMax: vMax,
  };
}

/**
 * Parse a turn's text and judge it against its problem (an answer) or the solution it judged (a
 * verdict). One place for decoded and served turns alike (issue #16), so a served agent's turns
 * are judged, and then rewarded, exactly as the Studio's own.
 */
function judgeTurn(ctx: RolloutContext, episode: RolloutEpisode, p: PendingTurn, turn: RolloutTurn): void {
  if (p.role === 'verifier') {
    const parsed = textFormatOf(ctx.family).parseVerdict(turn.text);
    const judged = episode.turns[p.parent!];
    turn.verdict = parsed.verdict;
    turn.formatValid = parsed.formatValid;
    // An unparseable verdict is never right: it neither approves nor rejects.
    turn.correct = parsed.verdict !== null && (parsed.verdict === 'approve') === judged.correct;
  } else {
    const parsed = textFormatOf(ctx.family).parseSolution(turn.text);
    turn.answer = parsed.answer;
    turn.formatValid = parsed.formatValid;
    turn.correct = ctx.family.checkAnswer(episode.problem, parsed.answer);
  }
}

/**
 * Sample one agent's turns for many episodes in one batch, parse them and judge them against the
 * problems. Returns the turns appended to each episode.
 */
function* runAgent(ctx: RolloutContext, episodes: RolloutEpisode[], pending: PendingTurn[], seed: number, temperature: number): RolloutSteps<RolloutTurn[]> {
  if (pending.length === 0) return [];
  const { role, round } = pending[0];
  const agent = agentName(role, round);
  const served = ctx.served?.[role];
  if (served) {
    // A served role: the pool answers while the rollout waits (drive resolves the await); no
    // segment or agent pauses, as there are no weights of this process to swap or train.
    const replies = yield* awaitIn(served.generate(agent, pending.map((p, i) => ({ promptText: p.promptText, seed: (seed + i) >>> 0, temperature }))), `the served ${agent}`);
    return pending.map((p, i) => {
      const turn = newTurn(episodes[p.episode], p, agent, served.policyId, [], replies[i].text, replies[i].segments, [], [0, 0]);
      turn.servedTokens = replies[i].tokens;
      judgeTurn(ctx, episodes[p.episode], p, turn);
      episodes[p.episode].turns.push(turn);
      return turn;
    });
  }
  const policy = ctx.policies[role];
  const { rollout, pipeline } = ctx.config;
  yield { kind: 'agent-start', agent, role, policy, turns: pending.length };
  const requests = pending.map((p, i) => ({ promptText: p.promptText, promptTokens: policy.tokenizer.promptTokens(role, p.promptText), streamId: i }));
  const results = yield* decodeInSegmentsSteps(
    policy,
    requests,
    {
      seed,
      temperature,
      topP: rollout.top_p,
      topK: rollout.top_k,
      maxNewTokens: Math.min(rollout.max_response_tokens, policy.model.context - maxOf(requests, (r) => r.promptTokens.length)),
      segmentTokens: pipeline.segment_tokens,
      maxSegments: pipeline.max_segments,
      agent,
    },
    ctx.onSegment,
  );
  const turns = pending.map((p, i) => {
    const episode = episodes[p.episode];
    const result = results[i];
    const text = policy.tokenizer.responseText(result.responseTokens);
    const [vMin, vMax] = versionsOf(result.segments, policy.version);
    const turn = newTurn(episode, p, agent, policy.id, requests[i].promptTokens, text, result.segments, result.responseTokens, [vMin, vMax], result.behaviourLogProbs);
    judgeTurn(ctx, episode, p, turn);
    episode.turns.push(turn);
    return turn;
  });
  yield { kind: 'agent-done', agent, role, policy, turns, episodes: pending.map((p) => p.episode) };
  return turns;
}

/** Grouped rollouts for a batch of problems; `seed` makes the whole step reproducible. */
export function rolloutEpisodes(ctx: RolloutContext, problems: readonly Problem[], seed: number): RolloutEpisode[] {
  return drain(rolloutSteps(ctx, problems, seed));
}

/** `rolloutEpisodes` on every backend, WebGPU included. */
export function rolloutEpisodesAsync(ctx: RolloutContext, problems: readonly Problem[], seed: number): Promise<RolloutEpisode[]> {
  return drive(rolloutSteps(ctx, problems, seed), () => undefined);
}

/**
 * `rolloutEpisodes`, pausing before every segment and around every agent's group (see
 * `RolloutPause`). The pipeline drives it asynchronously; `rolloutEpisodes` drains it.
 */
export function* rolloutSteps(ctx: RolloutContext, problems: readonly Problem[], seed: number): RolloutSteps<RolloutEpisode[]> {
  const { rollout } = ctx.config;
  const { solverPrompt, verifierPrompt, correctorPrompt } = textFormatOf(ctx.family);
  const rng = new Rng(seed, 'rollout');
  const episodes: RolloutEpisode[] = problems.map((problem) => ({ problem, turns: [], finalAnswer: null, correct: false, rounds: 0, chains: [] }));

  const solverPending: PendingTurn[] = [];
  episodes.forEach((episode, e) => {
    for (let s = 0; s < rollout.solver_group; s++) {
      solverPending.push({ episode: e, role: 'solver', round: 0, groupId: 0, sampleIndex: s, parent: null, repairs: null, promptText: solverPrompt(episode.problem) });
    }
  });
  yield* runAgent(ctx, episodes, solverPending, rng.nextUint32(), rollout.temperature);

  // The solutions a round's Verifier may judge: the Solver's in round 1, the last Corrector's after.
  let candidates: number[][] = episodes.map((episode) => episode.turns.map((t) => t.index));
  const groupCounter = episodes.map(() => 1);
  for (let round = 1; round <= rollout.rounds; round++) {
    const verifierPending: PendingTurn[] = [];
    episodes.forEach((episode, e) => {
      const pool = candidates[e].map((i) => ({ index: i, correct: episode.turns[i].correct }));
      const selected = selectInputs(pool, rollout.select_k, rollout.selection, 'verifier', rng.fork(`v${round}:${e}`));
      for (const { index } of selected) {
        const groupId = groupCounter[e]++;
        for (let s = 0; s < rollout.verifier_group; s++) {
          verifierPending.push({ episode: e, role: 'verifier', round, groupId, sampleIndex: s, parent: index, repairs: null, promptText: verifierPrompt(episode.problem, episode.turns[index].text) });
        }
      }
      if (selected.length > 0) episode.rounds = round;
    });
    const verdicts = yield* runAgent(ctx, episodes, verifierPending, rng.nextUint32(), rollout.temperature);
    if (verdicts.length === 0) break;

    const correctorPending: PendingTurn[] = [];
    episodes.forEach((episode, e) => {
      const reports = episode.turns
        .filter((t) => t.role === 'verifier' && t.round === round)
        .map((t) => ({ index: t.index, correct: t.correct, verdict: t.verdict }));
      const selected = selectInputs(reports, rollout.select_k, rollout.selection, 'corrector', rng.fork(`c${round}:${e}`));
      for (const { index } of selected) {
        const report = episode.turns[index];
        const judged = episode.turns[report.parent!];
        const groupId = groupCounter[e]++;
        for (let s = 0; s < rollout.corrector_group; s++) {
          correctorPending.push({
            episode: e, role: 'corrector', round, groupId, sampleIndex: s, parent: index, repairs: judged.index,
            promptText: correctorPrompt(episode.problem, judged.text, report.text),
          });
        }
      }
    });
    const corrections = yield* runAgent(ctx, episodes, correctorPending, rng.nextUint32(), rollout.temperature);
    candidates = episodes.map((episode) => episode.turns.filter((t) => t.role === 'corrector' && t.round === round).map((t) => t.index));
    // An episode with nothing rejected stops here; the others go on to the next round.
    if (corrections.length === 0) break;
  }

  for (const episode of episodes) finishEpisode(episode, (answer) => ctx.family.checkAnswer(episode.problem, answer));
  return episodes;
}

/**
 * The system's answer for an episode: every chain from a verified Solver turn down to a leaf is
 * walked with `chainFinalAnswer`, and the majority of the chains' answers wins
 * (`episodeFinalAnswer`). With rounds = 0 (no Verifier) every Solver turn is its own chain.
 */
export function finishEpisode(episode: RolloutEpisode, check: (answer: string | null) => boolean): void {
  // Positions and indices agree: turn i of the episode has index i.
  const chains = episodeChains(episode.turns);
  episode.chains = chains;
  const asChain = (path: number[]): ChainTurn[] =>
    path.map((i) => {
      const t = episode.turns[i];
      return t.role === 'verifier' ? { agent: t.agent, verdict: t.verdict } : { agent: t.agent, answer: t.answer };
    });
  const { answer } = episodeFinalAnswer(chains.map(asChain));
  episode.finalAnswer = answer;
  episode.correct = check(answer);
}

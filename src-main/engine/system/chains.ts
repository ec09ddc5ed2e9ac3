/**
 * The chains of a reasoning-system run (system-run.ts says what the two modes are). Each chain
 * is a sequence of calls, each a turn written when the call starts and completed when it ends;
 * on a resume a chain replays its stored turns first (their texts decide what follows, so it
 * takes the same path) and calls only where none is stored.
 */
import type { RunConfig } from '../config/schema';
import { agentName, type Role } from '#shared/agents';
import type { Verdict } from '../agents';
import type { textFormatOf } from '../agents/prompts';
import { computeRewards } from '../rl/rewards';
import { EndpointError } from '../served/client';
import type { TurnView } from '../store';
import type { Problem } from '../tasks/types';
import type { ChainStep, EvalChain, EvalPart } from '../training/evaluate';
import type { ProblemIds } from '../training/records';
import type { RunShell } from '../training/run-shell';
import { rewardOptions } from '../training/scoring';
import type { TaskData } from '../training/task-data';
import { hashString } from '../util/rng';
import { FatalCallError, type AgentCaller, type CallReply } from './callers';
import { segmentWriter } from './segment-writer';
import { ORACLE, ORACLE_PROMPT, type CallCounters, type StoredEpisode } from './stored';

/** The event a system run logs when a chain ran out of its error budget. */
export const CHAIN_FAILED_EVENT = 'system/chain_failed';

/** How a reply was judged: its parsed answer or verdict, whether that is right, whether it parsed. */
export type Judged = Omit<ChainStep, 'role' | 'round' | 'prompt' | 'text' | 'tokens'>;

/** Stop requested: the chain ends here, unfinished, and a resume continues it. */
export class StoppedError extends Error {}

export interface ChainContext {
  shell: RunShell;
  worker: string;
  system: NonNullable<RunConfig['system']>;
  data: TaskData;
  format: ReturnType<typeof textFormatOf>;
  /** The evaluation seed every call's seed derives from. */
  seed: number;
  callers: Record<Role, AgentCaller>;
  stored: Map<string, StoredEpisode>;
  counters: CallCounters;
  attempt: number;
  problemIds: ProblemIds;
  /** Chains of the whole run, for progress. */
  totalChains: number;
}

interface Episode {
  id: number;
  chains: EvalChain[];
  expected: number;
  done: boolean;
}

/** A seed per call, the same on every attempt of the run: (evaluation seed, part, problem, sample, position). Replays (issue 40) seed their calls with it too. */
export function callSeed(base: number, part: EvalPart, problem: number, sample: number, position: number): number {
  return hashString(`${base}:${part}:${problem}:${sample}:${position}`) & 0x7fffffff;
}

/** What plays a chain's steps: a system run's stored-or-called turns, or a replay's calls (issue 40). */
export interface ChainStepper {
  step(role: Role, round: number, prompt: string, judge: (text: string) => Judged, oracleText?: string): Promise<ChainStep & Judged>;
}

/** How a chain of one part runs: who judges, how many rounds, when the loop accepts. */
export interface ChainRules {
  format: ReturnType<typeof textFormatOf>;
  family: TaskData['family'];
  mode: 'model' | 'oracle' | 'corrector-always';
  loop: boolean;
  rounds: number;
  approvals: number;
}

export function chainRules(config: RunConfig, part: EvalPart, format: ReturnType<typeof textFormatOf>, family: TaskData['family']): ChainRules {
  const system = config.system!;
  const mode = part === 'oracle' ? 'oracle' : part === 'corrector-always' ? 'corrector-always' : 'model';
  const loop = system.mode === 'loop';
  const rounds = mode === 'corrector-always' ? 1 : loop ? system.max_iterations : config.rollout.rounds;
  return { format, family, mode, loop, rounds, approvals: system.approvals };
}

/**
 * The chain itself: the Solver answers; then rounds of the Verifier judging the current solution
 * (the model's, the oracle's, or none for the corrector-always control) and the Corrector
 * repairing a rejected one. A system run and a replay of its episodes (issue 40) both run this,
 * so a replay takes the path the run took.
 */
export async function playChain(calls: ChainStepper, rules: ChainRules, problem: Problem, chain: EvalChain): Promise<void> {
  const { format, family, mode, loop, rounds } = rules;
  const solution = (text: string) => {
    const parsed = format.parseSolution(text);
    return { answer: parsed.answer, correct: family.checkAnswer(problem, parsed.answer), formatValid: parsed.formatValid };
  };
  const verdictOf = (judgedCorrect: boolean) => (text: string) => {
    const parsed = format.parseVerdict(text);
    return { verdict: parsed.verdict, correct: parsed.verdict !== null && (parsed.verdict === 'approve') === judgedCorrect, formatValid: parsed.formatValid };
  };

  const first = await calls.step('solver', 0, format.solverPrompt(problem), solution);
  chain.solverCorrect = first.correct;
  let current = { text: first.text, answer: first.answer ?? null, correct: first.correct };
  let approvals = 0;
  let accepted = false;
  for (let round = 1; round <= rounds; round++) {
    let verdict: Verdict | null = null;
    let report: string | null = null;
    if (mode === 'model') {
      const v = await calls.step('verifier', round, format.verifierPrompt(problem, current.text), verdictOf(current.correct));
      verdict = v.verdict ?? null;
      report = v.text;
    } else if (mode === 'oracle') {
      verdict = current.correct ? 'approve' : 'reject';
      const text = format.verdictText(verdict);
      await calls.step('verifier', round, ORACLE_PROMPT, () => ({ verdict, correct: true, formatValid: true }), text);
      report = text;
    } else verdict = 'reject';
    if (verdict !== 'reject') {
      // An approval (or an unparseable verdict, which does not reject): the chain stops,
      // the loop counts it and judges the same solution again until enough in a row.
      approvals++;
      if (!loop || mode === 'corrector-always' || approvals >= rules.approvals) {
        accepted = verdict === 'approve';
        break;
      }
      continue;
    }
    approvals = 0;
    const fixed = await calls.step('corrector', round, format.correctorPrompt(problem, current.text, report), solution);
    current = { text: fixed.text, answer: fixed.answer ?? null, correct: fixed.correct };
  }
  chain.finalAnswer = current.answer;
  chain.finalCorrect = current.correct;
  (chain as EvalChain & { accepted?: boolean }).accepted = accepted;
}

export class SystemChains {
  /** One episode per part and problem; a sampled part's k chains share it. */
  private readonly episodes = new Map<string, Episode>();
  private chainsDone = 0;

  constructor(private readonly ctx: ChainContext) {}

  /** Runs (or replays) one chain to its end; a chain over its error budget ends failed, with no answer. */
  async run(part: EvalPart, problem: Problem, p: number, sample: number, samples: number): Promise<EvalChain> {
    const { shell, system } = this.ctx;
    const previous = this.ctx.stored.get(`${part}:${p}`);
    const episode = this.episodeOf(part, problem, p, samples);
    const chain: EvalChain = { problem, sample, steps: [], solverCorrect: false, finalAnswer: null, finalCorrect: false };
    const calls = new ChainCalls(this.ctx, { part, p, sample, episodeId: episode.id, previous, chain });
    try {
      await this.play(calls, part, problem, chain);
    } catch (error) {
      if (error instanceof StoppedError && error.message === 'stopped') throw error;
      if (error instanceof FatalCallError) throw error;
      // Over the error budget (now, or in an earlier attempt): the chain has no answer.
      chain.finalAnswer = null;
      chain.finalCorrect = false;
      if (!previous?.done) {
        shell.store.events.log(shell.runId, 'warning', CHAIN_FAILED_EVENT, `${part} chain ${sample} of problem ${problem.key}: ${calls.errors} failed calls, over system.error_budget (${system.error_budget}); marked failed: ${(error as Error).message}`, { episodeId: episode.id, part, problem: p, sample, errors: calls.errors });
      }
      (chain as EvalChain & { failed?: boolean }).failed = true;
    }
    episode.chains.push(chain);
    this.finishEpisode(episode, problem);
    this.chainsDone++;
    shell.progress({ phase: 'pretrain', step: this.chainsDone, totalSteps: this.ctx.totalChains, metrics: {}, message: 'reasoning system' });
    return chain;
  }

  private play(calls: ChainCalls, part: EvalPart, problem: Problem, chain: EvalChain): Promise<void> {
    return playChain(calls, chainRules(this.ctx.shell.config, part, this.ctx.format, this.ctx.data.family), problem, chain);
  }

  private episodeOf(part: EvalPart, problem: Problem, p: number, samples: number): Episode {
    const { shell, system } = this.ctx;
    const { writer, runId } = shell;
    const key = `${part}:${p}`;
    let e = this.episodes.get(key);
    if (!e) {
      const previous = this.ctx.stored.get(key);
      let id = previous?.episodeId;
      if (id === undefined) {
        id = writer.newId('episodes');
        writer.episode({ id, runId, step: 0, problemId: this.ctx.problemIds.idOf(writer, problem), split: 'test', finalAnswer: null, correct: null, rounds: 0, meta: { eval: part, system: system.mode, problem: p, chains: samples } });
      }
      e = { id, chains: [], expected: samples, done: previous?.done ?? false };
      this.episodes.set(key, e);
    }
    return e;
  }

  /** Once every chain of an episode ended: its outcome is the majority of the chains' answers. */
  private finishEpisode(e: Episode, problem: Problem): void {
    if (e.chains.length < e.expected || e.done) return;
    const votes = new Map<string, number>();
    for (const c of e.chains) if (c.finalAnswer !== null) votes.set(c.finalAnswer, (votes.get(c.finalAnswer) ?? 0) + 1);
    const answer = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
    this.ctx.shell.writer.episodeOutcome(e.id, answer, answer !== null && this.ctx.data.family.checkAnswer(problem, answer), Math.max(0, ...e.chains.map((c) => c.steps.filter((x) => x.role === 'verifier').length)));
  }
}

/** The calls of one chain: where its replay stands, its last turn, its failed calls. */
class ChainCalls implements ChainStepper {
  errors = 0;
  private cursor = 0;
  private parentTurn: number | null = null;
  private readonly replay: TurnView[];
  private readonly temperature: number;

  constructor(
    private readonly ctx: ChainContext,
    private readonly at: { part: EvalPart; p: number; sample: number; episodeId: number; previous: StoredEpisode | undefined; chain: EvalChain },
  ) {
    this.replay = at.previous?.turns.get(at.sample) ?? [];
    this.temperature = at.part === 'sampled' ? ctx.shell.config.rollout.temperature : 0;
  }

  /** One step of the chain: replayed from a stored turn, else made (a call, or the oracle's verdict) and stored. */
  async step(role: Role, round: number, prompt: string, judge: (text: string) => Judged, oracleText?: string): Promise<ChainStep & Judged> {
    const { chain, episodeId } = this.at;
    const agent = agentName(role, round);
    const storedTurn = this.replay[this.cursor];
    if (storedTurn) {
      if (storedTurn.agent !== agent || storedTurn.prompt !== prompt) {
        throw new FatalCallError(`episode ${episodeId}: stored turn ${storedTurn.id} (${storedTurn.agent}) does not match the chain's next call (${agent}); the run's config changed since it was stopped`);
      }
      this.cursor++;
      this.parentTurn = storedTurn.id;
      const s = { role, round, prompt, text: storedTurn.text, tokens: storedTurn.tokenCount, ...judge(storedTurn.text) };
      chain.steps.push(s);
      return s;
    }
    if (this.at.previous?.done) throw new StoppedError('failed earlier');
    for (;;) {
      if (oracleText === undefined && this.ctx.shell.signal?.aborted) throw new StoppedError('stopped');
      const made = await this.call(role, agent, round, prompt, oracleText);
      if (made === null) continue;
      const s = { role, round, prompt, text: made.reply.text, tokens: made.reply.tokens ?? made.tokens, ...judge(made.reply.text) };
      this.complete(made.id, role, agent, s, oracleText !== undefined);
      chain.steps.push(s);
      return s;
    }
  }

  /**
   * One attempt at a call: its turn is written first, its segments as the reply streams. Null
   * when the call failed but the chain's error budget allows another (the failed turn stays,
   * superseded, beside the retry that replaces it).
   */
  private async call(role: Role, agent: string, round: number, prompt: string, oracleText: string | undefined): Promise<{ id: number; reply: CallReply; tokens: number } | null> {
    const { shell, worker, system, counters } = this.ctx;
    const { writer, runId, store, config } = shell;
    const { part, p, sample, episodeId, chain } = this.at;
    const policyId = oracleText === undefined ? config.agents[role] : ORACLE;
    const id = writer.newId('turns');
    const startedAt = Date.now();
    // The Solver samples of an episode are one group; each later turn is its chain's own.
    const groupId = role === 'solver' ? 0 : sample + 1;
    writer.turn({ id, runId, episodeId, step: 0, agent, policyId, round, groupId, parentTurnId: this.parentTurn, sampleIndex: sample, prompt, text: '', tokenCount: 0, parsed: null, correct: null, formatValid: false, policyVersionMin: 0, policyVersionMax: 0, createdAt: startedAt });
    const segments = segmentWriter(writer, store, runId, id, worker, config.pipeline.segment_tokens);
    let reply: CallReply;
    try {
      reply = oracleText === undefined ? await this.ctx.callers[role]({ role, agent, round, prompt, temperature: this.temperature, seed: callSeed(this.ctx.seed, part, p, sample, chain.steps.length) }, segments) : { text: oracleText, tokens: null };
    } catch (error) {
      writer.flush();
      store.trajectories.supersedeTurn(id, this.ctx.attempt);
      if (error instanceof EndpointError && !error.retryable) throw new FatalCallError(error.message);
      counters.failedCalls++;
      this.errors++;
      if (this.errors > system.error_budget) throw error;
      return null;
    }
    segments.finish(reply.text);
    return { id, reply, tokens: segments.count() };
  }

  /** The turn's text and judgement; a model's turn gets its reward too. */
  private complete(id: number, role: Role, agent: string, s: ChainStep & Judged, oracle: boolean): void {
    const { writer, runId, config } = this.ctx.shell;
    writer.turnResult({ id, text: s.text, tokenCount: s.tokens, parsed: role === 'verifier' ? (s.verdict ?? null) : (s.answer ?? null), correct: s.correct, formatValid: s.formatValid });
    if (!oracle) {
      // MarsRL's agent-specific reward (as RL runs log it), so reward filters and preference pairs work on these turns.
      const [reward] = computeRewards('decoupled', [{ agent, role, correct: s.correct, formatValid: s.formatValid }], { correct: s.correct }, rewardOptions(config));
      writer.reward({ turnId: id, runId, value: reward.value, components: { ...reward.components }, scheme: 'decoupled' });
      this.ctx.counters.calls++;
    }
    this.parentTurn = id;
  }
}

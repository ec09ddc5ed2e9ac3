/**
 * Replay (issue 40): a stored episode's problem, a problem of the run's task or a prompt typed by
 * hand, run through the chain again with any checkpoint or an endpoint, greedy or sampled with a
 * seed. The replay runs the code the run ran: a reasoning-system run's chain is `playChain`
 * (system/chains.ts) with each call seeded as the run seeds it (`callSeed`); an RL run's stored
 * chains are its greedy evaluation chains, replayed by `evaluatePartAsync` on the one problem.
 *
 * A replay is kept apart from the run's data (store/replays.ts): it writes no episode, turn,
 * reward or metric of the run. Whether the stored texts can be reproduced is said with the
 * replay: a system run's calls and an RL run's greedy chains can; an RL run's training episode
 * cannot (its draws come from one random stream over the step's whole batched, grouped rollout).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ReplayModels, ReplayRequest, ReplayTurn } from '#shared/contract';
import { agentName, ROLES, type Role } from '#shared/agents';
import { textFormatOf } from '../agents/prompts';
import { readAnyCheckpointManifest } from '../checkpoint/manifest';
import { parseRunConfig } from '../config/load';
import { initBackend } from '../model/backend';
import type { Store, TurnView } from '../store';
import type { Problem } from '../tasks/types';
import { localCaller, servedCaller, type AgentCaller } from '../system/callers';
import { callSeed, chainRules, playChain, type ChainStepper, type Judged } from '../system/chains';
import { evaluatePartAsync, type ChainStep, type EvalChain, type EvalContext } from '../training/evaluate';
import type { PolicyRuntime } from '../training/policies';
import { usedEndpoints } from '../served/config';
import { servedRoles } from '../served/roles';
import { replayPlayers, type PlayerOptions, type ReplayPlayers } from './players';
import { replayTarget, type ReplayTarget } from './target';

export { ReplayRequestError } from './target';

export interface ReplayOptions extends PlayerOptions {
  /** Called once the replay's row exists (before any call), and after each turn. */
  onStart?: (replayId: number) => void;
  onTurn?: (replayId: number, turns: number) => void;
}

/** Why the run's sampling of a stored episode can (or cannot) be drawn again. */
export function reproducibility(target: ReplayTarget, decoding: 'greedy' | 'sampled'): { reproducible: boolean | null; reason: string } {
  if (!target.episode) return { reproducible: null, reason: 'no stored episode: a problem or prompt played fresh, nothing to reproduce' };
  if (target.config.system) return { reproducible: true, reason: 'a system run seeds every call on its own (evaluation seed, part, problem, chain, position): the same model and seed give the stored texts' };
  if (target.episode.split === 'train') {
    return { reproducible: false, reason: `not reproducible: the run sampled this training episode in a batched, grouped rollout (${target.config.rollout.problems_per_step} problems × ${target.config.rollout.solver_group} Solver samples, then their Verifier and Corrector groups, decoded together from one random stream per step), so one episode cannot be drawn again alone` };
  }
  if (target.episode.step === 0 && target.warmStarted) {
    return { reproducible: false, reason: 'not reproducible: the step-0 evaluation ran with policies the run warm-started in memory (pretrain) and kept no checkpoint of' };
  }
  if (decoding === 'sampled') return { reproducible: false, reason: "not reproducible sampled: an RL run stores only its greedy evaluation chains; replay greedy to reproduce them" };
  return { reproducible: true, reason: 'a greedy evaluation chain: the checkpoint it was evaluated with gives the stored texts' };
}

/** Run the replay to its end; returns its id (a failed replay is stored as failed, with its error). */
export async function runReplay(store: Store, request: ReplayRequest, options: ReplayOptions = {}): Promise<number> {
  const target = replayTarget(store, request);
  const decoding = request.decoding ?? (target.part === 'sampled' ? 'sampled' : 'greedy');
  // The run's backend, as its worker chose it (a no-op once this process has one), where a local
  // policy plays a role: a replay served end to end needs none.
  const servedOnly = request.endpoint !== undefined || (!request.checkpoint && !!target.config.system && usedEndpoints(target.config).size > 0 && [...usedEndpoints(target.config).values()].flat().length === ROLES.length);
  if (!servedOnly) await initBackend(target.config.runtime.backend);
  const players = replayPlayers(store, request, target, options);
  const seed = request.seed ?? target.evalSeed;
  const repro = reproducibility(target, decoding);
  const replayId = store.replays.create({
    runId: request.runId, episodeId: target.episode?.id ?? null, problemId: target.problemId, question: target.problem.question, reference: target.byHand ? null : target.problem.answer,
    model: players.model, modelLabel: players.label, decoding, seed, reproducible: repro.reproducible, reproducibleReason: repro.reason, storedSeconds: target.storedSeconds, createdAt: Date.now(),
  });
  options.onStart?.(replayId);
  const t0 = performance.now();
  let index = 0;
  const record = (s: ChainStep) => {
    const turn = replayTurnOf(index, s, target.stored[index], target.byHand);
    store.replays.addTurn(replayId, turn);
    index++;
    options.onTurn?.(replayId, index);
    return turn;
  };
  try {
    const chain = target.config.system ? await systemChain(target, players, decoding, seed, record) : await evalChain(target, players, decoding, seed, record);
    const turns = store.replays.get(replayId)!.turns;
    const compared = target.stored.length > 0 && repro.reproducible !== false;
    const matchesStored = compared ? turns.length === target.stored.length && turns.every((t) => t.sameAsStored) : null;
    store.replays.finish(replayId, { status: 'done', error: null, matchesStored, finalAnswer: chain.finalAnswer, correct: target.byHand ? null : chain.finalCorrect, seconds: (performance.now() - t0) / 1000 });
  } catch (error) {
    store.replays.finish(replayId, { status: 'failed', error: error instanceof Error ? error.message : String(error), matchesStored: null, finalAnswer: null, correct: null, seconds: (performance.now() - t0) / 1000 });
  } finally {
    await players.dispose();
  }
  return replayId;
}

function replayTurnOf(index: number, s: ChainStep, stored: TurnView | undefined, byHand: boolean): ReplayTurn {
  const agent = s.role === 'solver' ? 'solver' : agentName(s.role, s.round);
  const parsed = s.role === 'verifier' ? (s.verdict ?? null) : (s.answer ?? null);
  return {
    index, agent, round: s.round, prompt: s.prompt, text: s.text, tokenCount: s.tokens, parsed,
    correct: byHand ? null : s.correct, formatValid: s.formatValid,
    sameAsStored: stored ? stored.agent === agent && stored.prompt === s.prompt && stored.text === s.text : null,
  };
}

function emptyChain(problem: Problem): EvalChain {
  return { problem, sample: 0, steps: [], solverCorrect: false, finalAnswer: null, finalCorrect: false };
}

/** The task family, except that a prompt typed by hand has no reference to judge against (its turns are stored unjudged). */
function familyOf(target: ReplayTarget): ReplayTarget['data']['family'] {
  if (!target.byHand) return target.data.family;
  const family = Object.create(target.data.family) as ReplayTarget['data']['family'];
  family.checkAnswer = () => false;
  return family;
}

/** A system run's chain: `playChain` with each call seeded as the run seeded it. */
async function systemChain(target: ReplayTarget, players: ReplayPlayers, decoding: 'greedy' | 'sampled', seed: number, record: (s: ChainStep) => void): Promise<EvalChain> {
  const { config } = players;
  const format = textFormatOf(target.data.family);
  const family = familyOf(target);
  const callers = {} as Record<Role, AgentCaller>;
  for (const role of ['solver', 'verifier', 'corrector'] as const) {
    const policy = players.policies[role];
    callers[role] = policy ? localCaller(policy, config) : servedCaller(players.pool!, config, role);
  }
  const part = decoding === 'sampled' ? 'sampled' : target.part === 'sampled' ? 'greedy' : target.part;
  const temperature = decoding === 'sampled' ? config.rollout.temperature : 0;
  const chain = emptyChain(target.problem);
  const sink = { delta: () => {}, restart: () => {} };
  const stepper: ChainStepper = {
    async step(role, round, prompt, judge: (text: string) => Judged, oracleText) {
      const agent = agentName(role, round);
      const reply = oracleText !== undefined ? { text: oracleText, tokens: 0 } : await callers[role]({ role, agent, round, prompt, temperature, seed: callSeed(seed, part, target.index, target.sample, chain.steps.length) }, sink);
      const s = { role, round, prompt, text: reply.text, tokens: reply.tokens ?? 0, ...judge(reply.text) };
      chain.steps.push(s);
      record(s);
      return s;
    },
  };
  await playChain(stepper, chainRules(config, part, format, family), target.problem, chain);
  return chain;
}

/** An RL run's chain: its evaluation code on the one problem (greedy, or one sampled chain). */
async function evalChain(target: ReplayTarget, players: ReplayPlayers, decoding: 'greedy' | 'sampled', seed: number, record: (s: ChainStep) => void): Promise<EvalChain> {
  const config = { ...players.config, eval: { ...players.config.eval, k: 1 } };
  const ctx: EvalContext = { family: familyOf(target), policies: players.policies as Record<Role, PolicyRuntime>, served: servedRoles(players.pool, config), config };
  // As the run's evaluation: greedy with the evaluation seed, the sampled part with it + 1 (evaluate.ts).
  const [chain] = await evaluatePartAsync(ctx, [target.problem], seed, decoding === 'sampled' ? 'sampled' : 'greedy');
  for (const s of chain.steps) record(s);
  return chain;
}

/** The checkpoints on disk of every run (a replay may play any of them) and the replayed run's endpoints. */
export function replayModels(store: Store, runId: number): ReplayModels {
  const run = store.runs.get(runId);
  if (!run) throw new Error(`run ${runId} does not exist`);
  const checkpoints: ReplayModels['checkpoints'] = [];
  const seen = new Set<string>();
  for (const c of store.replays.allCheckpoints()) {
    const dir = path.dirname(c.path);
    if (seen.has(dir) || !fs.existsSync(c.path)) continue;
    seen.add(dir);
    try {
      const manifest = readAnyCheckpointManifest(c.path);
      checkpoints.push({ runId: c.runId, runName: c.runName, step: c.step, path: dir, family: manifest.family ?? 'gpt', lora: manifest.family === 'hf' && !!manifest.lora });
    } catch {
      // A folder that is no checkpoint any more is not offered.
    }
  }
  const config = parseRunConfig(run.config, `run ${runId}`);
  return { checkpoints, endpoints: Object.keys(config.endpoints ?? {}) };
}

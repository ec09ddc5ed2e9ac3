/**
 * Reward schemes by name (verl core_algos style: pure functions in a registry; an unknown name
 * fails with the list of known ones).
 *
 * Shapes: a scheme reads one episode, i.e. its turns (every agent sample of one problem's rollout,
 * or of one chain) and the episode's outcome, and returns one `TurnReward` per turn, in the same
 * order. Rewards are binary before the format penalty, as in MarsRL.
 *
 * - `decoupled` (MarsRL, arXiv 2511.11373, agent-specific rewards): the Solver and Correctors get 1
 *   when their own final answer is right; a Verifier gets 1 when its verdict matches the truth of
 *   the solution it judged (approves a right one, rejects a wrong one). Else 0.
 * - `shared`: every turn gets the episode's outcome, 1 when the system's final answer is right
 *   (see agents/outcome.ts), else 0. The baseline MarsRL's decoupling is compared with.
 *
 * Format penalty (both schemes): a turn whose output cannot be parsed (`formatValid` false) has
 * `formatPenalty` subtracted. Components always sum to the value:
 * value = correctness + format_penalty, with format_penalty ∈ {0, −formatPenalty}.
 *
 * Role scales (`reward.scale`, default 1 each): correctness is `scale[role]` instead of 1 for a
 * right turn. Dr. MAS (arXiv 2602.08847) studies agents whose rewards live on different scales:
 * under global normalization an agent whose rewards sit far from the pooled mean gets inflated
 * advantages (its inflation factor), which agent-wise normalization removes; the drmas-paper
 * preset uses scales to make that visible at small scale.
 */
import type { Role } from '#shared/agents';
import { REWARD_SCHEMES, RewardSchema } from '../config/schema';
import { Registry } from '../util/registry';

export interface RewardTurn {
  agent: string;
  role: Role;
  /** Solver/Corrector: the final answer is right. Verifier: the verdict matches the judged solution's truth. */
  correct: boolean;
  /** The output parsed (answer marker / verdict marker as the format requires). */
  formatValid: boolean;
}

export interface EpisodeOutcome {
  /** The system's final answer for the episode is right. */
  correct: boolean;
}

export interface RewardOptions {
  /** Subtracted from a turn whose format is invalid; ≥ 0 (reward.format_penalty, default 0). */
  formatPenalty: number;
  /** The correctness reward of a right turn per role (reward.scale); 1 where absent. */
  roleScale?: Partial<Record<Role, number>>;
}

export interface RewardComponents {
  correctness: number;
  /** 0, or −formatPenalty for a turn with an invalid format. */
  format_penalty: number;
}

export interface TurnReward {
  value: number;
  components: RewardComponents;
}

export type RewardFn = (turns: readonly RewardTurn[], outcome: EpisodeOutcome, options: RewardOptions) => TurnReward[];

export const DEFAULT_REWARD_OPTIONS: RewardOptions = { formatPenalty: RewardSchema.parse({}).format_penalty };

const registry = new Registry<RewardFn>('reward scheme', 'schemes');

/** Adds a scheme; a name can be registered once (a silent override would change old runs' meaning). */
export const registerReward = (name: string, fn: RewardFn): void => registry.register(name, fn);
export const getReward = (name: string): RewardFn => registry.get(name);
export const listRewards = (): string[] => registry.names();

function scaleOf(role: Role, options: RewardOptions): number {
  const scale = options.roleScale?.[role] ?? 1;
  if (!(scale > 0) || !Number.isFinite(scale)) throw new Error(`reward scale of ${role} must be a positive number, got ${scale}`);
  return scale;
}

/** `right`: the turn earns its correctness reward (its role's scale). */
function withFormatPenalty(turn: RewardTurn, right: boolean, options: RewardOptions): TurnReward {
  if (!(options.formatPenalty >= 0)) throw new Error(`formatPenalty must be ≥ 0, got ${options.formatPenalty}`);
  const correctness = right ? scaleOf(turn.role, options) : 0;
  const formatPenalty = turn.formatValid ? 0 : -options.formatPenalty;
  return { value: correctness + formatPenalty, components: { correctness, format_penalty: formatPenalty } };
}

/** MarsRL's agent-specific rewards: each turn is judged on its own output. */
export const decoupledReward: RewardFn = (turns, _outcome, options) => turns.map((turn) => withFormatPenalty(turn, turn.correct, options));

/** Every turn gets the episode's outcome. */
export const sharedReward: RewardFn = (turns, outcome, options) => turns.map((turn) => withFormatPenalty(turn, outcome.correct, options));

registerReward('decoupled', decoupledReward);
registerReward('shared', sharedReward);

/** Computes rewards with a scheme by name. */
export function computeRewards(
  scheme: string,
  turns: readonly RewardTurn[],
  outcome: EpisodeOutcome,
  options: RewardOptions = DEFAULT_REWARD_OPTIONS,
): TurnReward[] {
  return getReward(scheme)(turns, outcome, options);
}

// The config schema and this registry must agree on the built-in names.
for (const scheme of REWARD_SCHEMES) getReward(scheme);

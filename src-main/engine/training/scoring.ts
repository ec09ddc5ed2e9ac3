/**
 * Scoring: each turn's reward by the configured scheme (rl/rewards.ts), then its advantage over
 * the turns of its prompt (rl/advantages.ts), and the Verifier class balance. One rule for both
 * modes: the synchronous loop scores a step's whole episodes, the pipeline scores each agent's
 * batch as it arrives when the scheme is agent-local (queues.ts `scoringScope`), and both go
 * through `scoreGroup`, so a batch scores the same either way.
 */
import type { RunConfig } from '../config/schema';
import { classBalanceWeights, computeAdvantages, type RewardOptions, type TurnAdvantage } from '../rl';
import { rewardsWithOutcome, schemeOutcome, trajectoryOutcomesOf } from '../rl/outcomes';
import type { RolloutEpisode, RolloutTurn } from './rollout';

export interface ScoredEpisode {
  rewards: { value: number; components: Record<string, number> }[];
  advantages: TurnAdvantage[];
}

/** The reward options of a run's config (format penalty, role scales). */
export function rewardOptions(config: RunConfig): RewardOptions {
  return { formatPenalty: config.reward.format_penalty, roleScale: config.reward.scale };
}

/**
 * Rewards, then advantages, of turns of one prompt (episode `e` of the step). `outcome` is what
 * the reward reads as the episode's result: one value for the whole group, or one per turn (a
 * shared reward's trajectory outcomes). The group key is the prompt: one problem's turns across
 * agents (Dr. MAS: agent k's samples for the same prompt).
 */
function scoreGroup(config: RunConfig, e: number, episode: RolloutEpisode, turns: readonly RolloutTurn[], outcome: boolean | readonly boolean[]): ScoredEpisode {
  const rewardTurns = turns.map((t) => ({ agent: t.agent, role: t.role, correct: t.correct, formatValid: t.formatValid }));
  const rewards = rewardsWithOutcome(config.reward.scheme, rewardTurns, outcome, rewardOptions(config));
  const groupKey = `${e}:${episode.problem.key}`;
  const advantages = computeAdvantages(
    turns.map((t, i) => ({ agent: t.agent, reward: rewards[i].value, groupKey })),
    config.advantage.mode,
    { std: config.advantage.std, singleSample: config.advantage.single_sample, eps: config.advantage.eps },
  );
  return { rewards: rewards.map((r) => ({ value: r.value, components: { ...r.components } })), advantages };
}

/** Each turn's trajectory outcome for shared rewards (the rule lives in rl/outcomes.ts, issue 40). */
export function trajectoryOutcomes(episode: RolloutEpisode): boolean[] {
  return trajectoryOutcomesOf(episode.turns, episode.chains);
}

/** Rewards by the configured scheme, then advantages over all agents' turns of one problem. */
export function scoreEpisodes(config: RunConfig, episodes: readonly RolloutEpisode[]): ScoredEpisode[] {
  const scored = episodes.map((episode, e) => scoreGroup(config, e, episode, episode.turns, schemeOutcome(config.reward.scheme, episode.turns, episode.chains, episode.correct)));
  if (config.advantage.verifier_class_balance) {
    balanceVerifierClasses(episodes.flatMap((episode, e) => episode.turns.map((turn, i) => ({ episode: e, turn, advantage: scored[e].advantages[i] }))));
  }
  return scored;
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
    const group = scoreGroup(config, e, episodes[e], list, false);
    list.forEach((t, i) => {
      scored[e].rewards[t.index] = group.rewards[i];
      scored[e].advantages[t.index] = group.advantages[i];
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

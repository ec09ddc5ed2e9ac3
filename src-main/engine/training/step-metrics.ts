/**
 * The metrics of an RL step's rollout, per agent (reward, advantage, length, accuracy, format,
 * inflation) and per round (Verifier precision / recall, Corrector fix rate): the same keys in
 * the synchronous and the pipelined loop.
 */
import type { RunConfig } from '../config/schema';
import { agentName } from '#shared/agents';
import { meanInflationFactors } from '../rl';
import { responseLength, type RolloutEpisode } from './rollout';
import type { ScoredEpisode } from './scoring';

export function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN;
}

export function std(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  return Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / values.length);
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


/**
 * The four dataset formats: their columns and how one source record becomes one row.
 *
 * - trajectories: one row per turn with every id needed to rebuild the episode tree
 *   (episode_id, group_id, parent_turn_id, round, sample_index) and everything learned about it.
 * - sft: one row per turn that passes the filter (default: correct and format-valid), as chat
 *   messages [system?, user = the prompt the agent read, assistant = what it wrote].
 * - pairs: preference pairs from one group (see `pairsOfGroup` for the rule).
 * - verl: one row per problem in veRL's RL dataset layout (data_source, prompt, ability,
 *   reward_model, extra_info), the prompt being what the Solver read.
 */
import { splitAgent } from '#shared/agents';
import type { ExportFormat } from './options';
import type { ProblemRecord, TurnRecord } from './queries';
import { bool, f64, i32, i64, messages, numberMap, str, struct, text, type ColumnSpec } from './schema';

export interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export type Row = Record<string, unknown>;

/**
 * The system message for an agent's role: the output contract the MarsRL formats impose
 * (`A:<answer>`, `V:ok`/`V:no`, prompt parts separated by `|`), written for a model that has not
 * seen the tiny policies' training.
 */
export function systemMessage(agent: string): string {
  switch (splitAgent(agent).role) {
    case 'solver':
      return 'You are the Solver. Solve the problem. Write your working-out, then end with the final answer as A:<answer>.';
    case 'verifier':
      return 'You are the Verifier. The input is question|solution. Check the solution, writing your checks first, then end with the verdict V:ok if the solution is correct or V:no if it is not.';
    case 'corrector':
      return 'You are the Corrector. The input is question|solution|verdict, where the verdict rejected the solution. Write a corrected solution: your working-out, then the final answer as A:<answer>.';
    default:
      return `You are the ${agent} agent.`;
  }
}

function promptMessages(agent: string, prompt: string, system: boolean): Message[] {
  return system ? [{ role: 'system', content: systemMessage(agent) }, { role: 'user', content: prompt }] : [{ role: 'user', content: prompt }];
}

const toBool = (v: number | null): boolean | null => (v === null ? null : v !== 0);

function parseComponents(json: string | null): Record<string, number> | null {
  if (json === null) return null;
  try {
    const value = JSON.parse(json) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, number>) : null;
  } catch {
    return null;
  }
}

/** Which attempt of its run wrote a turn (issue #17), in the trajectory and SFT tables alike. */
const TURN_ATTEMPT_COLUMNS: ColumnSpec[] = [
  i32('attempt', false, 'Run attempt that wrote the turn: 1, then one more per `marsrl resume` (a resume redoes the steps after its checkpoint).'),
  i32('superseded_by', true, 'The attempt that redid this turn\'s step after a resume; null for the live attempt (set only in exports that include superseded attempts).'),
];

/** The values of TURN_ATTEMPT_COLUMNS (and of the pairs' attempt columns) for a turn. */
function attemptOf(t: TurnRecord): { attempt: number; superseded_by: number | null } {
  return { attempt: t.attempt ?? 1, superseded_by: t.superseded_by ?? null };
}

// ── trajectories ───────────────────────────────────────────────────────────────────────────────

export const TRAJECTORY_COLUMNS: ColumnSpec[] = [
  i64('run_id', false, 'Run id in the store.'),
  str('run_name', false, 'Run name.'),
  i32('step', false, 'RL step the turn was generated in.'),
  ...TURN_ATTEMPT_COLUMNS,
  i64('episode_id', true, 'Episode (one problem, one unrolled Solver → Verifier → Corrector chain).'),
  i64('problem_id', true, 'Problem id in the store (per run).'),
  str('problem_key', true, 'Stable key of the problem within its run and split.'),
  str('split', true, 'train or test (held-out evaluation).'),
  i64('turn_id', false, 'Turn id; unique across the store.'),
  str('agent', false, 'Agent: solver, verifier1, corrector1, verifier2, …'),
  str('role', false, 'Role the agent plays: solver, verifier or corrector.'),
  str('policy_id', false, 'Policy that generated the turn.'),
  i32('round', false, 'Verify/correct round (0 for the Solver).'),
  i64('group_id', false, 'Sampling group within the episode: turns sampled for the same input.'),
  i64('parent_turn_id', true, 'The turn this one read (null for the Solver): the edge of the episode tree.'),
  i32('sample_index', false, 'Index of the sample within its group.'),
  text('prompt', false, 'What the agent read.'),
  text('text', false, 'What the agent wrote (all segments joined).'),
  text('parsed', true, 'Parsed final answer (Solver, Corrector) or verdict (Verifier); null when unparseable.'),
  bool('correct', true, 'Answer matches the reference (Solver, Corrector) or verdict matches the truth (Verifier); null when unknown.'),
  bool('format_valid', false, 'The output followed the format (one A:<answer> or V:ok|no).'),
  bool('episode_correct', true, 'Outcome of the whole episode (final answer correct).'),
  f64('reward', true, 'Scalar reward; null when none was logged.'),
  str('reward_scheme', true, 'decoupled (agent-specific) or shared.'),
  numberMap('reward_components', true, 'Reward components by name (correctness, format_penalty, …).'),
  f64('advantage', true, 'Advantage used in the update; null when none was logged.'),
  str('advantage_mode', true, 'Normalization: agentwise, global, agent-mean, agent-std, no-std.'),
  str('advantage_group_key', true, 'Key of the set of samples the advantage was normalized over.'),
  f64('advantage_mu', true, 'Mean μ used for the advantage.'),
  f64('advantage_sigma', true, 'Standard deviation σ used for the advantage.'),
  f64('advantage_weight', true, 'Factor the normalized advantage was multiplied by (advantage.verifier_class_balance); 1 when none.'),
  i32('token_count', false, 'Tokens in the response.'),
  i32('policy_version_min', false, 'Oldest policy version that wrote a segment of this turn.'),
  i32('policy_version_max', false, 'Newest policy version that wrote a segment of this turn.'),
  i64('created_at_ms', false, 'When the turn was written (Unix time, milliseconds).'),
];

export function trajectoryRow(t: TurnRecord, runName: string): Row {
  return {
    run_id: t.run_id,
    run_name: runName,
    step: t.step,
    ...attemptOf(t),
    episode_id: t.episode_id,
    problem_id: t.problem_id,
    problem_key: t.problem_key,
    split: t.split,
    turn_id: t.id,
    agent: t.agent,
    role: splitAgent(t.agent).role,
    policy_id: t.policy_id,
    round: t.round,
    group_id: t.group_id,
    parent_turn_id: t.parent_turn_id,
    sample_index: t.sample_index,
    prompt: t.prompt,
    text: t.text,
    parsed: t.parsed,
    correct: toBool(t.correct),
    format_valid: t.format_valid !== 0,
    episode_correct: toBool(t.episode_correct),
    reward: t.reward,
    reward_scheme: t.reward_scheme,
    reward_components: parseComponents(t.components_json),
    advantage: t.advantage,
    advantage_mode: t.advantage_mode,
    advantage_group_key: t.advantage_group_key,
    advantage_mu: t.advantage_mu,
    advantage_sigma: t.advantage_sigma,
    advantage_weight: t.advantage_weight,
    token_count: t.token_count,
    policy_version_min: t.policy_version_min,
    policy_version_max: t.policy_version_max,
    created_at_ms: t.created_at,
  };
}

// ── sft ────────────────────────────────────────────────────────────────────────────────────────

export const SFT_COLUMNS: ColumnSpec[] = [
  messages('messages', 'Chat messages: [system (role instructions, unless disabled), user (the prompt the agent read), assistant (what it wrote)].'),
  str('agent', false, 'Agent that wrote the assistant message.'),
  str('role', false, 'Role the agent plays: solver, verifier or corrector.'),
  str('policy_id', false, 'Policy that wrote it.'),
  i64('run_id', false, 'Run id in the store.'),
  i64('turn_id', false, 'Source turn id.'),
  i64('episode_id', true, 'Source episode id.'),
  i32('step', false, 'RL step.'),
  ...TURN_ATTEMPT_COLUMNS,
  str('split', true, 'train or test.'),
  str('problem_key', true, 'Problem key within the run.'),
  bool('correct', true, 'Correctness of the turn.'),
  bool('format_valid', false, 'The output followed the format.'),
  f64('reward', true, 'Reward of the turn; null when none was logged.'),
];

export function sftRow(t: TurnRecord, system: boolean): Row {
  return {
    messages: [...promptMessages(t.agent, t.prompt, system), { role: 'assistant', content: t.text }],
    agent: t.agent,
    role: splitAgent(t.agent).role,
    policy_id: t.policy_id,
    run_id: t.run_id,
    turn_id: t.id,
    episode_id: t.episode_id,
    step: t.step,
    ...attemptOf(t),
    split: t.split,
    problem_key: t.problem_key,
    correct: toBool(t.correct),
    format_valid: t.format_valid !== 0,
    reward: t.reward,
  };
}

// ── pairs ──────────────────────────────────────────────────────────────────────────────────────

export const PAIR_COLUMNS: ColumnSpec[] = [
  messages('prompt', 'Conversation before the answer: [system (unless disabled), user (the prompt both turns read)].'),
  messages('chosen', 'The higher-reward answer: [assistant].'),
  messages('rejected', 'The lower-reward answer: [assistant].'),
  str('agent', false, 'Agent of both turns.'),
  str('role', false, 'Role the agent plays.'),
  i64('run_id', false, 'Run id in the store.'),
  i64('episode_id', false, 'Episode both turns belong to.'),
  i64('group_id', false, 'Sampling group both turns belong to.'),
  i32('step', false, 'RL step.'),
  i32('attempt', false, 'Run attempt that wrote both turns: 1, then one more per `marsrl resume` (a resume redoes the steps after its checkpoint).'),
  i32('superseded_by', true, 'The attempt that redid their step after a resume; null for the live attempt (set only in exports that include superseded attempts).'),
  str('split', true, 'train or test.'),
  str('problem_key', true, 'Problem key within the run.'),
  i64('chosen_turn_id', false, 'Turn id of the chosen answer.'),
  i64('rejected_turn_id', false, 'Turn id of the rejected answer.'),
  f64('chosen_reward', false, 'Reward of the chosen answer.'),
  f64('rejected_reward', false, 'Reward of the rejected answer (always strictly lower).'),
  bool('chosen_correct', true, 'Correctness of the chosen answer.'),
  bool('rejected_correct', true, 'Correctness of the rejected answer.'),
];

export interface PairStats {
  /** Groups (episode, group, agent, prompt) with at least one rewarded turn. */
  groups: number;
  /** Groups of a single rewarded turn: nothing to compare. */
  singletonGroups: number;
  /** Groups of two or more rewarded turns that all share one reward. */
  tiedGroups: number;
  /** Rewarded turns in no pair (singletons, ties, the middle of an odd group): turns read = 2 × pairs + unpaired + unrewarded. */
  unpairedTurns: number;
  /** Turns left out because they have no reward to rank by. */
  unrewardedTurns: number;
}

export function emptyPairStats(): PairStats {
  return { groups: 0, singletonGroups: 0, tiedGroups: 0, unpairedTurns: 0, unrewardedTurns: 0 };
}

/**
 * Preference pairs of one group (turns of one agent, episode and sampling group, that read the same
 * prompt). Rule: sort by reward, highest first, ties broken by turn id (earlier first); pair the
 * i-th best with the i-th worst for i < ⌊n/2⌋ while the best is strictly higher. So a group of n
 * yields at most ⌊n/2⌋ pairs, each turn appears in at most one pair (no answer is over-weighted),
 * and equal rewards never form a pair. A binary group with 3 right and 5 wrong gives 3 pairs.
 */
export function pairsOfGroup(turns: TurnRecord[], stats: PairStats): [TurnRecord, TurnRecord][] {
  const rewarded = turns.filter((t) => t.reward !== null);
  stats.unrewardedTurns += turns.length - rewarded.length;
  if (rewarded.length === 0) return [];
  stats.groups++;
  if (rewarded.length === 1) {
    stats.singletonGroups++;
    stats.unpairedTurns++;
    return [];
  }
  const sorted = rewarded.slice().sort((a, b) => (b.reward as number) - (a.reward as number) || a.id - b.id);
  const pairs: [TurnRecord, TurnRecord][] = [];
  for (let i = 0, j = sorted.length - 1; i < j; i++, j--) {
    // The gap between the i-th best and the i-th worst only shrinks as i grows: stop at the first tie.
    if ((sorted[i].reward as number) <= (sorted[j].reward as number)) break;
    pairs.push([sorted[i], sorted[j]]);
  }
  if (pairs.length === 0) stats.tiedGroups++;
  stats.unpairedTurns += sorted.length - 2 * pairs.length;
  return pairs;
}

export function pairRow(chosen: TurnRecord, rejected: TurnRecord, system: boolean): Row {
  return {
    prompt: promptMessages(chosen.agent, chosen.prompt, system),
    chosen: [{ role: 'assistant', content: chosen.text }],
    rejected: [{ role: 'assistant', content: rejected.text }],
    agent: chosen.agent,
    role: splitAgent(chosen.agent).role,
    run_id: chosen.run_id,
    episode_id: chosen.episode_id,
    group_id: chosen.group_id,
    step: chosen.step,
    ...attemptOf(chosen),
    split: chosen.split,
    problem_key: chosen.problem_key,
    chosen_turn_id: chosen.id,
    rejected_turn_id: rejected.id,
    chosen_reward: chosen.reward,
    rejected_reward: rejected.reward,
    chosen_correct: toBool(chosen.correct),
    rejected_correct: toBool(rejected.correct),
  };
}

// ── verl ───────────────────────────────────────────────────────────────────────────────────────

/**
 * veRL's `ability` is a coarse category used for bookkeeping, not for scoring. Arithmetic
 * families are math; sorting is algorithmic; a user's own JSONL problems are general reasoning.
 */
export function abilityOf(family: string): string {
  switch (family) {
    case 'addition':
    case 'countdown':
    case 'factor':
      return 'math';
    case 'sort':
      return 'algorithmic';
    default:
      return 'reasoning';
  }
}

export const VERL_COLUMNS: ColumnSpec[] = [
  str('data_source', false, 'marsrl/<task family>: veRL selects the reward function by it (register a custom_reward_function for it; answers end with A:<answer>).'),
  messages('prompt', 'What the Solver read, as chat messages: [system (output format, unless disabled), user].'),
  str('ability', false, 'Coarse category: math (addition, countdown, factor), algorithmic (sort), reasoning (other).'),
  struct('reward_model', [str('style', false, 'always "rule": a checker compares the answer to the reference'), str('ground_truth', false, 'reference answer')], 'How veRL scores a response.'),
  struct(
    'extra_info',
    [
      str('split', false, 'train or test'),
      i64('index', false, 'row index in this file, from 0'),
      i64('run_id', false, 'source run id'),
      i64('problem_id', false, 'problem id in the store'),
      str('problem_key', false, 'problem key within the run'),
      str('family', false, 'task family'),
      str('question', false, 'the problem statement'),
    ],
    'Provenance, passed through to the reward function.',
  ),
];

export function verlRow(p: ProblemRecord, index: number, system: boolean): Row {
  return {
    data_source: `marsrl/${p.family}`,
    prompt: promptMessages('solver', p.solver_prompt ?? p.question, system),
    ability: abilityOf(p.family),
    reward_model: { style: 'rule', ground_truth: p.answer },
    extra_info: { split: p.split, index, run_id: p.run_id, problem_id: p.id, problem_key: p.problem_key, family: p.family, question: p.question },
  };
}

export const COLUMNS: Record<ExportFormat, ColumnSpec[]> = {
  trajectories: TRAJECTORY_COLUMNS,
  sft: SFT_COLUMNS,
  pairs: PAIR_COLUMNS,
  verl: VERL_COLUMNS,
};

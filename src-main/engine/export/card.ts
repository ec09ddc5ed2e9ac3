/**
 * The dataset card written beside every export as `<out>.card.md`: a Markdown file whose YAML
 * front matter carries the machine-readable facts (format, counts, filters, runs with a config
 * digest), followed by the same for people, the schema, how to load it, and each run's full
 * config snapshot. Beside the file rather than a shared README.md, because several exports often
 * go to one folder.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import YAML from 'yaml';
import type { RunRow } from '../store/types';
import type { PairStats } from './formats';
import type { ExportContainer, ExportFormat, ResolvedFilters } from './options';
import type { ColumnSpec } from './schema';

/** What an export read and wrote: the card's counts, and the same in the export's result. */
export interface CardCounts {
  /** Rows written. */
  rows: number;
  /** Source rows read after filters: turns, or problems for veRL. */
  sourceRows: number;
  sourceUnit: 'turns' | 'problems';
  duplicatesDropped: number;
  byRun: Record<string, number>;
  byAgent: Record<string, number>;
  bySplit: Record<string, number>;
  /** Pairs only: how the turns read were used. */
  pairs?: PairStats & { pairs: number };
  /** Pairs only: filtered turns outside any episode (no group to compare in). */
  turnsWithoutEpisode?: number;
}

export interface CardInput {
  format: ExportFormat;
  container: ExportContainer;
  out: string;
  createdAt: Date;
  codeVersion: string;
  runs: RunRow[];
  filters: ResolvedFilters;
  dedupe: boolean;
  systemPrompt: boolean;
  counts: CardCounts;
  bytes: number;
  seconds: number;
  columns: ColumnSpec[];
  rowGroupRows: number;
}

const DESCRIPTIONS: Record<ExportFormat, string> = {
  trajectories:
    'Trajectory table: one row per turn (one agent sample) with its run, step, episode, problem, split, agent, policy, round, group and parent ids, prompt, text, parsed answer or verdict, correctness, format validity, reward and components, advantage with its mode, μ, σ and weight, token count and policy versions. `parent_turn_id` and `group_id` rebuild each episode tree (Solver → Verifier1 → Corrector1 → …).',
  sft:
    'Supervised fine-tuning set: one row per turn that passed the filters, as chat messages (system: role instructions, user: what the agent read, assistant: what it wrote), with the agent and source ids. Train one model per agent by filtering on `agent` or `role`.',
  pairs:
    'Preference pairs (DPO/TRL conversational format: prompt, chosen, rejected). Turns are grouped by (run, episode, sampling group, agent, prompt); within a group, turns are sorted by reward (highest first, ties by turn id) and the i-th best is paired with the i-th worst while its reward is strictly higher. A group of n gives at most ⌊n/2⌋ pairs, each turn is in at most one pair, equal rewards never pair, and turns without a reward are not ranked.',
  verl:
    'veRL RL dataset: one row per problem that at least one selected turn worked on (episodes of the same problem collapse to one row), with `prompt` as the chat messages the Solver read, `reward_model {style: rule, ground_truth}` and `extra_info {split, index, run_id, problem_id, problem_key, family, question}`. `data_source` is `marsrl/<family>`: point veRL’s `custom_reward_function` at a checker for answers ending in `A:<answer>`.',
};

/** JSON with object keys sorted, so equal configs always hash the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .sort()
      .filter((k) => obj[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export function configDigest(config: Record<string, unknown>): string {
  return `sha256:${crypto.createHash('sha256').update(canonicalJson(config)).digest('hex')}`;
}

function get(obj: unknown, dotted: string): unknown {
  let at: unknown = obj;
  for (const key of dotted.split('.')) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

const KEY_FIELDS = [
  'task.family',
  'task.difficulty',
  'reward.scheme',
  'reward.format_penalty',
  'advantage.mode',
  'advantage.std',
  'advantage.single_sample',
  'rollout.solver_group',
  'rollout.select_k',
  'rollout.verifier_group',
  'rollout.corrector_group',
  'rollout.selection',
  'rollout.rounds',
  'pipeline.mode',
  'optimization.steps',
];

/** The config fields that decide what the data means; absent ones are left out. */
export function keyConfigFields(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of KEY_FIELDS) {
    const value = get(config, field);
    if (value !== undefined) out[field] = value;
  }
  return out;
}

function filterSummary(f: ResolvedFilters): Record<string, unknown> {
  return {
    agents: f.agents ?? 'all',
    steps: f.stepFrom === null && f.stepTo === null ? 'all' : `${f.stepFrom ?? 'first'}..${f.stepTo ?? 'last'} (inclusive)`,
    split: f.split ?? 'all',
    correct: f.correct,
    format_valid: f.formatValid,
    reward: f.minReward === null && f.maxReward === null ? 'any' : `${f.minReward ?? '-inf'}..${f.maxReward ?? '+inf'} (inclusive; unrewarded turns excluded)`,
    attempts: f.includeSuperseded ? 'all, including superseded attempts of steps a resume redid' : 'live attempt only',
  };
}

function loadSnippet(file: string, container: ExportContainer): string {
  const name = path.basename(file);
  if (container === 'parquet') {
    return ['```python', 'import pandas as pd', `df = pd.read_parquet("${name}")`, '# or: import duckdb; duckdb.sql("SELECT * FROM \'' + name + '\'")', '# or: datasets.load_dataset("parquet", data_files="' + name + '")', '```'].join('\n');
  }
  return ['```python', 'import pandas as pd', `df = pd.read_json("${name}", lines=True)`, '# or: import duckdb; duckdb.sql("SELECT * FROM read_json(\'' + name + '\')")', '# or: datasets.load_dataset("json", data_files="' + name + '")', '```'].join('\n');
}

function countTable(title: string, counts: Record<string, number>): string[] {
  const keys = Object.keys(counts).sort();
  if (keys.length === 0) return [];
  return [`${title}:`, '', '| | rows |', '|---|---:|', ...keys.map((k) => `| ${k} | ${counts[k]} |`), ''];
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderCard(input: CardInput): string {
  const file = path.basename(input.out);
  const runs = input.runs.map((run) => ({
    id: run.id,
    name: run.name,
    status: run.status,
    preset: run.preset,
    seed: run.seed,
    code_version: run.codeVersion,
    config_digest: configDigest(run.config),
    config: keyConfigFields(run.config),
  }));
  const front = {
    marsrl_export: {
      file,
      format: input.format,
      container: input.container,
      created_at: input.createdAt.toISOString(),
      exported_by: `MarsRL Studio ${input.codeVersion}`,
      rows: input.counts.rows,
      source_rows: input.counts.sourceRows,
      source_unit: input.counts.sourceUnit,
      duplicates_dropped: input.counts.duplicatesDropped,
      dedupe: input.dedupe,
      system_prompt: input.systemPrompt,
      filters: filterSummary(input.filters),
      runs,
      counts: {
        by_run: input.counts.byRun,
        by_agent: input.counts.byAgent,
        by_split: input.counts.bySplit,
        ...(input.counts.pairs ? { pairs: Object.fromEntries(Object.entries(input.counts.pairs).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v])) } : {}),
        ...(input.counts.turnsWithoutEpisode !== undefined ? { turns_without_episode: input.counts.turnsWithoutEpisode } : {}),
      },
      bytes: input.bytes,
      seconds: Number(input.seconds.toFixed(3)),
    },
  };

  const lines: string[] = [
    '---',
    YAML.stringify(front, { lineWidth: 0 }).trimEnd(),
    '---',
    '',
    `# ${file}`,
    '',
    DESCRIPTIONS[input.format],
    '',
    `Written by MarsRL Studio ${input.codeVersion} on ${input.createdAt.toISOString()} as ${input.container === 'parquet' ? `Parquet (Snappy, row groups of up to ${input.rowGroupRows} rows)` : 'JSONL (one JSON object per line, UTF-8)'}.`,
    '',
    '## Source runs',
    '',
    '| id | name | status | preset | seed | code version | config digest | key config |',
    '|---:|---|---|---|---:|---|---|---|',
    ...runs.map((r) => `| ${r.id} | ${cell(r.name)} | ${r.status} | ${r.preset ?? ''} | ${r.seed} | ${cell(r.code_version)} | \`${r.config_digest.slice(0, 19)}…\` | ${cell(Object.entries(r.config).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(', '))} |`),
    '',
    'Each run’s full configuration snapshot is at the end of this card; the digest is the SHA-256 of its canonical JSON (sorted keys).',
    '',
    '## Filters',
    '',
    ...Object.entries(filterSummary(input.filters)).map(([k, v]) => `- ${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`),
    `- duplicates removed: ${input.dedupe ? 'yes' : 'no'}`,
    `- system message in prompts: ${input.systemPrompt ? 'yes' : 'no'}`,
    '',
    '## Counts',
    '',
    `- rows written: ${input.counts.rows}`,
    `- source ${input.counts.sourceUnit} read (after filters): ${input.counts.sourceRows}`,
    `- duplicates dropped: ${input.counts.duplicatesDropped}`,
  ];
  if (input.counts.pairs) {
    for (const [k, v] of Object.entries(input.counts.pairs)) lines.push(`- ${k.replace(/([A-Z])/g, ' $1').toLowerCase()}: ${v}`);
  }
  if (input.counts.turnsWithoutEpisode !== undefined) lines.push(`- turns without an episode (no group, not paired): ${input.counts.turnsWithoutEpisode}`);
  lines.push('', ...countTable('By run', input.counts.byRun), ...countTable('By agent', input.counts.byAgent), ...countTable('By split', input.counts.bySplit));
  lines.push(
    '## Schema',
    '',
    '| column | type | nullable | description |',
    '|---|---|---|---|',
    ...input.columns.map((c) => `| \`${c.name}\` | ${cell(c.type)} | ${c.nullable ? 'yes' : 'no'} | ${cell(c.description)} |`),
    '',
    '## Loading',
    '',
    loadSnippet(input.out, input.container),
    '',
    '## Config snapshots',
    '',
  );
  for (const run of input.runs) {
    lines.push(`<details><summary>Run ${run.id}: ${run.name}</summary>`, '', '```json', JSON.stringify(run.config, null, 2), '```', '', '</details>', '');
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Every format in both containers, read back with DuckDB and compared with what the store holds
 * (queried here with plain SQL, not through the exporter's queries).
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { describe, expect, it } from 'vitest';
import { pairsOfGroup, runExport, type ExportOptions } from '../../src-main/engine/export';
import { resolveRuns, TurnPages } from '../../src-main/engine/export/queries';
import type { TurnRecord } from '../../src-main/engine/export/queries';
import type { TurnRecord as StoredTurnRecord } from '../../src-main/engine/store';
import { emptyPairStats } from '../../src-main/engine/export/formats';
import { columnTypes, components, duck, source } from './duck';
import { exportFixture } from '../helpers/seed';

const fx = exportFixture('marsrl-export-');

const CONTAINERS = ['jsonl', 'parquet'] as const;
let fileCounter = 0;

async function exportTo(options: Omit<ExportOptions, 'out'>, ext?: string) {
  const out = path.join(fx.dir, `out-${++fileCounter}.${ext ?? options.container ?? 'data'}`);
  const result = await runExport(fx.store, { ...options, out });
  return { out, result };
}

/** A turns row as the store holds it, with what this file's own SQL joins to it. */
interface StoreTurn extends StoredTurnRecord {
  run_name: string;
  split: string | null;
  problem_id: number | null;
  problem_key: string | null;
  episode_correct: number | null;
  reward: number | null;
  components_json: string | null;
  scheme: string | null;
  advantage: number | null;
  mode: string | null;
  group_key: string | null;
  mu: number | null;
  sigma: number | null;
}

/** What the store holds for these runs, in export order (runs as given, then turn id). */
function storeTurns(runIds: number[], where = '1 = 1'): StoreTurn[] {
  const rows: StoreTurn[] = [];
  for (const runId of runIds) {
    rows.push(
      ...(fx.store.db
        .prepare(
          `SELECT t.*, runs.name AS run_name, e.split, e.problem_id, p.problem_key, e.correct AS episode_correct,
             r.value AS reward, r.components_json, r.scheme, a.value AS advantage, a.mode, a.group_key, a.mu, a.sigma
           FROM turns t JOIN runs ON runs.id = t.run_id LEFT JOIN episodes e ON e.id = t.episode_id
           LEFT JOIN problems p ON p.id = e.problem_id LEFT JOIN rewards r ON r.turn_id = t.id LEFT JOIN advantages a ON a.turn_id = t.id
           WHERE t.run_id = ? AND (${where}) ORDER BY t.id`,
        )
        .all(runId) as StoreTurn[]),
    );
  }
  return rows;
}

const bool = (v: number | null) => (v === null ? null : v !== 0);

describe.each(CONTAINERS)('trajectories as %s', (container) => {
  it('has one row per turn, in order, with every field equal to the store', async () => {
    const { out, result } = await exportTo({ runs: ['alpha', fx.runs.beta], format: 'trajectories', container });
    const expected = storeTurns([fx.runs.alpha, fx.runs.beta]);
    expect(expected.length).toBeGreaterThan(200);
    const rows = await duck(`SELECT * FROM ${source(out, container)}`);
    expect(rows.length).toBe(expected.length);
    expect(result.rows).toBe(expected.length);
    expect(rows.map((r) => r.turn_id)).toEqual(expected.map((t) => t.id));
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      const t = expected[i];
      expect(row).toMatchObject({
        run_id: t.run_id,
        run_name: t.run_name,
        step: t.step,
        episode_id: t.episode_id,
        problem_id: t.problem_id,
        problem_key: t.problem_key,
        split: t.split,
        agent: t.agent,
        role: t.agent.replace(/\d+$/, ''),
        policy_id: t.policy_id,
        round: t.round,
        group_id: t.group_id,
        parent_turn_id: t.parent_turn_id,
        sample_index: t.sample_index,
        prompt: t.prompt,
        text: t.text,
        parsed: t.parsed,
        correct: bool(t.correct),
        format_valid: t.format_valid !== 0,
        episode_correct: bool(t.episode_correct),
        reward: t.reward,
        reward_scheme: t.scheme,
        advantage: t.advantage,
        advantage_mode: t.mode,
        advantage_group_key: t.group_key,
        advantage_mu: t.mu,
        advantage_sigma: t.sigma,
        token_count: t.token_count,
        policy_version_min: t.policy_version_min,
        policy_version_max: t.policy_version_max,
        created_at_ms: t.created_at,
      });
      expect(components(row.reward_components)).toEqual(t.components_json === null ? null : JSON.parse(t.components_json));
    }
    // The fixture's awkward cases made it through.
    expect(rows.some((r) => r.episode_id === null)).toBe(true);
    expect(rows.some((r) => r.reward === null)).toBe(true);
    expect(rows.some((r) => r.correct === null)).toBe(true);
    expect(rows.some((r) => typeof r.text === 'string' && r.text.includes('\n') && r.text.includes('"'))).toBe(true);
    expect(rows.some((r) => components(r.reward_components)?.format_penalty === -0.5)).toBe(true);
  });
});

it('types trajectory Parquet columns for analysis tools (nested map, 64-bit ids, nullable booleans)', async () => {
  const { out } = await exportTo({ runs: ['alpha'], format: 'trajectories', container: 'parquet' });
  const types = await columnTypes(out, 'parquet');
  expect(types).toMatchObject({
    turn_id: 'BIGINT',
    parent_turn_id: 'BIGINT',
    step: 'INTEGER',
    correct: 'BOOLEAN',
    reward: 'DOUBLE',
    reward_components: 'MAP(VARCHAR, DOUBLE)',
    prompt: 'VARCHAR',
  });
  // The episode tree rebuilds from the file alone: every parent is a turn of the same episode.
  const orphans = await duck(`SELECT c.turn_id FROM ${source(out, 'parquet')} c LEFT JOIN ${source(out, 'parquet')} p
    ON p.turn_id = c.parent_turn_id AND p.episode_id = c.episode_id WHERE c.parent_turn_id IS NOT NULL AND p.turn_id IS NULL`);
  expect(orphans).toEqual([]);
});

describe.each(CONTAINERS)('sft as %s', (container) => {
  it('keeps correct, format-valid turns by default, as system/user/assistant messages', async () => {
    const { out, result } = await exportTo({ runs: [fx.runs.alpha, 'beta'], format: 'sft', container });
    const expected = storeTurns([fx.runs.alpha, fx.runs.beta], 't.correct = 1 AND t.format_valid = 1');
    const all = storeTurns([fx.runs.alpha, fx.runs.beta]);
    expect(expected.length).toBeGreaterThan(20);
    expect(expected.length).toBeLessThan(all.length);
    const rows = await duck(`SELECT * FROM ${source(out, container)}`);
    expect(rows.length).toBe(expected.length);
    expect(result.rows).toBe(expected.length);
    for (let i = 0; i < rows.length; i++) {
      const t = expected[i];
      const messages = rows[i].messages as { role: string; content: string }[];
      expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
      expect(messages[0].content.toLowerCase()).toContain(t.agent.replace(/\d+$/, ''));
      expect(messages[1].content).toBe(t.prompt);
      expect(messages[2].content).toBe(t.text);
      expect(rows[i]).toMatchObject({ agent: t.agent, turn_id: t.id, run_id: t.run_id, episode_id: t.episode_id, step: t.step, split: t.split, correct: true, format_valid: true, reward: t.reward });
    }
  });
});

it('sft without a system message, and with every turn when asked', async () => {
  const { out } = await exportTo({ runs: ['alpha'], format: 'sft', container: 'jsonl', systemPrompt: false, filters: { correct: 'any', formatValid: 'any', agents: ['verifier1'] } });
  const expected = storeTurns([fx.runs.alpha], "t.agent = 'verifier1'");
  const rows = await duck(`SELECT messages FROM ${source(out, 'jsonl')}`);
  expect(rows.length).toBe(expected.length);
  expect(rows.map((r) => (r.messages as { role: string }[]).map((m) => m.role).join(','))).toEqual(expected.map(() => 'user,assistant'));
});

/** The documented pair rule, restated over plain SQL rows. */
function expectedPairs(turns: StoreTurn[]): [number, number][] {
  const groups = new Map<string, StoreTurn[]>();
  for (const t of turns) {
    if (t.episode_id === null || t.reward === null) continue;
    const key = JSON.stringify([t.run_id, t.episode_id, t.group_id, t.agent, t.prompt]);
    groups.set(key, [...(groups.get(key) ?? []), t]);
  }
  const pairs: [number, number][] = [];
  for (const group of groups.values()) {
    const sorted = group.sort((a, b) => (b.reward as number) - (a.reward as number) || a.id - b.id);
    for (let i = 0; i < Math.floor(sorted.length / 2); i++) {
      const [hi, lo] = [sorted[i], sorted[sorted.length - 1 - i]];
      if ((hi.reward as number) > (lo.reward as number)) pairs.push([hi.id, lo.id]);
      else break;
    }
  }
  return pairs;
}

describe.each(CONTAINERS)('pairs as %s', (container) => {
  it('pairs higher- with lower-reward turns of one group and agent, each turn at most once, never on a tie', async () => {
    const { out, result } = await exportTo({ runs: ['alpha', 'beta'], format: 'pairs', container });
    const turns = storeTurns([fx.runs.alpha, fx.runs.beta]);
    const byId = new Map(turns.map((t) => [t.id, t]));
    const expected = expectedPairs(turns);
    expect(expected.length).toBeGreaterThan(20);
    const rows = await duck(`SELECT * FROM ${source(out, container)}`);
    expect(rows.map((r) => [r.chosen_turn_id, r.rejected_turn_id]).sort()).toEqual(expected.slice().sort());
    const used = new Set<number>();
    for (const row of rows) {
      const chosen = byId.get(row.chosen_turn_id as number) as StoreTurn;
      const rejected = byId.get(row.rejected_turn_id as number) as StoreTurn;
      expect((chosen.reward as number) > (rejected.reward as number)).toBe(true);
      expect([chosen.episode_id, chosen.group_id, chosen.agent, chosen.prompt]).toEqual([rejected.episode_id, rejected.group_id, rejected.agent, rejected.prompt]);
      expect(used.has(chosen.id) || used.has(rejected.id)).toBe(false);
      used.add(chosen.id).add(rejected.id);
      const prompt = row.prompt as { role: string; content: string }[];
      expect(prompt.map((m) => m.role)).toEqual(['system', 'user']);
      expect(prompt[1].content).toBe(chosen.prompt);
      expect(row.chosen).toEqual([{ role: 'assistant', content: chosen.text }]);
      expect(row.rejected).toEqual([{ role: 'assistant', content: rejected.text }]);
      expect(row).toMatchObject({ agent: chosen.agent, episode_id: chosen.episode_id, group_id: chosen.group_id, chosen_reward: chosen.reward, rejected_reward: rejected.reward });
    }
    // Every turn read is accounted for: paired, unpaired (single, tied, middle) or unrewarded.
    const stats = result.pairs!;
    const inEpisodes = turns.filter((t) => t.episode_id !== null).length;
    expect(result.sourceRows).toBe(inEpisodes);
    expect(2 * stats.pairs + stats.unpairedTurns + stats.unrewardedTurns).toBe(inEpisodes);
    expect(stats.unrewardedTurns).toBe(turns.filter((t) => t.episode_id !== null && t.reward === null).length);
    expect(stats.tiedGroups).toBeGreaterThan(0);
    expect(result.turnsWithoutEpisode).toBe(1);
  });
});

describe('pairsOfGroup', () => {
  const t = (id: number, reward: number | null) => ({ id, reward }) as TurnRecord;
  const ids = (pairs: [TurnRecord, TurnRecord][]) => pairs.map(([a, b]) => [a.id, b.id]);

  it('gives ⌊n/2⌋ pairs at most, best with worst, and stops at the first tie', () => {
    const stats = emptyPairStats();
    expect(ids(pairsOfGroup([t(1, 0), t(2, 1), t(3, 0), t(4, 1), t(5, 0), t(6, 1), t(7, 0), t(8, 0)], stats))).toEqual([[2, 8], [4, 7], [6, 5]]);
    expect(ids(pairsOfGroup([t(1, 1), t(2, 0.5), t(3, 0.5), t(4, 0)], stats))).toEqual([[1, 4]]);
    expect(ids(pairsOfGroup([t(1, 1), t(2, 1)], stats))).toEqual([]);
    expect(ids(pairsOfGroup([t(1, 1)], stats))).toEqual([]);
    expect(ids(pairsOfGroup([t(1, null), t(2, 1), t(3, 0)], stats))).toEqual([[2, 3]]);
    expect(stats).toEqual({ groups: 5, singletonGroups: 1, tiedGroups: 1, unpairedTurns: 2 + 2 + 2 + 1 + 0, unrewardedTurns: 1 });
  });
});

describe.each(CONTAINERS)('verl as %s', (container) => {
  it('has one row per problem worked on, prompt from the Solver, reward_model and extra_info intact', async () => {
    const { out, result } = await exportTo({ runs: ['alpha', 'beta'], format: 'verl', container });
    const expected: { id: number; run_id: number; split: string; family: string; problem_key: string; question: string; answer: string; solver_prompt: string }[] = [];
    for (const runId of [fx.runs.alpha, fx.runs.beta]) {
      expected.push(
        ...(fx.store.db
          .prepare(
            `SELECT p.*, (SELECT t.prompt FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE e.problem_id = p.id AND t.agent = 'solver' ORDER BY t.id LIMIT 1) AS solver_prompt
             FROM problems p WHERE p.run_id = ? AND p.id IN (SELECT e.problem_id FROM episodes e JOIN turns t ON t.episode_id = e.id) ORDER BY p.id`,
          )
          .all(runId) as (typeof expected)[number][]),
      );
    }
    const stored = (fx.store.db.prepare('SELECT COUNT(*) AS n FROM problems WHERE run_id IN (?, ?)').get(fx.runs.alpha, fx.runs.beta) as { n: number }).n;
    expect(expected.length).toBeGreaterThan(10);
    expect(expected.length).toBeLessThan(stored); // some problems were never used: not exported
    const rows = await duck(`SELECT * FROM ${source(out, container)}`);
    expect(rows.length).toBe(expected.length);
    expect(result.rows).toBe(expected.length);
    rows.forEach((row, i) => {
      const p = expected[i];
      expect(row.data_source).toBe(`marsrl/${p.family}`);
      expect(row.ability).toBe(p.family === 'sort' ? 'algorithmic' : 'math');
      expect(row.prompt).toEqual([
        { role: 'system', content: expect.stringContaining('A:<answer>') },
        { role: 'user', content: p.solver_prompt },
      ]);
      expect(row.reward_model).toEqual({ style: 'rule', ground_truth: p.answer });
      expect(row.extra_info).toEqual({ split: p.split, index: i, run_id: p.run_id, problem_id: p.id, problem_key: p.problem_key, family: p.family, question: p.question });
    });
    if (container === 'parquet') {
      const types = await columnTypes(out, container);
      expect(types.prompt).toBe('STRUCT("role" VARCHAR, "content" VARCHAR)[]');
      expect(types.reward_model).toBe('STRUCT(style VARCHAR, ground_truth VARCHAR)');
      expect(types.extra_info).toMatch(/^STRUCT\(split VARCHAR, "index" BIGINT, run_id BIGINT/);
    }
  });
});

describe('filters', () => {
  const cases: [string, NonNullable<ExportOptions['filters']>, string][] = [
    ['agents', { agents: ['verifier1', 'corrector1'] }, "t.agent IN ('verifier1', 'corrector1')"],
    ['step range', { stepFrom: 1, stepTo: 3 }, 't.step BETWEEN 1 AND 3'],
    ['split', { split: 'test' }, "e.split = 'test'"],
    ['incorrect', { correct: false }, 't.correct = 0'],
    ['format-invalid', { formatValid: false }, 't.format_valid = 0'],
    ['reward range', { minReward: 0.25, maxReward: 0.75 }, 'r.value BETWEEN 0.25 AND 0.75'],
    ['combined', { agents: ['solver'], split: 'train', stepFrom: 2, minReward: 0.5 }, "t.agent = 'solver' AND e.split = 'train' AND t.step >= 2 AND r.value >= 0.5"],
  ];
  it.each(cases)('%s selects exactly the matching turns', async (_name, filters, where) => {
    const { out, result } = await exportTo({ runs: ['alpha', 'beta'], format: 'trajectories', container: 'jsonl', filters });
    const expected = storeTurns([fx.runs.alpha, fx.runs.beta], where).map((t) => t.id);
    expect(expected.length).toBeGreaterThan(0);
    const rows = await duck(`SELECT turn_id FROM ${source(out, 'jsonl')}`);
    expect(rows.map((r) => r.turn_id)).toEqual(expected);
    expect(result.sourceRows).toBe(expected.length);
  });

  it('verl keeps the problems that a filtered turn worked on (here: the Solver got it wrong)', async () => {
    const { out } = await exportTo({ runs: ['alpha'], format: 'verl', container: 'jsonl', filters: { agents: ['solver'], correct: false } });
    const expected = fx.store.db
      .prepare(`SELECT DISTINCT e.problem_id AS id FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND t.agent = 'solver' AND t.correct = 0 ORDER BY 1`)
      .all(fx.runs.alpha) as { id: number }[];
    const rows = await duck(`SELECT extra_info.problem_id AS id FROM ${source(out, 'jsonl')}`);
    expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
  });

  it('page queries walk one index in id order whatever the filters (no sort per page)', () => {
    const [alpha] = resolveRuns(fx.store, ['alpha']);
    for (const [, filters] of cases) {
      const pages = new TurnPages(fx.store.db, alpha, {
        agents: filters.agents ?? null, stepFrom: filters.stepFrom ?? null, stepTo: filters.stepTo ?? null, split: filters.split ?? null,
        correct: filters.correct ?? 'any', formatValid: filters.formatValid ?? 'any', minReward: filters.minReward ?? null, maxReward: filters.maxReward ?? null,
        includeSuperseded: false,
      });
      const { sql, params } = pages.pageQuery;
      const plan = (fx.store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail).join('\n');
      expect(plan).not.toMatch(/TEMP B-TREE/);
      expect(plan).toMatch(/SEARCH t USING INDEX turns_run|SEARCH t USING INTEGER PRIMARY KEY/);
    }
  });
});

describe('dedupe', () => {
  it('sft drops repeated (agent, prompt, text), keeping the first', async () => {
    const plain = await exportTo({ runs: ['alpha'], format: 'sft', container: 'jsonl' });
    const { out, result } = await exportTo({ runs: ['alpha'], format: 'sft', container: 'jsonl', dedupe: true });
    const expected = fx.store.db
      .prepare('SELECT MIN(id) AS id FROM turns WHERE run_id = ? AND correct = 1 AND format_valid = 1 GROUP BY agent, prompt, text ORDER BY 1')
      .all(fx.runs.alpha) as { id: number }[];
    expect(expected.length).toBeLessThan(plain.result.rows);
    const rows = await duck(`SELECT turn_id FROM ${source(out, 'jsonl')}`);
    expect(rows.map((r) => r.turn_id)).toEqual(expected.map((r) => r.id));
    expect(result.duplicatesDropped).toBe(plain.result.rows - expected.length);
  });

  it('verl collapses the same problem across runs', async () => {
    const plain = await exportTo({ runs: ['alpha', 'alpha-rerun'], format: 'verl', container: 'parquet' });
    const { out, result } = await exportTo({ runs: ['alpha', 'alpha-rerun'], format: 'verl', container: 'parquet', dedupe: true });
    const distinct = (await duck(`SELECT COUNT(*) AS n FROM (SELECT DISTINCT extra_info.split, extra_info.question, reward_model.ground_truth FROM ${source(plain.out, 'parquet')})`))[0].n as number;
    expect(distinct).toBeLessThan(plain.result.rows);
    expect(result.rows).toBe(distinct);
    expect(result.duplicatesDropped).toBe(plain.result.rows - distinct);
    const rows = await duck(`SELECT extra_info.index AS i, extra_info.run_id AS run FROM ${source(out, 'parquet')}`);
    expect(rows.map((r) => r.i)).toEqual(rows.map((_, i) => i));
    expect(rows.every((r) => r.run === fx.runs.alpha || r.run === fx.runs.rerun)).toBe(true);
  });
});

describe('dataset card', () => {
  it('records source runs with config digests, filters, counts and the schema', async () => {
    const { out, result } = await exportTo({ runs: ['alpha', 'beta'], format: 'trajectories', container: 'parquet', filters: { stepTo: 3 } });
    const card = fs.readFileSync(`${out}.card.md`, 'utf8');
    const front = YAML.parse(card.split('---\n')[1]).marsrl_export;
    expect(front).toMatchObject({ format: 'trajectories', container: 'parquet', rows: result.rows, source_rows: result.rows, file: path.basename(out) });
    expect(front.filters.steps).toMatch(/first\.\.3/);
    expect(front.runs.map((r: { id: number }) => r.id)).toEqual([fx.runs.alpha, fx.runs.beta]);
    expect(front.runs[0].config_digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(front.runs[0].config_digest).not.toBe(front.runs[1].config_digest);
    expect(front.runs[0].config['task.family']).toBe('addition');
    expect(Object.values(front.counts.by_agent as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(result.rows);
    for (const column of Object.keys(await columnTypes(out, 'parquet'))) expect(card).toContain(`| \`${column}\` |`);
    expect(card).toContain('"family": "addition"'); // the full config snapshot
  });
});

/**
 * The held-out chains a run stores for the trajectory browser (records.ts logEvalEpisodes):
 * each turn's token count is the number of tokens its policy generated, and its format flag is
 * its text's parse, as for training turns. With a byte-level BPE model (the tiny-qwen preset's
 * Qwen3 folders) a count of characters would be several times too large, and a flag fixed at
 * true would hide every reply that never reached a boxed answer or verdict line.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFormatOf } from '../../src-main/engine/agents/prompts';
import { loadRunConfig } from '../../src-main/engine/preflight';
import { initBackend } from '../../src-main/engine/model/backend';
import { sample } from '../../src-main/engine/model/sampling';
import { openStore, type Store } from '../../src-main/engine/store';
import { evaluate, type EvalContext } from '../../src-main/engine/training/evaluate';
import { createPolicy, rolePolicies, usedPolicyIds, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { evaluationSet, loadTaskData } from '../../src-main/engine/training/task-data';
import { logEvalEpisodes, ProblemIds } from '../../src-main/engine/training/records';
import { tempDir } from '../helpers/tmp';

const { config } = loadRunConfig({ preset: 'tiny-qwen', overrides: ['eval.problems=6', 'eval.k=1'] });
const policies = new Map<string, PolicyRuntime>();
let tmp: ReturnType<typeof tempDir>;
let store: Store;

beforeAll(async () => {
  await initBackend('wasm');
  tmp = tempDir('marsrl-eval-episodes-');
  store = openStore(path.join(tmp.dir, 'runs.db'));
}, 60_000);

afterAll(() => {
  for (const p of policies.values()) p.dispose();
  store?.close();
  tmp?.cleanup();
});

describe('stored held-out chains', () => {
  it('count the tokens each policy generated and keep whether the reply parsed', () => {
    const data = loadTaskData(config);
    for (const id of usedPolicyIds(config)) policies.set(id, createPolicy(id, config.policies[id], data.tokenizer, config.seed).policy);
    const ctx: EvalContext = { family: data.family, policies: rolePolicies(config, policies), config };
    const set = evaluationSet(config, data);
    const result = evaluate(ctx, set.problems, set.seed);
    const chains = result.greedyChains;
    expect(chains).toHaveLength(6);

    // The Solver's greedy replies decoded again as one batch, as evaluation decodes them: the
    // count of generated ids (its stop token included) is what each solver turn must carry.
    const solver = ctx.policies.solver;
    const { solverPrompt, parseSolution, parseVerdict } = textFormatOf(data.family);
    const prompts = chains.map((c) => solver.tokenizer.promptTokens('solver', solverPrompt(c.problem)));
    const longest = Math.max(...prompts.map((p) => p.length));
    const again = sample(solver.model, prompts, { temperature: 0, maxNewTokens: Math.min(config.rollout.max_response_tokens, solver.model.context - longest), stopTokens: [...solver.tokenizer.stopTokens] });
    chains.forEach((c, i) => {
      expect(c.steps[0].text).toBe(solver.tokenizer.responseText(again[i].tokens));
      expect(c.steps[0].tokens).toBe(again[i].tokens.length);
    });

    const runId = store.runs.create({ name: 'eval episodes', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
    const writer = store.writer();
    logEvalEpisodes(writer, new ProblemIds(store, runId), runId, 0, chains);
    writer.flush();
    const rows = store.db
      .prepare("SELECT t.agent, t.text, t.token_count AS tokens, t.format_valid AS formatValid FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND e.split = 'test' ORDER BY t.id")
      .all(runId) as { agent: string; text: string; tokens: number; formatValid: number }[];
    const steps = chains.flatMap((c) => c.steps);
    expect(rows).toHaveLength(steps.length);
    rows.forEach((row, i) => {
      expect(row.text).toBe(steps[i].text);
      expect(row.tokens).toBe(steps[i].tokens);
      const parse = row.agent.startsWith('verifier') ? parseVerdict(row.text) : parseSolution(row.text);
      expect(Boolean(row.formatValid)).toBe(parse.formatValid);
    });
    // A BPE token is several characters: the counts are not the texts' lengths.
    const chars = rows.reduce((a, r) => a + r.text.length, 0);
    const tokens = rows.reduce((a, r) => a + r.tokens, 0);
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThan(chars / 1.5);
  }, 120_000);
});

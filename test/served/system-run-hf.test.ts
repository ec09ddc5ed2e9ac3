/**
 * A reasoning-system run whose agents are Hugging Face policies served by `marsrl serve-model`
 * (the tiny-qwen preset's three Qwen3 folders): its greedy chains are the in-process evaluation's,
 * text for text (issue #16). The chat the server renders must be the one the Studio renders for
 * the same policy: these policies are trained with `enable_thinking: false`, which Qwen3's
 * template writes as an empty think block, so the call carries it as a chat-template option
 * (roles.ts callSampling); without it the served Solver answered 0.07 of these problems, not 0.30.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import { initBackend } from '../../src-main/engine/model/backend';
import { resourcesDir } from '../../src-main/engine/resources';
import { callSampling } from '../../src-main/engine/served/roles';
import { systemRun } from '../../src-main/engine/system/system-run';
import { openStore, type Store } from '../../src-main/engine/store';
import { evaluate } from '../../src-main/engine/training/evaluate';
import { expectSameMetrics, greedyEpisodes } from '../helpers/served-eval';
import { createPolicy, rolePolicies, usedPolicyIds, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { evaluationSet, loadTaskData } from '../../src-main/engine/training/task-data';
import { loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer, type ModelServer } from '../../src-main/server/openai/server';
import { tempDir } from '../helpers/tmp';

const ROLES = ['solver', 'verifier', 'corrector'] as const;
const FOLDERS = path.join(resourcesDir(), 'checkpoints', 'tiny-qwen');
const OVER = { eval: { problems: 12, k: 1 }, pipeline: { mode: 'sync' } };

let tmp: ReturnType<typeof tempDir>;
let server: ModelServer;
let store: Store;
const locals = new Map<string, PolicyRuntime>();

beforeAll(async () => {
  await initBackend('wasm');
  tmp = tempDir('marsrl-system-hf-');
  server = await createModelServer({ policies: ROLES.map((r) => loadCheckpointPolicy(path.join(FOLDERS, r))), log: () => {} });
  store = openStore(path.join(tmp.dir, 'runs.db'));
}, 60_000);

afterAll(async () => {
  for (const p of locals.values()) p.dispose();
  store?.close();
  await server?.close();
  tmp?.cleanup();
});

function servedConfig(sampling: Record<string, unknown> = {}) {
  return resolveConfig(
    deepMerge(deepMerge(presetDocument('tiny-qwen'), OVER), {
      system: { mode: 'chain', controls: false },
      endpoints: Object.fromEntries(ROLES.map((r) => [r, { base_url: server.baseUrl, model: r, concurrency: 8, sampling }])),
      policies: Object.fromEntries(ROLES.map((r) => [r, { endpoint: r }])),
    }),
  );
}

describe('a reasoning-system run of served Hugging Face policies', () => {
  it('sends each policy’s thinking setting, under the endpoint’s own chat-template options', () => {
    expect(callSampling(servedConfig(), 'solver', 0, 5).chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(callSampling(servedConfig({ chat_template_kwargs: { enable_thinking: true, custom: 1 } }), 'verifier', 0.7, 5).chat_template_kwargs).toEqual({ enable_thinking: true, custom: 1 });
    // A GPT policy has no chat template: nothing is sent for it.
    const quick = resolveConfig(deepMerge(presetDocument('quick'), { endpoints: { s: { base_url: server.baseUrl, model: 'solver' } }, policies: { solver: { endpoint: 's' } } }));
    expect(callSampling(quick, 'solver', 0, 5).chat_template_kwargs).toBeUndefined();
  });

  it('gives the in-process evaluation’s greedy chains, text for text', async () => {
    const config = servedConfig();
    const runId = store.runs.create({ name: 'served tiny-qwen', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
    store.runs.setStatus(runId, 'running');
    expect(await systemRun({ store, runId, config })).toEqual({ status: 'done', step: 0 });
    const served = store.metrics.latest(runId, store.metrics.keys(runId));

    const local = resolveConfig(deepMerge(presetDocument('tiny-qwen'), OVER));
    const data = loadTaskData(local);
    for (const id of usedPolicyIds(local)) locals.set(id, createPolicy(id, local.policies[id], data.tokenizer, local.seed).policy);
    const { problems, seed } = evaluationSet(local, data);
    const reference = evaluate({ family: data.family, policies: rolePolicies(local, locals), config: local }, problems, seed);
    expectSameMetrics(served, reference, ['eval/solver/accuracy', 'eval/system/accuracy', 'eval/verifier/recall']);
    const episodes = greedyEpisodes(store, runId, reference);
    expect(episodes).toHaveLength(12);
    for (const { turns, chain } of episodes) {
      expect(turns.map((t) => t.text)).toEqual(chain.steps.map((s) => s.text));
      // Token counts as the server reported them: the ids the local policy generated.
      expect(turns.map((t) => t.tokenCount)).toEqual(chain.steps.map((s) => s.tokens));
    }
  }, 120_000);
});

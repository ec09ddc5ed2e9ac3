/**
 * A served Verifier inside the RL rollout (issue #16, `runAgent`'s served branch): a locally
 * loaded Solver and Corrector (the quick checkpoints) and a Verifier answered by `marsrl
 * serve-model` through the pool. The rollout waits for the replies (`awaitIn`, resolved by
 * `drive`), judges them like its own turns, sends only rejections to the Corrector, and the turns
 * score like any other; `drain` refuses the served role by name.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFormatOf } from '../../src-main/engine/agents/prompts';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { initBackend } from '../../src-main/engine/model/backend';
import { poolFromConfig } from '../../src-main/engine/served/config';
import type { EndpointPool } from '../../src-main/engine/served/pool';
import { servedRole } from '../../src-main/engine/served/roles';
import { createPolicy, type PolicyRuntime } from '../../src-main/engine/training/policies';
import type { ServedRole } from '../../src-main/engine/served/roles';
import { drain, drive, rolloutSteps, type RolloutContext } from '../../src-main/engine/training/rollout';
import { loadTaskData, type TaskData } from '../../src-main/engine/training/task-data';
import { rolloutMetrics } from '../../src-main/engine/training/step-metrics';
import { scoreEpisodes } from '../../src-main/engine/training/scoring';
import { loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer, type ModelServer } from '../../src-main/server/openai/server';
import { openAiClient, QUICK_CHECKPOINTS } from '../helpers/model-server';

let server: ModelServer;
let config: RunConfig;
let data: TaskData;
let pool: EndpointPool;
const locals: PolicyRuntime[] = [];

beforeAll(async () => {
  await initBackend('wasm');
  server = await createModelServer({ policies: [loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, 'verifier'))], log: () => {} });
  config = resolveConfig(
    deepMerge(presetDocument('quick'), {
      pipeline: { mode: 'sync', segment_tokens: 4 },
      rollout: { problems_per_step: 4, solver_group: 4, select_k: 2, verifier_group: 2, corrector_group: 1, rounds: 1, selection: 'balanced' },
      endpoints: { judge: { base_url: server.baseUrl, model: 'verifier', concurrency: 4 } },
      policies: { verifier: { endpoint: 'judge' } },
    }),
  );
  data = loadTaskData(config);
  pool = poolFromConfig(config);
}, 60_000);

afterAll(async () => {
  for (const p of locals) p.dispose();
  pool?.close();
  await server?.close();
});

describe('a served Verifier in the RL rollout', () => {
  it('judges locally decoded solutions through the pool, and its turns are judged and scored like the others', async () => {
    const solver = createPolicy('solver', config.policies.solver, data.tokenizer, config.seed).policy;
    const corrector = createPolicy('corrector', config.policies.corrector, data.tokenizer, config.seed).policy;
    locals.push(solver, corrector);
    const calls: Array<{ agent: string; requests: Array<{ promptText: string; seed: number; temperature: number }>; texts: string[] }> = [];
    const role = servedRole(pool, config, 'verifier');
    const recorded: ServedRole = {
      policyId: role.policyId,
      generate: async (agent, requests) => {
        // Listed when sent (a refused computation's call still finishes later, into its own entry).
        const entry = { agent, requests: [...requests], texts: [] as string[] };
        calls.push(entry);
        const replies = await role.generate(agent, requests);
        entry.texts = replies.map((r) => r.text);
        return replies;
      },
    };
    // The served role's policy entry is never read: nothing is loaded for it.
    const ctx: RolloutContext = { family: data.family, policies: { solver, corrector, verifier: undefined as unknown as PolicyRuntime }, config, served: { verifier: recorded } };
    const problems = data.train.slice(0, 4);
    expect(() => drain(rolloutSteps(ctx, problems, 7))).toThrow(/the served verifier1 cannot complete synchronously; run this computation with drive\(\)/);
    calls.length = 0;

    const pauses: string[] = [];
    const episodes = await drive(rolloutSteps(ctx, problems, 7), (p) => void pauses.push(`${p.kind}:${p.agent}`));
    expect(calls.map((c) => c.agent)).toEqual(['verifier1']);
    // No pauses for the served agent: no weights of this process to swap or train.
    expect(pauses.filter((p) => p.endsWith('verifier1'))).toEqual([]);
    expect(pauses).toContain('agent-done:solver');

    const { parseVerdict } = textFormatOf(data.family);
    const verdicts = episodes.flatMap((e) => e.turns.filter((t) => t.role === 'verifier').map((t) => ({ e, t })));
    expect(verdicts).toHaveLength(4 * 2 * 2);
    expect(verdicts.map(({ t }) => t.text)).toEqual(calls[0].texts);
    for (const { e, t } of verdicts) {
      expect(t.policyId).toBe('verifier');
      expect(t.responseTokens).toEqual([]);
      expect(t.segments.map((s) => s.text).join('')).toBe(t.text);
      expect(t.segments.at(-1)?.finished).toBe(true);
      const parsed = parseVerdict(t.text);
      expect(t.verdict).toBe(parsed.verdict);
      expect(t.correct).toBe(parsed.verdict !== null && (parsed.verdict === 'approve') === e.turns[t.parent!].correct);
    }
    // Correctors repair only what the served Verifier rejected.
    for (const e of episodes) for (const c of e.turns.filter((t) => t.role === 'corrector')) expect(e.turns[c.parent!].verdict).toBe('reject');

    // What the pool sent is what an independent client gets for the same request (seeded).
    const client = openAiClient(server.baseUrl);
    const first = calls[0].requests[0];
    const again = await client.chat.completions.create({ model: 'verifier', messages: [{ role: 'user', content: first.promptText }], seed: first.seed, temperature: first.temperature, top_p: config.rollout.top_p, max_tokens: config.rollout.max_response_tokens });
    expect(again.choices[0].message.content).toBe(calls[0].texts[0]);

    // Its length is the server's count (usage), not a local tokenizer's: the turn has no local ids.
    expect(verdicts[0].t.servedTokens).toBe(again.usage!.completion_tokens);
    for (const { t } of verdicts) expect(t.servedTokens).toBeGreaterThan(0);

    // Rewarded like the others: a right verdict gets the Verifier's reward.
    const scored = scoreEpisodes(config, episodes);
    // The dashboard's response length of the served agent is the mean of those counts.
    const metrics = rolloutMetrics(config, episodes, scored);
    expect(metrics['verifier1/response_length']).toBeCloseTo(verdicts.reduce((a, { t }) => a + t.servedTokens!, 0) / verdicts.length, 10);
    expect(metrics['solver/response_length']).toBeCloseTo(episodes.flatMap((e) => e.turns.filter((t) => t.role === 'solver')).reduce((a, t, _, all) => a + t.responseTokens.length / all.length, 0), 10);
    episodes.forEach((e, i) => e.turns.forEach((t, j) => t.role === 'verifier' && expect(scored[i].rewards[j].value).toBe(t.correct ? config.reward.scale.verifier : 0)));
  }, 60_000);
});

/**
 * A Hugging Face policy through the seam (issue #13): its prompts are chat conversations with a
 * system message per role, its KL reference is a frozen copy rebuilt from its source, the
 * pipeline's rollout rebuilds it from the source and the flat weights, and top-k reaches the
 * sampler.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src-main/engine/preflight';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { initBackend } from '../../src-main/engine/model/backend';
import { buildPolicyModel, createPolicy, DEFAULT_SYSTEM_PROMPTS, savePolicyCheckpoint, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { responseLogProbs } from '../../src-main/engine/training/ppo';
import { decodeInSegments } from '../../src-main/engine/training/rollout';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { tempDir } from '../helpers/tmp';
import { writeTinyQwen3Model } from './hf-tiny';
import { tinyConfig } from './tiny';

const tmp = tempDir('marsrl-hf-policy-');
let modelDir = '';
let policy: PolicyRuntime;
const data = loadTaskData(tinyConfig());
const hfPolicyConfig = () => resolveConfig({ policies: { qwen: { model: { kind: 'hf', path: modelDir } } }, agents: { solver: 'qwen', verifier: 'qwen', corrector: 'qwen' } }).policies.qwen;

beforeAll(async () => {
  await initBackend('wasm');
  modelDir = writeTinyQwen3Model(path.join(tmp.dir, 'qwen3-tiny'));
  policy = createPolicy('qwen', hfPolicyConfig(), data.tokenizer, 1).policy;
});
afterAll(() => {
  policy?.dispose();
  tmp.cleanup();
});

const prompt = 'sort: 3 1 2';
const requests = [0, 1, 2].map((i) => ({ promptText: `${prompt} ${i}`, promptTokens: [] as number[], streamId: i }));

describe('a Hugging Face policy', () => {
  it('renders each role as a chat: its system message, then the prompt text as the user message', () => {
    const tok = HfTokenizer.fromFolder(modelDir);
    for (const role of ['solver', 'verifier', 'corrector'] as const) {
      const expected = tok.encode(
        tok.renderChat([{ role: 'system', content: DEFAULT_SYSTEM_PROMPTS[role] }, { role: 'user', content: prompt }], { addGenerationPrompt: true, enableThinking: false }),
        { addSpecialTokens: false },
      );
      expect(policy.tokenizer.promptTokens(role, prompt)).toEqual(expected);
    }
    const text = tok.decode(policy.tokenizer.promptTokens('verifier', prompt));
    expect(text).toContain(`<|im_start|>system\n${DEFAULT_SYSTEM_PROMPTS.verifier}<|im_end|>`);
    expect(text).toContain(`<|im_start|>user\n${prompt}<|im_end|>`);
    // Qwen3 with thinking off: the template writes an empty think block after the generation prompt.
    expect(text.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(policy.tokenizer.stopTokens).toContain(tok.tokenToId('<|im_end|>'));
    expect(policy.model.family).toBe('hf');
    expect(policy.model.context).toBe(512);
  });

  it('freezes a KL reference rebuilt from its source: same log-probs now, unmoved when the policy changes', async () => {
    const tokens = policy.tokenizer.promptTokens('solver', prompt);
    const sample = { tokens: [...tokens, 40, 41, 42], responseStart: tokens.length };
    await policy.freezeReference();
    const reference = policy.reference!;
    expect(reference).not.toBe(policy.model);
    expect(reference.getWeights()).toEqual(policy.model.getWeights());
    const before = responseLogProbs(policy.model, [sample], 1, policy.tokenizer.padId);
    expect(responseLogProbs(reference, [sample], 1, policy.tokenizer.padId)).toEqual(before);
    const saved = policy.model.getWeights();
    policy.model.setWeights(saved.map((w) => w * 0.5));
    expect(responseLogProbs(reference, [sample], 1, policy.tokenizer.padId)).toEqual(before);
    expect(responseLogProbs(policy.model, [sample], 1, policy.tokenizer.padId)).not.toEqual(before);
    policy.model.setWeights(saved);
  });

  it('is rebuilt elsewhere from its source and flat weights (the pipeline rollout), decoding the same tokens', () => {
    const withTokens = requests.map((r) => ({ ...r, promptTokens: policy.tokenizer.promptTokens('solver', r.promptText) }));
    const options = { seed: 3, temperature: 1, topP: 1, maxNewTokens: 12, segmentTokens: 4, maxSegments: 2, agent: 'solver' };
    const here = decodeInSegments(policy, withTokens, options);
    const copy = buildPolicyModel(structuredClone(policy.source));
    copy.model.setWeights(policy.model.getWeights());
    const rebuilt = createPolicy('qwen', hfPolicyConfig(), data.tokenizer, 1).policy;
    rebuilt.model.setWeights(copy.model.getWeights());
    copy.model.dispose();
    expect(decodeInSegments(rebuilt, withTokens, options).map((r) => r.responseTokens)).toEqual(here.map((r) => r.responseTokens));
    rebuilt.dispose();
  });

  it('top_k 1 samples the greedy tokens, with behaviour log-probability 0', () => {
    const withTokens = requests.map((r) => ({ ...r, promptTokens: policy.tokenizer.promptTokens('solver', r.promptText) }));
    const base = { seed: 9, topP: 1, maxNewTokens: 10, segmentTokens: 10, maxSegments: 1, agent: 'solver' };
    const greedy = decodeInSegments(policy, withTokens, { ...base, temperature: 0 });
    const topOne = decodeInSegments(policy, withTokens, { ...base, temperature: 1, topK: 1 });
    expect(topOne.map((r) => r.responseTokens)).toEqual(greedy.map((r) => r.responseTokens));
    for (const r of topOne) for (const lp of r.behaviourLogProbs) expect(lp).toBe(0);
    const sampled = decodeInSegments(policy, withTokens, { ...base, temperature: 1 });
    expect(sampled.map((r) => r.responseTokens)).not.toEqual(greedy.map((r) => r.responseTokens));
  });

  it('takes an hf checkpoint as an hf policy\'s init, and refuses one family\'s checkpoint as the other\'s, naming the field', () => {
    const gpt = createPolicy('judge', tinyConfig().policies.solver, data.tokenizer, 2).policy;
    const dir = path.join(tmp.dir, 'gpt-init');
    savePolicyCheckpoint(dir, gpt, { optimizer: null, config: null, step: 0 });
    gpt.dispose();
    expect(() => createPolicy('qwen', { ...hfPolicyConfig(), init: dir }, data.tokenizer, 1)).toThrow(/policies\.qwen\.init: .* is a checkpoint of the gpt family, but policies\.qwen\.model is kind hf/);
    // And the other way round: an hf checkpoint as a GPT policy's init.
    const hfDir = path.join(tmp.dir, 'hf-init');
    savePolicyCheckpoint(hfDir, policy, { optimizer: null, config: null, step: 0 });
    expect(() => createPolicy('judge', { ...tinyConfig().policies.solver, init: hfDir }, data.tokenizer, 1)).toThrow(/policies\.judge\.init: .* is a checkpoint of a Hugging Face model, but policies\.judge\.model is kind gpt/);
    // An hf checkpoint as an hf policy's init starts from its weights.
    const resumed = createPolicy('qwen', { ...hfPolicyConfig(), init: hfDir }, data.tokenizer, 1);
    expect(resumed.fromCheckpoint).toBe(hfDir);
    expect(resumed.policy.model.getWeights()).toEqual(policy.model.getWeights());
    expect(resumed.policy.identity).toMatchObject({ family: 'hf', path: hfDir, base: policy.identity.base });
    resumed.policy.dispose();
  });
});

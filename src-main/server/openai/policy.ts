/**
 * What `marsrl serve-model` needs from a policy (issue #16): the model behind the policy seam
 * (PolicyModel: prefill, decodeStep, selectCacheRows) and a tokenizer that, beyond the seam's
 * PolicyTokenizer, turns raw text into ids for /v1/completions, renders a chat conversation for
 * /v1/chat/completions and names each token for logprobs. A Studio GPT checkpoint is adapted
 * here, and so is the Hugging Face family (a model folder, or a Studio checkpoint of the hf
 * family): its own chat template renders the messages, as vLLM's chat endpoint does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROLES, type Role } from '#shared/agents';
import { loadCheckpoint, loadHfCheckpoint, loadLoraCheckpoint } from '../../engine/checkpoint/checkpoint';
import { CHECKPOINT_MANIFEST, readAnyCheckpointManifest, type HfPromptSettings } from '../../engine/checkpoint/manifest';
import { loadHfModel, readHfConfig } from '../../engine/hf/load';
import { HfTokenizer, hfPolicyTokenizer } from '../../engine/hf/tokenizer';
import type { ChatMessage, PolicyModel, PolicyTokenizer } from '../../engine/model/policy-model';
import { Tokenizer } from '../../engine/gpt/tokenizer';
import { AppendDecoder, type ResponseDecoder } from '../../engine/model/response-decoder';

/** Why a request cannot be turned into tokens; the server answers 400 naming `param`. */
export class PromptError extends Error {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
    this.name = 'PromptError';
  }
}

/**
 * A prompt found longer than the context before it was tokenized in full (issue #36): a 4 MB
 * prompt used to be tokenized whole on the HTTP thread before the context check refused it.
 */
export class ContextLengthError extends PromptError {
  constructor(
    readonly atLeast: number,
    param: string,
  ) {
    super(`the prompt has at least ${atLeast} tokens (counted until they passed the context)`, param);
    this.name = 'ContextLengthError';
  }
}

/** Characters a prompt is counted in at a time, once it is too long to tokenize at once cheaply. */
const COUNT_PIECE = 1 << 16;

/**
 * `encode(text)`, or ContextLengthError once `text` surely holds `limit` tokens or more, without
 * tokenizing all of it:
 * - a lower bound first, at no tokenizing cost: no token stands for more than `maxTokenChars`
 *   characters of the text;
 * - then, for a long text, its pieces of COUNT_PIECE characters cut before a space, counted one by
 *   one and stopped as soon as their sum, less one for each cut (a token the cut may have split
 *   in two), reaches `limit`. Only a text that fits is tokenized whole.
 */
export function encodeWithin(text: string, limit: number | undefined, maxTokenChars: number, encode: (piece: string) => number[], param: string): number[] {
  if (limit === undefined || text.length <= COUNT_PIECE) {
    if (limit !== undefined && Math.ceil(text.length / maxTokenChars) >= limit) throw new ContextLengthError(Math.ceil(text.length / maxTokenChars), param);
    return encode(text);
  }
  const bound = Math.ceil(text.length / maxTokenChars);
  if (bound >= limit) throw new ContextLengthError(bound, param);
  let counted = 0;
  let cuts = 0;
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + COUNT_PIECE);
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end);
      if (space > at) end = space;
    }
    counted += encode(text.slice(at, end)).length;
    at = end;
    if (at < text.length) cuts++;
    if (counted - cuts >= limit) throw new ContextLengthError(counted - cuts, param);
  }
  return encode(text);
}

export interface ServedTokenizer extends PolicyTokenizer {
  /**
   * Raw text to ids, as /v1/completions continues it (special tokens written literally count).
   * `limit`: throw ContextLengthError as soon as the text surely has that many tokens.
   */
  encodeText(text: string, limit?: number): number[];
  /**
   * A conversation rendered by the model's chat template, ending where the reply starts;
   * `templateKwargs` are the request's chat-template options (`enable_thinking`); `limit` as for
   * encodeText.
   */
  chatPrompt(messages: readonly ChatMessage[], templateKwargs?: Readonly<Record<string, unknown>>, limit?: number): number[];
  /** The text a single token stands for (its literal for special tokens), for logprobs. */
  tokenText(id: number): string;
  /** An answer's text built as its tokens are sampled, equal to `responseText` of them all (response-decoder.ts). */
  responseDecoder(): ResponseDecoder;
}

/**
 * What the HTTP side of `marsrl serve-model` needs of a policy: its name, its tokenizer (prompts
 * are rendered and checked there) and its context length. When a decode engine holds the
 * weights (engine.ts, the default on a machine with cores to spare), this is all the HTTP thread
 * loads.
 */
export interface ServedPolicyInfo {
  /** The model id clients name (`model` in requests, `id` in /v1/models). */
  id: string;
  /** Tokens a prompt and its answer may take together (max_model_len in /v1/models). */
  context: number;
  tokenizer: ServedTokenizer;
  /** Unix seconds, for /v1/models. */
  created: number;
  /** Where it was loaded from (shown at start; not sent to clients). */
  source: string;
}

/** A policy with its weights, decoded in the thread that loaded it. */
export interface ServedPolicy extends ServedPolicyInfo {
  model: PolicyModel;
}

/**
 * The Hugging Face family: prompts of the policy seam as training renders them (the role's system
 * prompt, then the user message); chat requests rendered by the model's own chat template with a
 * generation prompt, as transformers' apply_chat_template and vLLM do; completions take the text
 * as is, special tokens written in it matched as such. Replies stop at the template's end of turn.
 */
export class HfServedTokenizer implements ServedTokenizer {
  readonly vocabSize: number;
  readonly padId: number;
  readonly stopTokens: readonly number[];
  private readonly seam: PolicyTokenizer;
  private readonly longestToken: number;

  constructor(
    private readonly tokenizer: HfTokenizer,
    private readonly prompts: { systemPrompts: HfPromptSettings['systemPrompts']; enableThinking?: boolean },
  ) {
    this.seam = hfPolicyTokenizer(tokenizer, prompts.systemPrompts, { enableThinking: prompts.enableThinking });
    // At load, not on a request's path (53 ms over Qwen3's 151 669 entries).
    this.longestToken = 4 * tokenizer.longestTokenChars();
    this.vocabSize = this.seam.vocabSize;
    this.padId = this.seam.padId;
    this.stopTokens = this.seam.stopTokens;
  }

  promptTokens(role: Role, promptText: string): number[] {
    return this.seam.promptTokens(role, promptText);
  }

  targetTokens(responseText: string): number[] {
    return this.seam.targetTokens(responseText);
  }

  responseText(tokens: readonly number[]): string {
    return this.seam.responseText(tokens);
  }

  encodeText(text: string, limit?: number): number[] {
    return encodeWithin(text, limit, this.maxTokenChars(), (piece) => this.tokenizer.encode(piece, { addSpecialTokens: false }), 'prompt');
  }

  /**
   * Most characters of a prompt one token of this vocabulary stands for (computed once): its
   * longest entry, times 4 for the tokenizer's Unicode normalization, which composes up to four
   * characters into one (NFC: Greek ᾏ is Α and three combining marks).
   */
  private maxTokenChars(): number {
    return this.longestToken;
  }

  responseDecoder(): ResponseDecoder {
    return this.tokenizer.responseDecoder();
  }

  chatPrompt(messages: readonly ChatMessage[], templateKwargs: Readonly<Record<string, unknown>> = {}, limit?: number): number[] {
    const thinking = templateKwargs.enable_thinking;
    if (thinking !== undefined && typeof thinking !== 'boolean') throw new PromptError('chat_template_kwargs.enable_thinking must be true or false', 'chat_template_kwargs.enable_thinking');
    let text: string;
    try {
      text = this.tokenizer.renderChat([...messages], { addGenerationPrompt: true, enableThinking: thinking ?? this.prompts.enableThinking });
    } catch (error) {
      throw new PromptError(`messages: ${(error as Error).message}`, 'messages');
    }
    return encodeWithin(text, limit, this.maxTokenChars(), (piece) => this.tokenizer.encode(piece, { addSpecialTokens: false }), 'messages');
  }

  tokenText(id: number): string {
    return this.tokenizer.decode([id], { skipSpecialTokens: false });
  }
}

/**
 * The Studio GPT's layout (training/sequences.ts): `<bos> prompt <role>` … `<eos>`. A chat
 * conversation maps onto it as one prompt: the system and user messages joined by newlines, in
 * order; an assistant message has no place in that layout (the GPT was never trained on
 * multi-turn text), so it is refused rather than silently dropped.
 */
export class CharPolicyTokenizer implements ServedTokenizer {
  readonly vocabSize: number;
  readonly padId: number;
  readonly stopTokens: readonly number[];

  constructor(
    private readonly tokenizer: Tokenizer,
    /** The role token that closes a chat prompt (the agent this policy plays). */
    readonly role: Role,
  ) {
    this.vocabSize = tokenizer.vocabSize;
    this.padId = tokenizer.padId;
    this.stopTokens = [tokenizer.eosId];
  }

  promptTokens(role: Role, promptText: string): number[] {
    return [this.tokenizer.bosId, ...this.encodePlain(promptText, 'prompt'), this.tokenizer.roleIds[role]];
  }

  targetTokens(responseText: string): number[] {
    return [...this.tokenizer.encode(responseText, { allowSpecial: false }), this.tokenizer.eosId];
  }

  responseText(tokens: readonly number[]): string {
    return this.tokenizer.decode(tokens, { skipSpecial: true });
  }

  responseDecoder(): ResponseDecoder {
    return new AppendDecoder((id) => this.tokenizer.decode([id], { skipSpecial: true }));
  }

  encodeText(text: string, limit?: number): number[] {
    // A character a token, except the special tokens written in the text (the longest of them).
    return encodeWithin(text, limit, this.longestSpecial, (piece) => this.encode(piece, true, 'prompt'), 'prompt');
  }

  chatPrompt(messages: readonly ChatMessage[], _templateKwargs?: Readonly<Record<string, unknown>>, limit?: number): number[] {
    const assistant = messages.findIndex((m) => m.role === 'assistant');
    if (assistant >= 0) throw new PromptError(`messages[${assistant}]: this Studio GPT policy has no multi-turn chat template; send the system and user messages only`, `messages[${assistant}].role`);
    const text = messages.map((m) => m.content).join('\n');
    // Plain text: one token a character, so the length check needs no tokenizing (2 for bos and the role).
    if (limit !== undefined && text.length + 2 >= limit) throw new ContextLengthError(text.length + 2, 'messages');
    return [this.tokenizer.bosId, ...this.encodePlain(text, 'messages'), this.tokenizer.roleIds[this.role]];
  }

  private get longestSpecial(): number {
    return Math.max(1, ...this.tokenizer.specials.map((s) => s.length));
  }

  tokenText(id: number): string {
    return this.tokenizer.decode([id]);
  }

  private encodePlain(text: string, param: string): number[] {
    return this.encode(text, false, param);
  }

  private encode(text: string, allowSpecial: boolean, param: string): number[] {
    try {
      return this.tokenizer.encode(text, { allowSpecial });
    } catch (error) {
      throw new PromptError(`${param}: ${(error as Error).message}`, param);
    }
  }
}

/**
 * What both loading and describing read first: which kind of folder `dir` is, and the names the
 * server shows for it. A Studio checkpoint's manifest, or null for a Hugging Face model folder.
 * For the GPT the role (which role token closes chat prompts) is `role`, else the folder's name
 * when it is one of solver / verifier / corrector, else solver.
 */
function policyFolder(dir: string, opts: { id?: string; role?: Role }) {
  const manifestFile = path.join(dir, CHECKPOINT_MANIFEST);
  const base = path.basename(path.resolve(dir));
  const hfFolder = !fs.existsSync(manifestFile) && fs.existsSync(path.join(dir, 'config.json'));
  if (!hfFolder && !fs.existsSync(manifestFile)) throw new Error(notAPolicyFolder(dir));
  return {
    names: { id: opts.id ?? base, created: Math.floor(fs.statSync(hfFolder ? path.join(dir, 'config.json') : manifestFile).mtimeMs / 1000), source: path.resolve(dir) },
    manifest: hfFolder ? null : readAnyCheckpointManifest(dir),
    role: opts.role ?? (ROLES.includes(base as Role) ? (base as Role) : 'solver'),
  };
}

/**
 * Load a policy to serve: a Studio checkpoint folder (`checkpoint.json`) of either family (a LoRA
 * checkpoint on its base, the base loaded from where the run found it), or a Hugging Face model
 * folder (`config.json`, safetensors and tokenizer files); the Hugging Face family's chat
 * template needs no role.
 */
export function loadCheckpointPolicy(dir: string, opts: { id?: string; role?: Role } = {}): ServedPolicy {
  const { names, manifest, role } = policyFolder(dir, opts);
  if (manifest === null) {
    const loaded = loadHfModel(dir);
    return { ...names, model: loaded.model, context: loaded.model.context, tokenizer: new HfServedTokenizer(loaded.tokenizer, { systemPrompts: {} }) };
  }
  if (manifest.family === 'hf') {
    // A LoRA run's checkpoint (the tiny-qwen preset's) is adapters on a base folder: served as the
    // run decodes it, base + adapters unmerged, so its answers are the run's own.
    const loaded = manifest.lora ? loadLoraCheckpoint(dir) : loadHfCheckpoint(dir);
    loaded.optimizer?.dispose();
    // The prompts the policy was trained with (its system prompts, thinking on or off) are kept with the checkpoint.
    return { ...names, model: loaded.model, context: loaded.model.context, tokenizer: new HfServedTokenizer(loaded.tokenizer, loaded.prompts) };
  }
  const loaded = loadCheckpoint(dir);
  return { ...names, model: loaded.model, context: loaded.model.context, tokenizer: new CharPolicyTokenizer(loaded.tokenizer, role) };
}

/**
 * `loadCheckpointPolicy` without the weights: the same folders, checked the same way up to the
 * weights, giving the id, tokenizer and context the HTTP thread needs while an engine thread loads
 * the model (so a large model is read once, not once per thread).
 */
export function describeCheckpointPolicy(dir: string, opts: { id?: string; role?: Role } = {}): ServedPolicyInfo {
  const { names, manifest, role } = policyFolder(dir, opts);
  if (manifest === null) {
    return { ...names, context: readHfConfig(dir).config.maxPositions, tokenizer: new HfServedTokenizer(HfTokenizer.fromFolder(dir), { systemPrompts: {} }) };
  }
  if (manifest.family === 'hf') {
    return { ...names, context: manifest.model.config.maxPositions, tokenizer: new HfServedTokenizer(HfTokenizer.fromFolder(path.join(dir, manifest.tokenizer.dir)), manifest.tokenizer.prompts) };
  }
  return { ...names, context: manifest.model.config.context, tokenizer: new CharPolicyTokenizer(Tokenizer.fromJSON(manifest.tokenizer), role) };
}

function notAPolicyFolder(dir: string): string {
  return `${dir}: not a Studio checkpoint folder (no ${CHECKPOINT_MANIFEST}) nor a Hugging Face model folder (no config.json); give a folder made by marsrl pretrain, a run's checkpoint or a model folder`;
}

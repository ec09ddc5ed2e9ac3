/**
 * A Hugging Face tokenizer folder as the Studio uses it (issue #13): `tokenizer.json` through
 * `@huggingface/tokenizers` (the maintained JS port of the Rust crate: BPE, byte-level
 * pre-tokenisation, added/special tokens — no hand-written BPE here), the model's own
 * `chat_template` rendered with `@huggingface/jinja`, and the stop ids from
 * `generation_config.json`.
 *
 * Special-token conventions follow transformers' `apply_chat_template`: the template itself writes
 * any BOS it wants (Llama 3's starts with `{{ bos_token }}`), so a rendered conversation is encoded
 * without adding special tokens again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import type { ChatMessage, PolicyTokenizer } from '../model/policy-model';
import { WindowedDecoder, type ResponseDecoder } from '../model/response-decoder';
import { HfFormatError } from './safetensors';
import { chatMessagesOf } from '../agents/prompts';
import { FileRefusedError, LIMITS, readTextFile } from '../util/bounded-read';
import { BoundedTemplate } from './chat-template';

export const TOKENIZER_JSON = 'tokenizer.json';
export const TOKENIZER_CONFIG = 'tokenizer_config.json';
export const GENERATION_CONFIG = 'generation_config.json';
/** transformers ≥ 4.43 may keep the template in its own file instead of tokenizer_config.json. */
export const CHAT_TEMPLATE_FILE = 'chat_template.jinja';

/** The tokenizer files a model folder may carry (copied on export). */
export const TOKENIZER_FILES = [TOKENIZER_JSON, TOKENIZER_CONFIG, 'special_tokens_map.json', 'vocab.json', 'merges.txt', 'added_tokens.json', CHAT_TEMPLATE_FILE];

/**
 * A JSON file of the folder, read only if it is a regular file of bounded size (issue #36: a FIFO
 * or /dev/zero named tokenizer.json must not hang or exhaust the process).
 */
function readJson(file: string, required: boolean, maxBytes: number = LIMITS.settings): Record<string, unknown> | null {
  if (!fs.existsSync(file)) {
    if (required) throw new HfFormatError(file, null, 'file not found (a Hugging Face tokenizer folder needs tokenizer.json)');
    return null;
  }
  let value: unknown;
  let text: string;
  try {
    text = readTextFile(file, { maxBytes, what: path.basename(file) });
  } catch (error) {
    throw new HfFormatError(file, null, (error as Error).message.replace(`${file}: `, ''));
  }
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HfFormatError(file, null, `not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new HfFormatError(file, null, 'must be a JSON object');
  return value as Record<string, unknown>;
}

/** tokenizer_config.json writes special tokens as strings or as AddedToken objects `{content, …}`. */
function tokenText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') return (value as { content: string }).content;
  return null;
}

export class HfTokenizer {
  readonly vocabSize: number;
  readonly bosId: number | null;
  readonly eosIds: number[];
  readonly padId: number;
  readonly chatTemplate: string | null;
  /** Where the chat template came from, for error messages: file and key. */
  readonly chatTemplateSource: { file: string; key: string } | null;
  /** stop ids: generation_config.json eos_token_id (number or list), else tokenizer_config eos */
  readonly stopTokens: number[];
  /** tokenizer_config.json's eos_token as an id (what llama.cpp's converter writes as the GGUF eos). */
  readonly configEosId: number | null;
  /** tokenizer_config.json add_bos_token, null when absent (then tokenizer.json's post-processor decides). */
  readonly addBosTokenSetting: boolean | null;
  /** Special token texts the template may use (bos_token, eos_token, …). */
  readonly specialTokenText: Record<'bos_token' | 'eos_token' | 'pad_token' | 'unk_token', string | null>;
  readonly dir: string;
  /** tokenizer.json's parsed content (the GGUF writer copies its vocabulary and merges). */
  readonly tokenizerJson: Record<string, unknown>;

  private readonly tokenizer: Tokenizer;
  private template: BoundedTemplate | null = null;
  private readonly specialIds: Set<number>;
  /**
   * tokenizer_config.json clean_up_tokenization_spaces (a space before punctuation dropped when
   * decoding); absent means true, as in transformers 4 and @huggingface/tokenizers.
   */
  private readonly cleansUpSpaces: boolean;

  private constructor(dir: string, tokenizerJson: Record<string, unknown>, config: Record<string, unknown>, generation: Record<string, unknown> | null, template: { text: string; file: string; key: string } | null) {
    this.dir = dir;
    this.tokenizerJson = tokenizerJson;
    const tokFile = path.join(dir, TOKENIZER_JSON);
    const model = tokenizerJson.model as { vocab?: unknown } | undefined;
    if (!model || typeof model !== 'object' || model.vocab === null || typeof model.vocab !== 'object') throw new HfFormatError(tokFile, 'model.vocab', 'missing: tokenizer.json must have a model with a vocabulary');
    try {
      this.tokenizer = new Tokenizer(tokenizerJson, config);
    } catch (error) {
      throw new HfFormatError(tokFile, null, `@huggingface/tokenizers cannot build this tokenizer (${error instanceof Error ? error.message : String(error)})`);
    }
    let size = 0;
    for (const id of this.tokenizer.get_vocab(true).values()) size = Math.max(size, id + 1);
    this.vocabSize = size;
    const cleanup = config.clean_up_tokenization_spaces;
    this.cleansUpSpaces = cleanup === undefined || cleanup === null ? true : cleanup === true;
    this.specialIds = new Set([...this.tokenizer.get_added_tokens_decoder()].filter(([, t]) => t.special).map(([id]) => id));

    const cfgFile = path.join(dir, TOKENIZER_CONFIG);
    const idOf = (key: string): number | null => {
      const text = tokenText(config[key]);
      if (text === null) return null;
      const id = this.tokenizer.token_to_id(text);
      if (id === undefined) throw new HfFormatError(cfgFile, key, `token ${JSON.stringify(text)} is not in ${TOKENIZER_JSON}'s vocabulary`);
      return id;
    };
    this.specialTokenText = {
      bos_token: tokenText(config.bos_token),
      eos_token: tokenText(config.eos_token),
      pad_token: tokenText(config.pad_token),
      unk_token: tokenText(config.unk_token),
    };
    this.bosId = idOf('bos_token');
    this.addBosTokenSetting = typeof config.add_bos_token === 'boolean' ? config.add_bos_token : null;
    const eosFromConfig = idOf('eos_token');
    this.configEosId = eosFromConfig;

    const genFile = path.join(dir, GENERATION_CONFIG);
    const ids = (key: string): number[] | null => {
      const v = generation?.[key];
      if (v === undefined || v === null) return null;
      const list = Array.isArray(v) ? v : [v];
      for (const id of list) {
        if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= size) throw new HfFormatError(genFile, key, `${JSON.stringify(id)} is not a token id of this ${size}-token vocabulary`);
      }
      return list as number[];
    };
    const eosFromGeneration = ids('eos_token_id');
    this.eosIds = eosFromGeneration ?? (eosFromConfig === null ? [] : [eosFromConfig]);
    this.stopTokens = [...new Set([...this.eosIds])];
    const padFromGeneration = ids('pad_token_id');
    this.padId = idOf('pad_token') ?? padFromGeneration?.[0] ?? this.eosIds[0] ?? 0;

    this.chatTemplate = template?.text ?? null;
    this.chatTemplateSource = template ? { file: template.file, key: template.key } : null;
  }

  /** tokenizer.json + tokenizer_config.json (+ generation_config.json, chat_template.jinja) of a folder. */
  static fromFolder(dir: string): HfTokenizer {
    const tokenizerJson = readJson(path.join(dir, TOKENIZER_JSON), true, LIMITS.tokenizer)!;
    const cfgFile = path.join(dir, TOKENIZER_CONFIG);
    const config = readJson(cfgFile, false) ?? {};
    const generation = readJson(path.join(dir, GENERATION_CONFIG), false);
    let template: { text: string; file: string; key: string } | null = null;
    const raw = config.chat_template;
    if (typeof raw === 'string') template = { text: raw, file: cfgFile, key: 'chat_template' };
    else if (Array.isArray(raw)) {
      // The list form [{name, template}]: transformers uses the one named "default".
      const index = raw.findIndex((t) => (t as { name?: unknown } | null)?.name === 'default');
      const entry = raw[index] as { template?: unknown } | undefined;
      if (!entry || typeof entry.template !== 'string') throw new HfFormatError(cfgFile, 'chat_template', 'a list of templates must contain one named "default" with a string template');
      template = { text: entry.template, file: cfgFile, key: `chat_template[${index}].template` };
    } else if (raw !== undefined && raw !== null) throw new HfFormatError(cfgFile, 'chat_template', `must be a string or a list of {name, template}, got ${typeof raw}`);
    const jinjaFile = path.join(dir, CHAT_TEMPLATE_FILE);
    if (!template && fs.existsSync(jinjaFile)) {
      try {
        template = { text: readTextFile(jinjaFile, { maxBytes: LIMITS.template, what: 'chat template' }), file: jinjaFile, key: 'template' };
      } catch (error) {
        throw new HfFormatError(jinjaFile, null, error instanceof FileRefusedError ? error.message.replace(`${jinjaFile}: `, '') : String(error));
      }
    }
    if (template && template.text.length > LIMITS.template) throw new HfFormatError(template.file, template.key, `the chat template is ${template.text.length} characters, over the ${LIMITS.template} a template may have`);
    return new HfTokenizer(dir, tokenizerJson, config, generation, template);
  }

  /** Token ids of `text`; special tokens written in the text are matched as such (as in transformers). */
  encode(text: string, opts: { addSpecialTokens?: boolean } = {}): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: opts.addSpecialTokens ?? true }).ids;
  }

  decode(ids: readonly number[], opts: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return '';
    return this.tokenizer.decode([...ids], { skip_special_tokens: opts.skipSpecialTokens ?? false, clean_up_tokenization_spaces: this.cleansUpSpaces });
  }

  /**
   * An answer's text token by token, equal to `decode(ids, { skipSpecialTokens: true })` of the
   * whole answer (response-decoder.ts): the decoder's output in short windows, the config's
   * space clean-up applied on top.
   */
  responseDecoder(): ResponseDecoder {
    return new WindowedDecoder((ids) => (ids.length === 0 ? '' : this.tokenizer.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false })), this.cleansUpSpaces);
  }

  /**
   * The most characters of text one token can stand for: its vocabulary's longest entry decoded
   * (a byte-level "Ġ" is one character of text), added tokens included. A text of n characters
   * has at least n / this many tokens, whatever it says (serve-model's length check, issue #36).
   */
  longestTokenChars(): number {
    let longest = 1;
    for (const [token, id] of this.tokenizer.get_vocab(true)) {
      // Decoding each entry would cost seconds on 150k tokens: its own length bounds what it
      // decodes to, except byte-fallback entries (<0x41>, one byte each) and byte-level ones.
      if (token.length > longest) longest = Math.max(longest, this.decode([id]).length);
    }
    return longest;
  }

  /** The token text of one id (undefined for ids outside the vocabulary). */
  idToToken(id: number): string | undefined {
    return this.tokenizer.id_to_token(id);
  }

  tokenToId(token: string): number | undefined {
    return this.tokenizer.token_to_id(token);
  }

  /** Added tokens by id (special or not), as tokenizer.json lists them. */
  addedTokens(): Map<number, { content: string; special: boolean }> {
    return new Map([...this.tokenizer.get_added_tokens_decoder()].map(([id, t]) => [id, { content: t.content, special: t.special }]));
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** Render a conversation with the model's chat template (transformers' apply_chat_template variables). */
  renderChat(messages: ChatMessage[], opts: { addGenerationPrompt?: boolean; enableThinking?: boolean } = {}): string {
    const source = this.chatTemplateSource;
    if (this.chatTemplate === null || !source) throw new HfFormatError(path.join(this.dir, TOKENIZER_CONFIG), 'chat_template', 'this tokenizer has no chat template (a base model?); give prompts as plain text or ids instead');
    if (!this.template) {
      try {
        this.template = new BoundedTemplate(this.chatTemplate);
      } catch (error) {
        throw new HfFormatError(source.file, source.key, `chat template does not parse (${error instanceof Error ? error.message : String(error)})`);
      }
    }
    const vars: Record<string, unknown> = {
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      ...this.specialTokenText,
    };
    // Qwen3 tests `enable_thinking is defined`: leave it undefined unless asked.
    if (opts.enableThinking !== undefined) vars.enable_thinking = opts.enableThinking;
    try {
      return this.template.render(vars);
    } catch (error) {
      throw new HfFormatError(source.file, source.key, `chat template failed to render (${error instanceof Error ? error.message : String(error)})`);
    }
  }

  /**
   * Render a short sample conversation (user, assistant, user: what every chat template accepts —
   * some refuse a system role) and throw the template's error, if any (inspect, loading).
   */
  checkChatTemplate(): void {
    this.renderChat([{ role: 'user', content: 'U' }, { role: 'assistant', content: 'A' }, { role: 'user', content: 'U2' }], { addGenerationPrompt: true });
  }

  /**
   * The id the template writes after an assistant message (`<|im_end|>` for Qwen,
   * `<|eot_id|>` for Llama 3 instruct): the target a supervised response ends with. Falls back to
   * the first stop id when the template has no assistant turn marker among the stop ids.
   */
  endOfTurnId(): number {
    if (this.chatTemplate !== null) {
      const marker = 'MARSRL_END_OF_TURN_PROBE';
      const text = this.renderChat([{ role: 'user', content: 'q' }, { role: 'assistant', content: marker }], { addGenerationPrompt: false });
      const at = text.lastIndexOf(marker);
      if (at >= 0) {
        const after = this.encode(text.slice(at + marker.length), { addSpecialTokens: false });
        const stop = after.find((id) => this.stopTokens.includes(id) || this.specialIds.has(id));
        if (stop !== undefined) return stop;
      }
    }
    if (this.stopTokens.length === 0) throw new HfFormatError(path.join(this.dir, GENERATION_CONFIG), 'eos_token_id', 'no stop token: set eos_token_id in generation_config.json or eos_token in tokenizer_config.json');
    return this.stopTokens[0];
  }
}

/** A role's prompt = [system message of that role (if any), user message = promptText], rendered with addGenerationPrompt. */
export function hfPolicyTokenizer(tok: HfTokenizer, systemPrompts: Partial<Record<'solver' | 'verifier' | 'corrector', string>>, opts: { enableThinking?: boolean } = {}): PolicyTokenizer {
  const endOfTurn = tok.endOfTurnId();
  const stopTokens = tok.stopTokens.includes(endOfTurn) ? tok.stopTokens : [...tok.stopTokens, endOfTurn];
  return {
    vocabSize: tok.vocabSize,
    padId: tok.padId,
    stopTokens,
    promptTokens(role, promptText) {
      // A templated prompt (the math family) brings its own system and user messages; the
      // character tasks' text gets the role's system prompt here.
      let messages = chatMessagesOf(promptText);
      if (!messages) {
        messages = [];
        const system = systemPrompts[role];
        if (system !== undefined && system !== '') messages.push({ role: 'system', content: system });
        messages.push({ role: 'user', content: promptText });
      }
      return tok.encode(tok.renderChat(messages, { addGenerationPrompt: true, enableThinking: opts.enableThinking }), { addSpecialTokens: false });
    },
    targetTokens(responseText) {
      return [...tok.encode(responseText, { addSpecialTokens: false }), endOfTurn];
    },
    responseText(tokens) {
      return tok.decode(tokens, { skipSpecialTokens: true });
    },
  };
}

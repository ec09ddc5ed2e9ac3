/**
 * What `marsrl serve-model` needs from a policy (issue #16): the model behind the policy seam
 * (PolicyModel: prefill, decodeStep, selectCacheRows) and a tokenizer that, beyond the seam's
 * PolicyTokenizer, turns raw text into ids for /v1/completions, renders a chat conversation for
 * /v1/chat/completions and names each token for logprobs. A Studio GPT checkpoint is adapted
 * here; the Hugging Face family implements the same two seams (its chat template renders the
 * messages), so it plugs in without touching the server.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Role } from '../../engine/config/schema';
import { CHECKPOINT_MANIFEST, loadCheckpoint } from '../../engine/model/checkpoint';
import type { ChatMessage, PolicyModel, PolicyTokenizer } from '../../engine/model/policy-model';
import type { Tokenizer } from '../../engine/model/tokenizer';

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

export interface ServedTokenizer extends PolicyTokenizer {
  /** Raw text to ids, as /v1/completions continues it (special tokens written literally count). */
  encodeText(text: string): number[];
  /** A conversation rendered by the model's chat template, ending where the reply starts. */
  chatPrompt(messages: readonly ChatMessage[]): number[];
  /** The text a single token stands for (its literal for special tokens), for logprobs. */
  tokenText(id: number): string;
}

export interface ServedPolicy {
  /** The model id clients name (`model` in requests, `id` in /v1/models). */
  id: string;
  model: PolicyModel;
  tokenizer: ServedTokenizer;
  /** Unix seconds, for /v1/models. */
  created: number;
  /** Where it was loaded from (shown at start; not sent to clients). */
  source: string;
}

const ROLES: readonly Role[] = ['solver', 'verifier', 'corrector'];

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

  encodeText(text: string): number[] {
    return this.encode(text, true, 'prompt');
  }

  chatPrompt(messages: readonly ChatMessage[]): number[] {
    const assistant = messages.findIndex((m) => m.role === 'assistant');
    if (assistant >= 0) throw new PromptError(`messages[${assistant}]: this Studio GPT policy has no multi-turn chat template; send the system and user messages only`, `messages[${assistant}].role`);
    const text = messages.map((m) => m.content).join('\n');
    return [this.tokenizer.bosId, ...this.encodePlain(text, 'messages'), this.tokenizer.roleIds[this.role]];
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
 * Load a Studio GPT checkpoint folder (`checkpoint.json` + `weights.bin`) as a served policy.
 * The role (which role token closes chat prompts) is `role`, else the folder's name when it is
 * one of solver / verifier / corrector, else solver.
 */
export function loadCheckpointPolicy(dir: string, opts: { id?: string; role?: Role } = {}): ServedPolicy {
  const manifest = path.join(dir, CHECKPOINT_MANIFEST);
  if (!fs.existsSync(manifest) && fs.existsSync(path.join(dir, 'config.json'))) {
    // The Hugging Face family (issue #13) implements the same seams; its loader plugs in here.
    throw new Error(`${dir}: a Hugging Face model folder (config.json); this build serves Studio GPT checkpoints (checkpoint.json) only`);
  }
  if (!fs.existsSync(manifest)) throw new Error(`${dir}: not a Studio checkpoint folder (no ${CHECKPOINT_MANIFEST}); give a folder made by marsrl pretrain or a run's checkpoint`);
  const loaded = loadCheckpoint(dir);
  const base = path.basename(path.resolve(dir));
  const role = opts.role ?? (ROLES.includes(base as Role) ? (base as Role) : 'solver');
  return {
    id: opts.id ?? base,
    model: loaded.model,
    tokenizer: new CharPolicyTokenizer(loaded.tokenizer, role),
    created: Math.floor(fs.statSync(manifest).mtimeMs / 1000),
    source: path.resolve(dir),
  };
}

/**
 * How a role's prompt and response become one token sequence:
 *
 *   <bos> prompt characters <role> response characters <eos>
 *
 * The role token closes the prompt, so it both tells a shared policy which role it is playing
 * and marks where the response starts; <eos> ends the response (it is the sampler's stop token).
 * Warm start and RL use exactly this layout, so a warm-started policy samples in the format RL
 * scores.
 */
import type { Role } from '#shared/agents';
import type { PolicyTokenizer } from '../model/policy-model';
import type { Tokenizer } from '../gpt/tokenizer';
import { maxOf } from '../util/arrays';

export function promptTokens(tokenizer: Tokenizer, role: Role, promptText: string): number[] {
  return [tokenizer.bosId, ...tokenizer.encode(promptText, { allowSpecial: false }), tokenizer.roleIds[role]];
}

export function targetTokens(tokenizer: Tokenizer, responseText: string): number[] {
  return [...tokenizer.encode(responseText, { allowSpecial: false }), tokenizer.eosId];
}

/** The text of sampled response tokens: specials (the closing <eos>) are dropped. */
export function responseText(tokenizer: Tokenizer, tokens: readonly number[]): string {
  return tokenizer.decode(tokens, { skipSpecial: true });
}

/**
 * The GPT family's side of the policy seam (policy-model.ts): the character tokenizer with the
 * `<bos> prompt <role> … <eos>` layout above.
 */
export class CharPolicyTokenizer implements PolicyTokenizer {
  readonly vocabSize: number;
  readonly padId: number;
  readonly stopTokens: readonly number[];

  constructor(readonly chars: Tokenizer) {
    this.vocabSize = chars.vocabSize;
    this.padId = chars.padId;
    this.stopTokens = [chars.eosId];
  }

  /**
   * A prompt may quote another policy's output (a Verifier judging a Hugging Face Solver's text):
   * characters outside this policy's charset are left out, as it could not read them anyway.
   */
  promptTokens(role: Role, promptText: string): number[] {
    return promptTokens(this.chars, role, this.readable(promptText));
  }

  private readable(text: string): string {
    let out = '';
    for (const ch of text) if (this.chars.charset.includes(ch)) out += ch;
    return out;
  }

  targetTokens(text: string): number[] {
    return targetTokens(this.chars, text);
  }

  responseText(tokens: readonly number[]): string {
    return responseText(this.chars, tokens);
  }
}

export interface TrainingSequence {
  /** Prompt followed by response. */
  tokens: number[];
  /** Index of the first response token in `tokens`. */
  responseStart: number;
}

/**
 * Right-pad sequences into a [B][T] batch with a loss mask that selects response tokens only
 * (lossMask[b][t] = 1 trains the prediction of tokens[b][t]).
 */
export function padBatch(sequences: readonly TrainingSequence[], padId: number): { tokens: number[][]; lossMask: number[][]; T: number } {
  const T = maxOf(sequences, (s) => s.tokens.length);
  const tokens: number[][] = [];
  const lossMask: number[][] = [];
  for (const s of sequences) {
    const row = s.tokens.slice();
    const mask = new Array<number>(T).fill(0);
    for (let t = s.responseStart; t < s.tokens.length; t++) mask[t] = 1;
    while (row.length < T) row.push(padId);
    tokens.push(row);
    lossMask.push(mask);
  }
  return { tokens, lossMask, T };
}

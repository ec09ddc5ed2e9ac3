/**
 * The OpenAI API's request fields and error shapes, as `marsrl serve-model` accepts them
 * (API reference: chat/completions, completions, error codes). Every bad field is answered with
 * a 400 naming it in `error.param`, as OpenAI does:
 *   { "error": { "message": "...", "type": "invalid_request_error", "param": "temperature", "code": null } }
 * Unknown fields are ignored (clients send many this server has no use for); fields that change
 * the answer and are not implemented (tools, response_format, logit_bias, …) are refused, so a
 * client never gets an answer that silently ignored what it asked for.
 */
import type { ChatMessage } from '../../engine/model/policy-model';
import type { DecodeParams } from './batcher';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export function badRequest(message: string, param: string | null, code: string | null = null): ApiError {
  return new ApiError(400, message, 'invalid_request_error', param, code);
}

/** Fields refused unless they hold the value that changes nothing. */
const REFUSED: Record<string, unknown[]> = {
  tools: [],
  tool_choice: ['none'],
  functions: [],
  function_call: ['none'],
  response_format: [],
  logit_bias: [],
  suffix: [],
  echo: [false],
  best_of: [1],
  presence_penalty: [0],
  frequency_penalty: [0],
  repetition_penalty: [1],
};

export interface ParsedRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  params: DecodeParams;
  /** Whether to return logprobs, and in which layout. */
  logprobs: boolean;
}

export interface ParsedChat extends ParsedRequest {
  messages: ChatMessage[];
  /** Chat-template options (vLLM's `chat_template_kwargs`, e.g. Qwen3's `enable_thinking`). */
  chatTemplateKwargs: Record<string, unknown>;
}

export interface ParsedCompletion extends ParsedRequest {
  prompt: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function numberField(body: Record<string, unknown>, name: string, def: number, min: number, max: number, integer = false): number {
  const v = body[name];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) throw badRequest(`${name} must be ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`, name);
  if (v < min || v > max) throw badRequest(`${name} must be between ${min} and ${max}, got ${v}`, name);
  return v;
}

function common(body: unknown, defaults: { maxTokens: number; maxN: number }): { b: Record<string, unknown>; base: Omit<ParsedRequest, 'logprobs'> & { params: Omit<DecodeParams, 'topLogprobs'> & { topLogprobs: number } } } {
  if (!isObject(body)) throw badRequest('the request body must be a JSON object', null);
  if (typeof body.model !== 'string' || body.model === '') throw badRequest('model is required: the id of a model /v1/models lists', 'model');
  for (const [name, neutral] of Object.entries(REFUSED)) {
    const v = body[name];
    if (v !== undefined && v !== null && !neutral.includes(v)) throw badRequest(`${name} is not supported by marsrl serve-model`, name, 'unsupported_parameter');
  }
  const temperature = numberField(body, 'temperature', 1, 0, 2);
  const topP = numberField(body, 'top_p', 1, 0, 1);
  if (topP === 0) throw badRequest('top_p must be greater than 0', 'top_p');
  // vLLM's extensions, as Qwen3's recommended settings use them (top_k 20, min_p 0).
  const topK = numberField(body, 'top_k', 0, -1, 1_000_000, true);
  const minP = numberField(body, 'min_p', 0, 0, 1);
  const n = numberField(body, 'n', 1, 1, defaults.maxN, true);
  const maxTokens = numberField(body, body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens', defaults.maxTokens, 1, 1_000_000, true);
  // Without a seed each request draws its own, as an API server's sampling would differ per call.
  const seed = body.seed === undefined || body.seed === null ? Math.floor(Math.random() * 2 ** 32) : numberField(body, 'seed', 0, -(2 ** 63), 2 ** 63, true);
  let stop: string[] = [];
  if (typeof body.stop === 'string') stop = [body.stop];
  else if (Array.isArray(body.stop)) {
    if (body.stop.length > 4 || !body.stop.every((s) => typeof s === 'string' && s.length > 0)) throw badRequest('stop must be a string or up to 4 non-empty strings', 'stop');
    stop = body.stop as string[];
  } else if (body.stop !== undefined && body.stop !== null) throw badRequest('stop must be a string or an array of strings', 'stop');
  // vLLM's and SGLang's length controls: ignore_eos decodes to max_tokens (serving benchmarks'
  // fixed output lengths); min_tokens holds off the stop token and stop sequences (vLLM refuses a
  // min_tokens above max_tokens, and so does this server).
  if (body.ignore_eos !== undefined && body.ignore_eos !== null && typeof body.ignore_eos !== 'boolean') throw badRequest('ignore_eos must be a boolean', 'ignore_eos');
  const minTokens = numberField(body, 'min_tokens', 0, 0, 1_000_000, true);
  if (minTokens > maxTokens) throw badRequest(`min_tokens (${minTokens}) must not exceed ${body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens'} (${maxTokens})`, 'min_tokens');
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw badRequest('stream must be a boolean', 'stream');
  const streamOptions = body.stream_options;
  if (streamOptions !== undefined && streamOptions !== null && !isObject(streamOptions)) throw badRequest('stream_options must be an object', 'stream_options');
  return {
    b: body,
    base: {
      model: body.model,
      stream: body.stream === true,
      includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
      params: { temperature, topP, n, maxTokens, seed: seed >>> 0, stop, topLogprobs: 0, topK, minP, ignoreEos: body.ignore_eos === true, minTokens },
    },
  };
}

export function parseChatRequest(body: unknown, defaults: { maxTokens: number; maxN: number }): ParsedChat {
  const { b, base } = common(body, defaults);
  if (!Array.isArray(b.messages) || b.messages.length === 0) throw badRequest('messages must be a non-empty array of {role, content}', 'messages');
  const messages = b.messages.map((m: unknown, i): ChatMessage => {
    if (!isObject(m)) throw badRequest(`messages[${i}] must be an object with role and content`, `messages[${i}]`);
    if (m.role !== 'system' && m.role !== 'user' && m.role !== 'assistant' && m.role !== 'developer') throw badRequest(`messages[${i}].role must be system, developer, user or assistant, got ${JSON.stringify(m.role)}`, `messages[${i}].role`);
    let content = m.content;
    // Content parts: only text parts carry meaning for a text-only policy.
    if (Array.isArray(content)) {
      if (!content.every((p) => isObject(p) && p.type === 'text' && typeof p.text === 'string')) throw badRequest(`messages[${i}].content: only text parts are supported`, `messages[${i}].content`);
      content = content.map((p) => (p as { text: string }).text).join('');
    }
    if (typeof content !== 'string') throw badRequest(`messages[${i}].content must be a string`, `messages[${i}].content`);
    return { role: m.role === 'developer' ? 'system' : m.role, content };
  });
  if (b.logprobs !== undefined && b.logprobs !== null && typeof b.logprobs !== 'boolean') throw badRequest('logprobs must be a boolean', 'logprobs');
  const logprobs = b.logprobs === true;
  const top = numberField(b, 'top_logprobs', 0, 0, 20, true);
  if (top > 0 && !logprobs) throw badRequest('top_logprobs requires logprobs: true', 'top_logprobs');
  const kwargs = b.chat_template_kwargs ?? {};
  if (!isObject(kwargs)) throw badRequest('chat_template_kwargs must be an object of template variables, e.g. {"enable_thinking": false}', 'chat_template_kwargs');
  return { ...base, messages, chatTemplateKwargs: kwargs, logprobs, params: { ...base.params, topLogprobs: top, logprobs } };
}

export function parseCompletionRequest(body: unknown, defaults: { maxTokens: number; maxN: number }): ParsedCompletion {
  const { b, base } = common(body, { ...defaults, maxTokens: Math.min(defaults.maxTokens, 16) });
  let prompt = b.prompt;
  if (Array.isArray(prompt)) {
    if (prompt.length !== 1 || typeof prompt[0] !== 'string') throw badRequest('prompt: one prompt per request (a string, or an array holding one string)', 'prompt');
    prompt = prompt[0];
  }
  if (typeof prompt !== 'string' || prompt === '') throw badRequest('prompt must be a non-empty string', 'prompt');
  // Completions' `logprobs` is the number of alternatives (0–5); present means "return them".
  const lp = b.logprobs === undefined || b.logprobs === null ? null : numberField(b, 'logprobs', 0, 0, 5, true);
  return { ...base, prompt, logprobs: lp !== null, params: { ...base.params, topLogprobs: lp ?? 0, logprobs: lp !== null } };
}

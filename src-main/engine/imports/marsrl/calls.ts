/**
 * One MarsRL model call, as a line of `{out}/{idx}.json.{worker}` holds it.
 *
 * The record is llm_client.py's `vllm_obj` — `messages` (chat) or `prompt` (the DeepSeek-V3.1
 * completion path), `status_code`, `finish_reason`, `stop_reason`, `completion_tokens`, `text` —
 * plus `call_reason`, which vc_reasoning_system.py (Agent._call_llm) adds: `step1` for the Solver,
 * `verify_solution` for the Verifier, `correction` for the Corrector.
 */

export interface MarsCall {
  callReason: string;
  text: string;
  finishReason: string | null;
  stopReason: unknown;
  statusCode: unknown;
  completionTokens: number | null;
  /** The chat messages sent (already `role`/`content` strings, llm_client.py's `new_messages`), or null. */
  messages: Array<{ role: string; content: string }> | null;
  /** The raw completion prompt (DeepSeek-V3.1 path), or null. */
  prompt: string | null;
  /** 1-based line in its file. */
  line: number;
}

/** A line → a call, or the reason it is not one (the caller reports it with the file and line). */
export function parseCall(text: string, line: number): MarsCall | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not a JSON line (${(error as Error).message}); a line cut short?`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const record = value as Record<string, unknown>;
  if (typeof record.call_reason !== 'string') return 'no call_reason: not a MarsRL call record';
  if (typeof record.text !== 'string') return 'no text: not a MarsRL call record';
  return {
    callReason: record.call_reason,
    text: record.text,
    finishReason: typeof record.finish_reason === 'string' ? record.finish_reason : null,
    stopReason: record.stop_reason ?? null,
    statusCode: record.status_code ?? null,
    completionTokens: typeof record.completion_tokens === 'number' ? record.completion_tokens : null,
    messages: chatMessages(record.messages),
    prompt: typeof record.prompt === 'string' ? record.prompt : null,
    line,
  };
}

function chatMessages(value: unknown): MarsCall['messages'] {
  if (!Array.isArray(value)) return null;
  return value.map((message: { role?: unknown; content?: unknown }) => ({ role: String(message?.role ?? ''), content: String(message?.content ?? '') }));
}

/**
 * What MarsRL acts on: the text after the last `</think>` (Agent._call_llm returns
 * `vllm_obj["text"].split("</think>")[-1]`).
 */
export function answerPart(text: string): string {
  const parts = text.split('</think>');
  return parts[parts.length - 1];
}

/**
 * The Verifier's verdict exactly as MarsRL reads it (Agent.verify_solution, then _run_one_worker):
 * `verification_result.lower().split('correctness')[-1]`, approved when it contains "correct".
 * So "Correctness: Incorrect" is an approval too (the substring test), and a reply that never says
 * "correctness" is judged on its whole text.
 */
export function marsVerdict(text: string): boolean {
  const parts = answerPart(text).toLowerCase().split('correctness');
  return parts[parts.length - 1].includes('correct');
}

/** The prompt of a call as one text: each chat message under its role, or the raw completion prompt. */
export function promptText(call: MarsCall): string {
  if (call.messages) return call.messages.map((message) => `[${message.role}]\n${message.content}`).join('\n\n');
  return call.prompt ?? '';
}

const DEEPSEEK_USER = '<｜User｜>';
const DEEPSEEK_ASSISTANT = '<｜Assistant｜>';

/**
 * The problem statement a Solver call was given: its first user message (vc_reasoning_system.py
 * init_explorations sends `[{"role": "user", "content": [problem_statement]}]`, which call_llm
 * joins to the statement itself), or the first user turn of a DeepSeek-V3.1 prompt.
 */
export function statementOf(call: MarsCall): string | null {
  if (call.messages) return call.messages.find((message) => message.role === 'user')?.content ?? null;
  if (call.prompt === null) return null;
  const start = call.prompt.indexOf(DEEPSEEK_USER);
  if (start === -1) return null;
  const from = start + DEEPSEEK_USER.length;
  const end = call.prompt.indexOf(DEEPSEEK_ASSISTANT, from);
  return call.prompt.slice(from, end === -1 ? undefined : end);
}

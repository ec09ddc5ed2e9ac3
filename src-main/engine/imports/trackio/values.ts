/**
 * What one trackio row holds, as the Studio's records.
 *
 * A `metrics` row's JSON is `serialize_values(metrics)` (trackio/utils.py:1041): numbers as JSON
 * numbers, ±inf and NaN as the strings "Infinity", "-Infinity", "NaN" (read back by
 * `deserialize_values`, utils.py:1074). Other values (media, tables, strings) are not metrics.
 * Before trackio 0.25.1 a trace was logged inside the metrics JSON as `{"_type": "trackio.trace",
 * "messages", "metadata"}` (trackio/trace.py `Trace._to_dict`), alone or in a list; since #559 it is
 * a `traces` row (`_split_trace_metrics`, sqlite_storage.py:2542). Both become episodes here.
 */
import { createHash } from 'node:crypto';
import { parseAgentName } from '#shared/agents';
import type { ImportEpisode, ImportTurn } from '../types';

const SPECIAL: Record<string, number> = { Infinity: Infinity, '-Infinity': -Infinity, NaN: NaN };

export interface TraceRecord {
  key: string;
  index: number | null;
  messages: unknown;
  metadata: unknown;
}

export interface MetricsRow {
  values: Array<{ key: string; value: number }>;
  traces: TraceRecord[];
}

function isTrace(value: unknown): value is { messages?: unknown; metadata?: unknown } {
  return typeof value === 'object' && value !== null && (value as { _type?: unknown })._type === 'trackio.trace';
}

/** The numeric metrics and embedded traces of one `metrics` JSON text; throws on text that is not a JSON object. */
export function parseMetricsJson(text: string): MetricsRow {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the metrics column is not a JSON object');
  const row: MetricsRow = { values: [], traces: [] };
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value === 'number') row.values.push({ key, value });
    else if (typeof value === 'string' && value in SPECIAL) row.values.push({ key, value: SPECIAL[value] });
    else if (isTrace(value)) row.traces.push({ key, index: null, messages: value.messages, metadata: value.metadata });
    else if (Array.isArray(value)) {
      value.forEach((item, index) => {
        if (isTrace(item)) row.traces.push({ key, index, messages: item.messages, metadata: item.metadata });
      });
    }
  }
  return row;
}

/**
 * Seconds since the epoch of a trackio timestamp: `datetime.now(timezone.utc).isoformat()`
 * (sqlite_storage.py `log`, :1563) or, in trackio 0.1, SQLite's `CURRENT_TIMESTAMP`
 * (`YYYY-MM-DD HH:MM:SS`, UTC without a zone). A text without a zone is UTC, never local time.
 */
export function timestampSeconds(text: unknown): number | null {
  if (typeof text !== 'string' || text === '') return null;
  const match = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/.exec(text.trim());
  if (!match) return null;
  const fraction = match[3] ? Number(match[3]) : 0;
  const zone = (match[4] ?? 'Z').replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
  const ms = Date.parse(`${match[1]}T${match[2]}${zone}`);
  return Number.isNaN(ms) ? null : ms / 1000 + fraction;
}

interface Message {
  role: string;
  text: string;
  raw: Record<string, unknown>;
}

/** OpenAI-style content: a string, or a list of parts of which the text parts are kept. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content == null ? '' : JSON.stringify(content);
  return content
    .map((part) => (typeof part === 'string' ? part : typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
    .filter((text) => text !== '')
    .join('\n');
}

function messagesOf(messages: unknown): Message[] {
  if (!Array.isArray(messages)) return [];
  return messages
    .filter((message): message is Record<string, unknown> => typeof message === 'object' && message !== null)
    .map((message) => ({ role: String(message.role ?? ''), text: contentText(message.content), raw: message }));
}

/**
 * The agent of an assistant message: a Studio agent name only where the message itself says
 * one (`name`, OpenAI's participant name, or `agent`); otherwise `unknown` — a chat trace does
 * not say which agent of a chain spoke, and the importer never guesses.
 */
function agentOf(message: Message): Pick<ImportTurn, 'agent' | 'role' | 'round'> {
  for (const field of ['name', 'agent']) {
    const value = message.raw[field];
    if (typeof value !== 'string') continue;
    try {
      const { role, round } = parseAgentName(value);
      return { agent: value, role, round };
    } catch {
      // not a Studio agent name: keep looking, else unknown
    }
  }
  return { agent: 'unknown', role: null, round: 0 };
}

function turnOf(message: Message, prompt: Message[]): ImportTurn {
  const { role: _role, content: _content, finish_reason: finish, ...meta } = message.raw;
  return {
    ...agentOf(message),
    prompt: prompt.map((part) => `${part.role}: ${part.text}`).join('\n\n'),
    text: message.text,
    finishReason: typeof finish === 'string' ? finish : null,
    tokens: null,
    reward: null,
    advantage: null,
    verdict: null,
    meta,
  };
}

/** Assistant messages of a trace: the model calls it records. */
export function countGenerations(messages: unknown): { generations: number; agents: string[] } {
  const assistants = messagesOf(messages).filter((message) => message.role === 'assistant');
  return { generations: assistants.length, agents: [...new Set(assistants.map((message) => agentOf(message).agent))] };
}

/**
 * One trace as an episode: each assistant message is a turn whose prompt is the messages since
 * the previous assistant message; the problem is the first user message (keyed by its digest).
 * Null when the trace has no assistant message (nothing was generated).
 */
export function traceEpisode(trace: TraceRecord, step: number, meta: Record<string, unknown>): ImportEpisode | null {
  const messages = messagesOf(trace.messages);
  const turns: ImportTurn[] = [];
  let pending: Message[] = [];
  for (const message of messages) {
    if (message.role !== 'assistant') {
      pending.push(message);
      continue;
    }
    turns.push(turnOf(message, pending));
    pending = [];
  }
  if (turns.length === 0) return null;
  const question = messages.find((message) => message.role === 'user')?.text ?? null;
  return {
    split: 'train',
    step,
    problem: question === null ? null : { key: createHash('sha256').update(question).digest('hex').slice(0, 16), question, answer: '', meta: null },
    turns,
    finalAnswer: null,
    correct: null,
    group: null,
    meta: { ...meta, traceKey: trace.key, traceIndex: trace.index, metadata: trace.metadata ?? null },
  };
}

/**
 * What the served-model client and pool report about themselves (issue #16): retries, failures,
 * replicas taken out of rotation and put back. The shape is the store's event row (level, kind,
 * message, data), so a run writes them with `EventsRepo.log` unchanged.
 *
 * Every event names the endpoint (and replica) by its configured name and base URL, never by its
 * API key: the key lives only in the environment variable the config names, and `redactSecret`
 * scrubs it from anything a server sent back (some servers echo part of a bad key in a 401).
 */
import type { EventLevel } from '../store/types';

export interface ServedEvent {
  level: EventLevel;
  /** `served/retry`, `served/failed`, `served/replica_down`, `served/replica_up`, `served/probe`. */
  kind: string;
  message: string;
  data: { endpoint: string } & Record<string, unknown>;
}

export type ServedEventSink = (event: ServedEvent) => void;

/**
 * Replace every occurrence of `secret` in `text`, and any bearer credential, with `***`.
 * Servers may echo a key in an error body (OpenAI prints its first and last characters), so the
 * key's first 8 characters are scrubbed too when it is long enough to make them telling.
 */
export function redactSecret(text: string, secret: string | null | undefined): string {
  let out = text.replace(/Bearer\s+\S+/gi, 'Bearer ***');
  if (secret && secret.length > 0) {
    out = out.split(secret).join('***');
    if (secret.length >= 16) out = out.split(secret.slice(0, 8)).join('***');
  }
  return out;
}

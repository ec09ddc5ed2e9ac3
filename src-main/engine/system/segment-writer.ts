/**
 * The segments of a reasoning-system run's turns, written as each reply streams in.
 */
import type { BatchWriter, Store } from '../store';

/**
 * A turn's segments as its reply streams in: every `segmentTokens` deltas (about a token each
 * from an OpenAI-compatible stream) become a segment row, so the browser sees the turn grow;
 * token ranges count deltas. A restart (the stream was cut and is sent again) drops them.
 */
export function segmentWriter(writer: BatchWriter, store: Store, runId: number, turnId: number, worker: string, segmentTokens: number) {
  let index = 0;
  let tokens = 0;
  let pendingText = '';
  let pendingTokens = 0;
  let startedAt = Date.now();
  const emit = (finished: boolean) => {
    if (pendingText.length === 0 && !finished) return;
    const endedAt = Date.now();
    writer.segment({ id: writer.newId('segments'), turnId, runId, segIndex: index++, tokenStart: tokens, tokenEnd: tokens + pendingTokens, text: pendingText, finished, policyVersion: 0, startedAt, endedAt, worker });
    tokens += pendingTokens;
    pendingText = '';
    pendingTokens = 0;
    startedAt = endedAt;
  };
  return {
    delta(text: string) {
      pendingText += text;
      pendingTokens++;
      if (pendingTokens >= segmentTokens) emit(false);
    },
    restart() {
      writer.flush();
      store.trajectories.discardSegments(turnId);
      index = 0;
      tokens = 0;
      pendingText = '';
      pendingTokens = 0;
      startedAt = Date.now();
    },
    /** The last segment; when nothing streamed (a local decode, a non-streaming server) the whole text is one. */
    finish(text: string) {
      if (index === 0 && pendingText.length === 0) {
        pendingText = text;
        pendingTokens = text.length > 0 ? 1 : 0;
      }
      emit(true);
    },
    count: () => tokens,
  };
}

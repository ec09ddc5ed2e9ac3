/** The renderer's live refresh (src-renderer/src/api/liveRefresh.ts), with fake timers and a hand-fed event source. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StudioEvent } from '#shared/contract';
import { liveRefresh } from '../../src-renderer/src/api/liveRefresh';

function source() {
  const listeners = new Set<(event: StudioEvent) => void>();
  return {
    subscribe: (listener: (event: StudioEvent) => void) => {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    emit: (event: StudioEvent) => listeners.forEach((l) => l(event)),
    get size() {
      return listeners.size;
    },
  };
}

const progress = (runId: number) => ({ type: 'run-progress', runId }) as unknown as StudioEvent;

afterEach(() => void vi.useRealTimers());

describe('liveRefresh', () => {
  it('refreshes once per delay however many wanted events arrive, and ignores the others', () => {
    vi.useFakeTimers();
    const events = source();
    const refresh = vi.fn();
    const live = liveRefresh({ delayMs: 1000, wants: (e) => 'runId' in e && e.runId === 7, refresh, subscribe: events.subscribe });
    live.follow();
    live.follow();
    expect(events.size).toBe(1);
    events.emit(progress(3));
    vi.advanceTimersByTime(5000);
    expect(refresh).toHaveBeenCalledTimes(0);
    for (let i = 0; i < 5; i++) events.emit(progress(7));
    vi.advanceTimersByTime(999);
    expect(refresh).toHaveBeenCalledTimes(0);
    vi.advanceTimersByTime(1);
    expect(refresh).toHaveBeenCalledTimes(1);
    events.emit(progress(7));
    vi.advanceTimersByTime(1000);
    expect(refresh).toHaveBeenCalledTimes(2);
  });

  it('unfollow stops listening and drops a waiting refresh', () => {
    vi.useFakeTimers();
    const events = source();
    const refresh = vi.fn();
    const live = liveRefresh({ delayMs: 500, wants: () => true, refresh, subscribe: events.subscribe });
    live.follow();
    events.emit(progress(1));
    live.unfollow();
    expect(events.size).toBe(0);
    vi.advanceTimersByTime(2000);
    events.emit(progress(1));
    vi.advanceTimersByTime(2000);
    expect(refresh).not.toHaveBeenCalled();
  });
});

/**
 * Refreshing a view while its run writes: the stores follow the event stream and reload at most
 * once per `delayMs`, however many progress events arrive, so a fast run does not turn every
 * segment into a round trip to the engine. One helper for every store that follows a run.
 */
import type { StudioEvent } from '#shared/contract';
import { studioClient } from './client';

export interface LiveRefresh {
  /** Start listening (again); a second call while listening is a no-op. */
  follow(): void;
  /** Stop listening and drop a refresh that was waiting. */
  unfollow(): void;
}

export function liveRefresh(options: {
  delayMs: number;
  /** Whether an event concerns what the view shows. */
  wants: (event: StudioEvent) => boolean;
  refresh: () => void;
  /** The event source; the Studio client's by default (tests pass their own). */
  subscribe?: (listener: (event: StudioEvent) => void) => () => void;
}): LiveRefresh {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let stop: (() => void) | null = null;
  const onEvent = (event: StudioEvent): void => {
    if (timer || !options.wants(event)) return;
    timer = setTimeout(() => {
      timer = null;
      options.refresh();
    }, options.delayMs);
  };
  const subscribe = options.subscribe ?? ((listener) => studioClient().onEvent(listener));
  return {
    follow: () => {
      stop ??= subscribe(onEvent);
    },
    unfollow: () => {
      stop?.();
      stop = null;
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

/**
 * Following the Studio's pushed events (run progress, status, exports): a store subscribes once
 * however often its view mounts, and stops with the view.
 */
import type { StudioEvent } from '#shared/contract';
import { studioClient } from '../../api/client';

export interface EventFollower {
  /** Start listening; a second call while listening is a no-op. */
  follow(): void;
  /** Stop listening, then `onStop` (a refresh still waiting is dropped there). */
  unfollow(): void;
}

export function eventFollower(listener: (event: StudioEvent) => void, onStop?: () => void): EventFollower {
  let stop: (() => void) | null = null;
  return {
    follow: () => {
      stop ??= studioClient().onEvent(listener);
    },
    unfollow: () => {
      stop?.();
      stop = null;
      onStop?.();
    },
  };
}

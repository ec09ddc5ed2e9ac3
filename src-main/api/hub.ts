/**
 * Pushed events. The run manager and the store watcher publish; every transport (IPC to each
 * window, WebSocket clients of `marsrl serve`) subscribes and forwards, so the UI updates
 * without polling.
 */
import type { StudioEvent } from '#shared/contract';

export type StudioEventListener = (event: StudioEvent) => void;

export class EventHub {
  private readonly listeners = new Set<StudioEventListener>();

  subscribe(listener: StudioEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(event: StudioEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // One broken subscriber (a closed socket) must not stop the others.
      }
    }
  }

  get size(): number {
    return this.listeners.size;
  }
}

import { describe, expect, it, vi } from 'vitest';
import { STUDIO_METHODS } from '#shared/contract';
import type { StudioEvent } from '#shared/contract';
import { buildStudioBridge, StudioCallError, type StudioInvoke, type StudioSubscribe } from '../../src-preload/bridge';

describe('buildStudioBridge', () => {
  const noEvents: StudioSubscribe = () => () => {};

  it('exposes exactly the contract methods and the event subscription', () => {
    const bridge = buildStudioBridge(vi.fn(), noEvents);
    expect(Object.keys(bridge).sort()).toEqual([...STUDIO_METHODS, 'onEvent'].sort());
    expect(Object.isFrozen(bridge)).toBe(true);
  });

  it('sends the method name and its arguments as a list, and returns the value', async () => {
    const invoke = vi.fn<StudioInvoke>(async () => ({ ok: true, value: { items: [], nextCursor: null } }));
    const bridge = buildStudioBridge(invoke, noEvents);
    await expect(bridge.listRuns({ beforeId: 12 })).resolves.toEqual({ items: [], nextCursor: null });
    await bridge.appInfo();
    expect(invoke).toHaveBeenNthCalledWith(1, 'listRuns', [{ beforeId: 12 }]);
    expect(invoke).toHaveBeenNthCalledWith(2, 'appInfo', []);
  });

  it('turns an error reply back into a thrown Error carrying the message and code', async () => {
    const bridge = buildStudioBridge(
      async () => ({ ok: false, error: { code: 'not_found', message: 'run 9 does not exist' } }),
      noEvents,
    );
    const failure = bridge.getRun(9);
    await expect(failure).rejects.toBeInstanceOf(StudioCallError);
    await expect(failure).rejects.toMatchObject({ message: 'run 9 does not exist', code: 'not_found' });
  });

  it('delivers pushed events to a listener until it unsubscribes', () => {
    const listeners = new Set<(event: StudioEvent) => void>();
    const subscribe: StudioSubscribe = (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    };
    const bridge = buildStudioBridge(vi.fn(), subscribe);
    const received: StudioEvent[] = [];
    const stop = bridge.onEvent((event) => received.push(event));
    const created: StudioEvent = { type: 'run-created', runId: 4 };
    listeners.forEach((listener) => listener(created));
    stop();
    listeners.forEach((listener) => listener({ type: 'run-deleted', runId: 4 }));
    expect(received).toEqual([created]);
    expect(() => bridge.onEvent('not a function' as never)).toThrow(TypeError);
  });
});

import { describe, expect, it, vi } from 'vitest';
import { STUDIO_METHODS } from '../../src-preload/api';
import { buildStudioBridge, StudioCallError, type StudioInvoke } from '../../src-preload/bridge';

describe('buildStudioBridge', () => {
  it('exposes exactly the contract methods', () => {
    const bridge = buildStudioBridge(vi.fn());
    expect(Object.keys(bridge).sort()).toEqual([...STUDIO_METHODS].sort());
    expect(Object.isFrozen(bridge)).toBe(true);
  });

  it('sends the method name and its arguments as a list, and returns the value', async () => {
    const invoke = vi.fn<StudioInvoke>(async () => ({ ok: true, value: { items: [], nextCursor: null } }));
    const bridge = buildStudioBridge(invoke);
    await expect(bridge.listRuns({ beforeId: 12 })).resolves.toEqual({ items: [], nextCursor: null });
    await bridge.appInfo();
    expect(invoke).toHaveBeenNthCalledWith(1, 'listRuns', [{ beforeId: 12 }]);
    expect(invoke).toHaveBeenNthCalledWith(2, 'appInfo', []);
  });

  it('turns an error reply back into a thrown Error carrying the message and code', async () => {
    const bridge = buildStudioBridge(async () => ({
      ok: false,
      error: { code: 'not_found', message: 'run 9 does not exist' },
    }));
    const failure = bridge.getRun(9);
    await expect(failure).rejects.toBeInstanceOf(StudioCallError);
    await expect(failure).rejects.toMatchObject({ message: 'run 9 does not exist', code: 'not_found' });
  });
});

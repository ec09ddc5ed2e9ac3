import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import type { StudioApi } from '#shared/contract';
import { callStudio } from '../../src-main/api/dispatch';
import { StudioError } from '#shared/errors';
import { handleStudioCall, isTrustedSender } from '../../src-main/electron/ipc';
import type { AppLocation } from '../../src-main/electron/navigation';

const rendererDir = path.resolve('/opt/marsrl/out/renderer');
const location: AppLocation = { rendererDir };
const appPage = pathToFileURL(path.join(rendererDir, 'index.html')).href;

type SenderEvent = Parameters<typeof isTrustedSender>[0];
function from(url: string, { subframe = false } = {}): SenderEvent {
  return { senderFrame: { url, parent: subframe ? {} : null } } as unknown as SenderEvent;
}

/** Only the methods these tests call; the rest are absent, so calling one would fail loudly. */
function fakeService(overrides: Partial<StudioApi> = {}): StudioApi {
  const methods: Partial<StudioApi> = {
    appInfo: async () => ({ version: '0.1.0', databasePath: '/tmp/marsrl.db', schemaVersion: 1, transport: 'electron', exportsDir: '/tmp/exports' }),
    listRuns: async () => ({ items: [], nextCursor: null }),
    getRun: async (id) => {
      throw new StudioError('not_found', `run ${id} does not exist`);
    },
    listPresets: async () => [],
    getPreset: async () => ({}),
    validateConfig: async () => ({ ok: true, config: {} }),
    ...overrides,
  };
  return methods as StudioApi;
}

describe('isTrustedSender', () => {
  it("trusts only the app's own top-level page", () => {
    expect(isTrustedSender(from(appPage), location)).toBe(true);
    expect(isTrustedSender(from(appPage, { subframe: true }), location)).toBe(false);
    expect(isTrustedSender(from('https://example.com/'), location)).toBe(false);
    expect(isTrustedSender({ senderFrame: null } as unknown as SenderEvent, location)).toBe(false);
  });
});

describe('handleStudioCall', () => {
  it('refuses a foreign sender without calling the service', async () => {
    const call = vi.fn();
    const reply = await handleStudioCall(from('https://example.com/'), 'listRuns', [], location, call);
    expect(reply).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    expect(call).not.toHaveBeenCalled();
  });

  it('forwards a valid call through the dispatcher and returns its value', async () => {
    const listRuns = vi.fn(async () => ({ items: [], nextCursor: null }));
    const service = fakeService({ listRuns });
    const reply = await handleStudioCall(from(appPage), 'listRuns', [{ beforeId: 40, limit: 20 }], location, (m, a) =>
      callStudio(service, m, a),
    );
    expect(reply).toEqual({ ok: true, value: { items: [], nextCursor: null } });
    expect(listRuns).toHaveBeenCalledWith({ beforeId: 40, limit: 20 });
  });

  it('turns a rejected payload into invalid_request without reaching the service', async () => {
    const listRuns = vi.fn();
    const service = fakeService({ listRuns });
    const call = (m: unknown, a: unknown) => callStudio(service, m, a);
    const badQuery = await handleStudioCall(from(appPage), 'listRuns', [{ beforeId: 'DROP TABLE' }], location, call);
    const unknownMethod = await handleStudioCall(from(appPage), 'constructor', [], location, call);
    const notAList = await handleStudioCall(from(appPage), 'getRun', '7', location, call);
    for (const reply of [badQuery, unknownMethod, notAList]) {
      expect(reply).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    }
    expect(listRuns).not.toHaveBeenCalled();
  });

  it("keeps a StudioError's code and reports anything else as internal", async () => {
    const service = fakeService({
      listPresets: async () => {
        throw new TypeError('boom');
      },
    });
    const call = (m: unknown, a: unknown) => callStudio(service, m, a);
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => {});
    expect(await handleStudioCall(from(appPage), 'getRun', [7], location, call)).toEqual({
      ok: false,
      error: { code: 'not_found', message: 'run 7 does not exist' },
    });
    expect(await handleStudioCall(from(appPage), 'listPresets', [], location, call)).toEqual({
      ok: false,
      error: { code: 'internal', message: 'boom' },
    });
    expect(quiet).toHaveBeenCalledTimes(1);
    quiet.mockRestore();
  });
});

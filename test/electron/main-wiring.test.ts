/**
 * The Electron main process wired end to end, with the `electron` module replaced by a
 * recording fake (no Electron binary runs in CI): single-instance lock, the hardened window,
 * the session's request policy, the IPC handler reaching a real store through the dispatcher,
 * and the window size written on close.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { STUDIO_EVENT_CHANNEL, STUDIO_IPC_CHANNEL } from '#shared/contract';
import type { StudioIpcReply } from '#shared/contract';
import { openStore } from '../../src-main/engine/store';

type Listener = (...args: unknown[]) => unknown;

const fake = vi.hoisted(() => {
  const on = (registry: Map<string, Listener[]>) => (name: string, listener: Listener) => {
    registry.set(name, [...(registry.get(name) ?? []), listener]);
  };
  const appListeners = new Map<string, Listener[]>();
  const windows: FakeWindow[] = [];

  class FakeWindow {
    readonly listeners = new Map<string, Listener[]>();
    readonly sent: Array<[string, unknown]> = [];
    loadedFile: string | null = null;
    readonly webContents = { send: (channel: string, payload: unknown) => this.sent.push([channel, payload]) };
    constructor(readonly options: Record<string, unknown>) {
      windows.push(this);
    }
    on = on(this.listeners);
    once = on(this.listeners);
    emit(name: string): void {
      for (const listener of this.listeners.get(name) ?? []) listener();
    }
    loadFile(file: string) {
      this.loadedFile = file;
      return Promise.resolve();
    }
    loadURL() {
      return Promise.resolve();
    }
    isDestroyed = () => false;
    isMaximized = () => false;
    isMinimized = () => false;
    getNormalBounds = () => ({ x: 30, y: 40, width: 1400, height: 900 });
    maximize() {}
    show() {}
    restore() {}
    focus() {}
    static getAllWindows = () => windows;
    static fromWebContents = (contents: unknown) => windows.find((w) => w.webContents === contents) ?? null;
  }

  const session = {
    beforeRequest: null as null | ((details: { url: string }, callback: (answer: { cancel: boolean }) => void) => void),
    headersReceived: null as null | Listener,
    permissionRequest: null as null | Listener,
  };
  type Handler = (event: unknown, ...args: unknown[]) => Promise<unknown>;
  const ipcHandlers = new Map<string, Handler>();

  const electron = {
    app: {
      isPackaged: false,
      requestSingleInstanceLock: () => true,
      setPath: vi.fn(),
      on: on(appListeners),
      whenReady: () => Promise.resolve(),
      quit: vi.fn(),
      exit: vi.fn(),
    },
    BrowserWindow: FakeWindow,
    ipcMain: {
      handle: (channel: string, handler: Handler) => {
        ipcHandlers.set(channel, handler);
      },
    },
    session: {
      defaultSession: {
        webRequest: {
          onBeforeRequest: (listener: typeof session.beforeRequest) => (session.beforeRequest = listener),
          onHeadersReceived: (listener: Listener) => (session.headersReceived = listener),
        },
        setPermissionRequestHandler: (listener: Listener) => (session.permissionRequest = listener),
        setPermissionCheckHandler: vi.fn(),
      },
    },
    screen: { getAllDisplays: () => [{ workArea: { x: 0, y: 0, width: 1920, height: 1080 } }] },
    dialog: { showErrorBox: vi.fn(), showOpenDialog: vi.fn(async () => ({ canceled: false, filePaths: ['/models/Qwen3-0.6B'] })) },
    shell: { openExternal: vi.fn() },
  };
  return {
    electron,
    windows,
    appListeners,
    session,
    ipc: () => ({ channel: ipcHandlers.has('studio:call') ? 'studio:call' : null, handler: ipcHandlers.get('studio:call') as ((event: unknown, method: unknown, args: unknown) => Promise<StudioIpcReply>) | undefined }),
    pickFolder: (event: unknown, title: string) => ipcHandlers.get('studio:pick-folder')!(event, title) as Promise<string | null>,
  };
});

vi.mock('electron', () => ({ ...fake.electron, default: fake.electron }));

let home: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-main-'));
  process.env.MARSRL_HOME = home;
  delete process.env.MARSRL_DB;
  delete process.env.MARSRL_NATIVE_SQLITE;
  delete process.env.ELECTRON_RENDERER_URL;
  const { startDesktopApp } = await import('../../src-main/electron/app');
  startDesktopApp();
  await vi.waitFor(() => expect(fake.windows).toHaveLength(1));
});

afterAll(() => {
  for (const listener of fake.appListeners.get('will-quit') ?? []) listener();
  process.env = savedEnv;
  fs.rmSync(home, { recursive: true, force: true });
});

const window = () => fake.windows[0];
const appPage = () => pathToFileURL(window().loadedFile ?? '').href;
const call = (url: string, method: string, args: unknown[] = []) =>
  fake.ipc().handler!({ senderFrame: { url, parent: null } }, method, args);

describe('Electron main wiring', () => {
  it('opens one hardened window on the built renderer', () => {
    const web = window().options.webPreferences as Record<string, unknown>;
    expect(web).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true });
    expect(String(web.preload)).toMatch(/preload[\\/]index\.cjs$/);
    expect(window().loadedFile).toMatch(/renderer[\\/]index\.html$/);
    expect(fake.electron.app.setPath).toHaveBeenCalledWith('sessionData', path.join(home, 'chromium'));
  });

  it('answers StudioApi calls from the app page out of the real store', async () => {
    expect(fake.ipc().channel).toBe(STUDIO_IPC_CHANNEL);
    const info = await call(appPage(), 'appInfo');
    expect(info).toMatchObject({ ok: true, value: { databasePath: path.join(home, 'marsrl.db'), transport: 'electron' } });
    expect(fs.existsSync(path.join(home, 'marsrl.db'))).toBe(true);
    expect(await call(appPage(), 'listRuns', [{ limit: 5 }])).toEqual({ ok: true, value: { items: [], nextCursor: null } });
  });

  it('opens the folder picker for the app page only (the new-run form, issue #13)', async () => {
    expect(await fake.pickFolder({ senderFrame: { url: 'https://example.com/', parent: null } }, 'Choose')).toBeNull();
    expect(fake.electron.dialog.showOpenDialog).not.toHaveBeenCalled();
    const chosen = await fake.pickFolder({ senderFrame: { url: appPage(), parent: null }, sender: window().webContents }, 'Choose a model folder');
    expect(chosen).toBe('/models/Qwen3-0.6B');
    expect(fake.electron.dialog.showOpenDialog).toHaveBeenCalledWith(window(), { title: 'Choose a model folder', properties: ['openDirectory'] });
  });

  it('refuses other senders and bad payloads', async () => {
    expect(await call('https://example.com/', 'appInfo')).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    expect(await call(appPage(), 'listRuns', [{ limit: 'all' }])).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    expect(await call(appPage(), 'getRun', [99])).toMatchObject({ ok: false, error: { code: 'not_found' } });
  });

  it('pushes service events to the window and lists runs another process wrote', async () => {
    // As the CLI would: a second connection to the same database creates a run.
    const cli = openStore(path.join(home, 'marsrl.db'));
    const runId = cli.runs.create({
      name: 'from-the-cli',
      preset: 'quick',
      config: { task: { family: 'sort8' }, reward: { scheme: 'decoupled' }, advantage: { mode: 'agentwise' } },
      codeVersion: 'test',
      seed: 7,
    });
    cli.close();

    const listed = await call(appPage(), 'listRuns', []);
    expect(listed).toMatchObject({ ok: true, value: { items: [{ id: runId, name: 'from-the-cli', task: 'sort8' }] } });

    // updateRun publishes run-updated on the hub, which main forwards to every window.
    expect(await call(appPage(), 'updateRun', [runId, { notes: 'checked' }])).toMatchObject({ ok: true });
    expect(window().sent).toContainEqual([STUDIO_EVENT_CHANNEL, { type: 'run-updated', runId }]);
  });

  it('cancels remote requests and denies permissions', () => {
    const answer = (url: string) => {
      let cancel: boolean | undefined;
      fake.session.beforeRequest!({ url }, (result) => (cancel = result.cancel));
      return cancel;
    };
    expect(answer('https://cdn.example.com/x.js')).toBe(true);
    expect(answer(appPage())).toBe(false);
    let granted: boolean | undefined;
    fake.session.permissionRequest!(null, 'media', (ok: boolean) => (granted = ok));
    expect(granted).toBe(false);
  });

  it('remembers the window bounds when it closes', () => {
    window().emit('close');
    const saved = JSON.parse(fs.readFileSync(path.join(home, 'window-state.json'), 'utf8'));
    expect(saved).toEqual({ x: 30, y: 40, width: 1400, height: 900, maximized: false });
  });
});

/**
 * The desktop shell: single instance, one hardened window, the session's network policy, and
 * the IPC wiring to the StudioApi service. Everything else the app does lives in the engine and
 * the api layer, which never import electron; this folder is the only one that does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { app, BrowserWindow, dialog, ipcMain, screen, session, shell, type Session, type WebContents } from 'electron';
import { PICK_FOLDER_CHANNEL, STUDIO_EVENT_CHANNEL, STUDIO_IPC_CHANNEL } from '#shared/contract';
import { callStudio } from '../api/dispatch';
import { openStudio } from '../app/studio';
import { defaultDataDir, resolveDatabasePath } from '../engine/paths';
import { openStore, type Store } from '../engine/store';
import { setWorkerSpawner } from '../runner/spawn';
import { contentSecurityPolicy } from '#shared/csp';
import { handleStudioCall, isTrustedSender } from './ipc';
import { externalBrowserUrl, isAllowedRequest, isAppUrl, type AppLocation } from './navigation';
import { mainWindowOptions } from './window-options';
import { utilityProcessSpawner } from './worker-spawner';
import { fitToDisplays, readWindowState, WINDOW_STATE_FILE, writeWindowState } from './window-state';

/** Built layout: out/main/index.js beside out/preload and out/renderer. */
const OUT_DIR = path.resolve(import.meta.dirname, '..');
const PRELOAD_PATH = path.join(OUT_DIR, 'preload', 'index.cjs');
const RENDERER_DIR = path.join(OUT_DIR, 'renderer');

let mainWindow: BrowserWindow | null = null;

function appLocation(): AppLocation {
  // electron-vite dev points the window at its dev server; a packaged app never honours it, so
  // an environment variable cannot redirect an installed app to a remote page.
  const devServerUrl = !app.isPackaged ? process.env.ELECTRON_RENDERER_URL : undefined;
  return { rendererDir: RENDERER_DIR, ...(devServerUrl ? { devServerUrl } : {}) };
}

/** Applied to every web contents the app ever creates, including ones it did not expect. */
function hardenWebContents(contents: WebContents, location: AppLocation): void {
  contents.on('will-frame-navigate', (details) => {
    if (!isAppUrl(details.url, location)) details.preventDefault();
  });
  contents.on('will-redirect', (details) => {
    if (!isAppUrl(details.url, location)) details.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.setWindowOpenHandler(({ url }) => {
    const external = externalBrowserUrl(url);
    if (external) void shell.openExternal(external);
    return { action: 'deny' };
  });
}

function applySessionPolicy(target: Session, location: AppLocation): void {
  const policy = contentSecurityPolicy({ dev: location.devServerUrl !== undefined, delivery: 'header' });
  target.webRequest.onBeforeRequest((details, callback) => {
    callback({ cancel: !isAllowedRequest(details.url, location) });
  });
  // file:// pages get no response headers (index.html's meta tag covers them); this covers the
  // dev server and anything served over http in future.
  target.webRequest.onHeadersReceived((details, callback) => {
    const headers = Object.fromEntries(
      Object.entries(details.responseHeaders ?? {}).filter(([name]) => name.toLowerCase() !== 'content-security-policy'),
    );
    callback({ responseHeaders: { ...headers, 'Content-Security-Policy': [policy] } });
  });
  target.setPermissionRequestHandler((_contents, _permission, callback) => callback(false));
  target.setPermissionCheckHandler(() => false);
}

function createMainWindow(location: AppLocation, stateFile: string): BrowserWindow {
  const workAreas = screen.getAllDisplays().map((display) => display.workArea);
  const state = fitToDisplays(readWindowState(stateFile), workAreas);
  const window = new BrowserWindow(mainWindowOptions({ preloadPath: PRELOAD_PATH, state }));

  const saveState = (): void => {
    if (window.isDestroyed()) return;
    try {
      // Normal bounds, so a maximized window reopens maximized over the size it restores to.
      writeWindowState(stateFile, { ...window.getNormalBounds(), maximized: window.isMaximized() });
    } catch (error) {
      console.warn('[window] could not remember the window size:', error);
    }
  };
  let pendingSave: NodeJS.Timeout | undefined;
  const saveSoon = (): void => {
    clearTimeout(pendingSave);
    pendingSave = setTimeout(saveState, 500);
  };
  window.on('resize', saveSoon);
  window.on('move', saveSoon);
  window.on('close', () => {
    clearTimeout(pendingSave);
    saveState();
  });

  window.once('ready-to-show', () => {
    if (state.maximized) window.maximize();
    window.show();
  });

  if (location.devServerUrl) void window.loadURL(location.devServerUrl);
  else void window.loadFile(path.join(RENDERER_DIR, 'index.html'));
  return window;
}

function openStoreOrExplain(databasePath: string): Store | null {
  // `npm start` builds better-sqlite3 for Electron's ABI beside the Node build and names it here.
  const nativeBinding = process.env.MARSRL_NATIVE_SQLITE;
  try {
    return openStore(databasePath, nativeBinding ? { nativeBinding } : {});
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const hint = /NODE_MODULE_VERSION|was compiled against a different Node\.js version/.test(reason)
      ? '\n\nThe SQLite module was built for Node rather than Electron. Start the app with `npm start`, which builds an Electron copy.'
      : '';
    dialog.showErrorBox('MarsRL Studio cannot open its database', `${databasePath}\n\n${reason}${hint}`);
    return null;
  }
}

export function startDesktopApp(): void {
  // A second launch hands over to the first instead of opening the same database twice.
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return;
  }

  const dataDir = defaultDataDir();
  // Chromium's caches go in their own subfolder, not beside marsrl.db and the run folders.
  app.setPath('sessionData', path.join(dataDir, 'chromium'));
  const location = appLocation();

  app.on('second-instance', () => {
    if (!mainWindow) return;
    if (mainWindow.isMinimized()) mainWindow.restore();
    mainWindow.focus();
  });
  app.on('web-contents-created', (_event, contents) => hardenWebContents(contents, location));

  void app.whenReady().then(() => {
    applySessionPolicy(session.defaultSession, location);

    const databasePath = resolveDatabasePath();
    const store = openStoreOrExplain(databasePath);
    if (!store) {
      app.exit(1);
      return;
    }
    // Electron splits the Studio's shutdown over two events: runs stop at before-quit (below),
    // the database closes at will-quit.
    app.on('will-quit', () => store.close());

    setWorkerSpawner(utilityProcessSpawner);
    const { hub, manager: runs, service } = openStudio({ databasePath, store, transport: 'electron', origin: 'the app', reattachEngineRuns: true });
    // The run manager publishes here; every open window receives the events.
    hub.subscribe((event) => {
      for (const window of BrowserWindow.getAllWindows()) {
        if (!window.isDestroyed()) window.webContents.send(STUDIO_EVENT_CHANNEL, event);
      }
    });
    // Closing the app stops running runs at their next safe point; they stay resumable.
    let stopping = false;
    app.on('before-quit', (event) => {
      if (stopping) return;
      const active = store.runs.list({ status: 'running', limit: 500 }).items.filter((run) => runs.isActive(run.id));
      if (active.length === 0) return;
      event.preventDefault();
      stopping = true;
      void runs.stopAll('the app was closed').finally(() => app.quit());
    });
    ipcMain.handle(STUDIO_IPC_CHANNEL, (event, method: unknown, args: unknown) =>
      handleStudioCall(event, method, args, location, (name, callArgs) => callStudio(service, name, callArgs)),
    );
    // The new-run form's folder picker (issue #13): only the app's own page may open it.
    ipcMain.handle(PICK_FOLDER_CHANNEL, async (event, title: unknown) => {
      if (!isTrustedSender(event, location)) return null;
      const owner = BrowserWindow.fromWebContents(event.sender);
      const options = { title: typeof title === 'string' ? title.slice(0, 200) : 'Choose a folder', properties: ['openDirectory' as const] };
      const result = owner ? await dialog.showOpenDialog(owner, options) : await dialog.showOpenDialog(options);
      return result.canceled ? null : (result.filePaths[0] ?? null);
    });

    fs.mkdirSync(dataDir, { recursive: true });
    const stateFile = path.join(dataDir, WINDOW_STATE_FILE);
    const openMainWindow = (): void => {
      const window = createMainWindow(location, stateFile);
      window.on('closed', () => {
        if (mainWindow === window) mainWindow = null;
      });
      mainWindow = window;
    };
    openMainWindow();

    // macOS keeps the app alive without windows and reopens one from the dock.
    app.on('activate', () => {
      if (BrowserWindow.getAllWindows().length === 0) openMainWindow();
    });
  });

  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
}

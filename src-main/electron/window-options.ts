/**
 * The main window's options, as a pure function so the security-relevant values are testable
 * without Electron. The renderer shows data from runs (model outputs, notes) and must not be
 * able to reach Node even if some text were ever rendered as markup: no Node integration,
 * an isolated preload context, the Chromium sandbox, and web security all stay on.
 */
import type { BrowserWindowConstructorOptions } from 'electron';
import { MIN_WINDOW_SIZE, type WindowState } from './window-state';

export interface MainWindowOptionsInput {
  /** Absolute path of the built preload (out/preload/index.cjs). */
  preloadPath: string;
  state: WindowState;
}

export const WINDOW_BACKGROUND = '#111317';

export function mainWindowOptions({ preloadPath, state }: MainWindowOptionsInput): BrowserWindowConstructorOptions {
  return {
    title: 'MarsRL Studio',
    width: state.width,
    height: state.height,
    ...(state.x !== undefined && state.y !== undefined ? { x: state.x, y: state.y } : {}),
    minWidth: MIN_WINDOW_SIZE.width,
    minHeight: MIN_WINDOW_SIZE.height,
    // Shown on 'ready-to-show', so the user never sees a white frame before the dark UI paints.
    show: false,
    backgroundColor: WINDOW_BACKGROUND,
    autoHideMenuBar: true,
    webPreferences: {
      preload: preloadPath,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      experimentalFeatures: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      spellcheck: false,
    },
  };
}

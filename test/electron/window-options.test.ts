import { describe, expect, it } from 'vitest';
import { mainWindowOptions } from '../../src-main/electron/window-options';
import { DEFAULT_WINDOW_STATE, MIN_WINDOW_SIZE } from '../../src-main/electron/window-state';

describe('mainWindowOptions', () => {
  const options = mainWindowOptions({ preloadPath: '/app/out/preload/index.cjs', state: DEFAULT_WINDOW_STATE });
  const web = options.webPreferences ?? {};

  it('keeps the renderer isolated from Node', () => {
    expect(web.contextIsolation).toBe(true);
    expect(web.sandbox).toBe(true);
    expect(web.nodeIntegration).toBe(false);
    expect(web.nodeIntegrationInWorker).toBe(false);
    expect(web.nodeIntegrationInSubFrames).toBe(false);
  });

  it('keeps web security on and webviews off', () => {
    expect(web.webSecurity).toBe(true);
    expect(web.allowRunningInsecureContent).toBe(false);
    expect(web.webviewTag).toBe(false);
    expect(web.experimentalFeatures).toBe(false);
  });

  it('loads the given preload and waits to be shown', () => {
    expect(web.preload).toBe('/app/out/preload/index.cjs');
    expect(options.show).toBe(false);
  });

  it('uses the remembered size and enforces the minimum', () => {
    const sized = mainWindowOptions({ preloadPath: 'p', state: { width: 1500, height: 900, x: 40, y: 30, maximized: false } });
    expect(sized).toMatchObject({ width: 1500, height: 900, x: 40, y: 30 });
    expect(sized.minWidth).toBe(MIN_WINDOW_SIZE.width);
    expect(sized.minHeight).toBe(MIN_WINDOW_SIZE.height);
  });

  it('lets the OS place a window without a remembered position', () => {
    expect(options).not.toHaveProperty('x');
    expect(options).not.toHaveProperty('y');
  });
});

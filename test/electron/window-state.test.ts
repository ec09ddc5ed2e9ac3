import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_WINDOW_STATE,
  fitToDisplays,
  parseWindowState,
  readWindowState,
  writeWindowState,
  type Rect,
} from '../../src-main/electron/window-state';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-window-state-'));
  file = path.join(dir, 'nested', 'window-state.json');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('window state file', () => {
  it('gives defaults when there is no file yet', () => {
    expect(readWindowState(file)).toEqual(DEFAULT_WINDOW_STATE);
  });

  it('round-trips a saved state, creating the folder', () => {
    const saved = { x: 120, y: 80, width: 1440, height: 900, maximized: true };
    writeWindowState(file, saved);
    expect(readWindowState(file)).toEqual(saved);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['window-state.json']);
  });

  it('gives defaults for a corrupt or truncated file', () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, '{"width": 1440, "hei');
    expect(readWindowState(file)).toEqual(DEFAULT_WINDOW_STATE);
    fs.writeFileSync(file, '\u0000\u0001binary');
    expect(readWindowState(file)).toEqual(DEFAULT_WINDOW_STATE);
    fs.writeFileSync(file, 'null');
    expect(readWindowState(file)).toEqual(DEFAULT_WINDOW_STATE);
  });

  it('replaces only the implausible fields', () => {
    expect(parseWindowState({ width: 'wide', height: 700, maximized: 'yes', x: 10 })).toEqual({
      width: DEFAULT_WINDOW_STATE.width,
      height: 700,
      maximized: false,
    });
    expect(parseWindowState({ width: 1e9, height: 100, x: 1.5, y: 2 })).toEqual(DEFAULT_WINDOW_STATE);
  });
});

describe('fitToDisplays', () => {
  const laptop: Rect = { x: 0, y: 0, width: 1440, height: 875 };
  const external: Rect = { x: 1440, y: 0, width: 2560, height: 1415 };

  it('keeps a position that is still on a screen', () => {
    const state = { x: 1600, y: 100, width: 1800, height: 1000, maximized: false };
    expect(fitToDisplays(state, [laptop, external])).toEqual(state);
  });

  it('drops a position left on an unplugged monitor, and shrinks to the largest screen', () => {
    const state = { x: 1600, y: 100, width: 1800, height: 1000, maximized: false };
    expect(fitToDisplays(state, [laptop])).toEqual({ width: 1440, height: 875, maximized: false });
  });

  it('drops a position whose title bar is only a sliver on screen', () => {
    expect(fitToDisplays({ x: 1430, y: 10, width: 1000, height: 700, maximized: false }, [laptop])).not.toHaveProperty('x');
  });

  it('changes nothing when no screen is known', () => {
    const state = { x: 5000, y: 5000, width: 1000, height: 700, maximized: false };
    expect(fitToDisplays(state, [])).toEqual(state);
  });
});

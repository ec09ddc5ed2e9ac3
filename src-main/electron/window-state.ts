/**
 * The main window's size and place, remembered between launches in a small JSON file in the
 * data folder. The file is the user's machine state, not data: anything unreadable, partial or
 * implausible falls back to defaults rather than stopping the app from opening.
 */
import fs from 'node:fs';
import path from 'node:path';

export const WINDOW_STATE_FILE = 'window-state.json';

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface WindowState {
  /** Absent when the OS should choose (first launch, or the saved place is off every screen). */
  x?: number;
  y?: number;
  width: number;
  height: number;
  maximized: boolean;
}

export const MIN_WINDOW_SIZE = { width: 900, height: 560 } as const;
export const DEFAULT_WINDOW_STATE: WindowState = { width: 1280, height: 800, maximized: false };

/** Larger than any real screen setup; stops a corrupted file from asking for a 1e9-pixel window. */
const MAX_COORDINATE = 100_000;

function isCoordinate(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && Math.abs(value) <= MAX_COORDINATE;
}

/** Validates untrusted JSON into a state; any bad field drops back to its default. */
export function parseWindowState(raw: unknown): WindowState {
  if (typeof raw !== 'object' || raw === null) return { ...DEFAULT_WINDOW_STATE };
  const record = raw as Record<string, unknown>;
  const state: WindowState = {
    width:
      isCoordinate(record.width) && record.width >= MIN_WINDOW_SIZE.width ? record.width : DEFAULT_WINDOW_STATE.width,
    height:
      isCoordinate(record.height) && record.height >= MIN_WINDOW_SIZE.height
        ? record.height
        : DEFAULT_WINDOW_STATE.height,
    maximized: record.maximized === true,
  };
  // A position is only meaningful as a pair.
  if (isCoordinate(record.x) && isCoordinate(record.y)) {
    state.x = record.x;
    state.y = record.y;
  }
  return state;
}

export function readWindowState(file: string): WindowState {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { ...DEFAULT_WINDOW_STATE };
  }
  try {
    return parseWindowState(JSON.parse(text));
  } catch {
    return { ...DEFAULT_WINDOW_STATE };
  }
}

/**
 * Writes through a temporary file and a rename, so a crash mid-write leaves the previous file
 * rather than half a JSON document.
 */
export function writeWindowState(file: string, state: WindowState): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(parseWindowState(state), null, 2)}\n`);
  fs.renameSync(temporary, file);
}

const TITLE_STRIP_HEIGHT = 48;

function overlapArea(a: Rect, b: Rect): number {
  const width = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const height = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  return width > 0 && height > 0 ? width * height : 0;
}

/**
 * Fits a saved state to the screens attached now. A monitor that was unplugged since the last
 * launch would otherwise reopen the window where nobody can see it: the position is kept only
 * if a good part of the title area lands on some screen's work area, and the size never
 * exceeds the largest work area.
 */
export function fitToDisplays(state: WindowState, workAreas: readonly Rect[]): WindowState {
  if (workAreas.length === 0) return state;
  const largest = workAreas.reduce((best, area) => (area.width * area.height > best.width * best.height ? area : best));
  const fitted: WindowState = {
    width: Math.min(state.width, largest.width),
    height: Math.min(state.height, largest.height),
    maximized: state.maximized,
  };
  if (state.x !== undefined && state.y !== undefined) {
    const titleStrip: Rect = { x: state.x, y: state.y, width: fitted.width, height: TITLE_STRIP_HEIGHT };
    // Enough of the strip to grab and drag the window back: half of its first 200 pixels.
    const enough = (Math.min(titleStrip.width, 200) * TITLE_STRIP_HEIGHT) / 2;
    const visible = workAreas.some((area) => overlapArea(titleStrip, area) >= enough);
    if (visible) {
      fitted.x = state.x;
      fitted.y = state.y;
    }
  }
  return fitted;
}

/**
 * One e2e session: a seeded database in a temp folder, `marsrl serve` on it (started as a user
 * starts it, with a freshly built renderer), and Debian's Chromium with a page that records CSP
 * refusals and page errors. Registers its own hooks: every test must leave no CSP refusal and no
 * page error behind (the strict CSP holds for every view, ECharts' tooltips included).
 */
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { openStore, type Store } from '../../src-main/engine/store';
import { tempDir } from '../helpers/tmp';
import { launchChromium, watchedPage, type PageProblems } from './browser';
import { builtRenderer } from './renderer-build';
import { startServe, type ServeProcess } from '../helpers/serve-process';
import { startedBy } from '../helpers/started';
import { seedStudio } from '../helpers/seed';
import { writeTinyQwen3Model } from '../training/hf-tiny';

/**
 * How long the e2e tests poll for what the page should come to show: generous, since a loaded
 * 2-core CI machine is slow, and a poll passes as soon as it holds.
 */
export const POLL = { timeout: 20_000, interval: 100 };

export interface StudioSession {
  readonly dir: string;
  readonly store: Store;
  readonly served: ServeProcess;
  readonly page: Page;
  /** CSP refusals and page errors so far (a test that provokes errors on purpose removes them). */
  readonly problems: PageProblems;
  /**
   * Navigate to a view and wait for the live connection. `fresh` loads a blank page first: a hash
   * change alone keeps the previous view's state.
   */
  open(hash: string, options?: { fresh?: boolean }): Promise<void>;
  /** The runs list, freshly opened, and the export dialog of one run's row action; returns the open dialog. */
  openRunExport(runId: number): Promise<Locator>;
}

/**
 * `name` names the session's temp folder (`marsrl-e2e-<name>-…`) and database (`<name>.db`);
 * `seed` fills the database before `marsrl serve` opens it (the folder is where it may write files).
 */
export function studioInChromium(name: string, seed: (store: Store, dir: string) => void = () => {}): StudioSession {
  let tmp: ReturnType<typeof tempDir> | undefined;
  let store: Store | undefined;
  let served: ServeProcess | undefined;
  let browser: Browser | undefined;
  let page: Page | undefined;
  let problems: PageProblems | undefined;
  const ready = startedBy('the e2e session');

  beforeAll(async () => {
    tmp = tempDir(`marsrl-e2e-${name}-`);
    const dbPath = path.join(tmp.dir, `${name}.db`);
    store = openStore(dbPath);
    seed(store, tmp.dir);
    const rendererDir = await builtRenderer();
    // Its own per-user folder: exports to relative paths land there, never in the tester's home.
    served = await startServe(['--db', dbPath, '--port', '0', '--renderer', rendererDir], { MARSRL_HOME: path.join(tmp.dir, 'home') });
    browser = await launchChromium();
    ({ page, problems } = await watchedPage(browser));
  });

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
    store?.close();
    tmp?.cleanup();
  });

  afterEach(() => {
    expect(problems?.csp).toEqual([]);
    expect(problems?.errors).toEqual([]);
  });

  const open = async (hash: string, { fresh = false } = {}) => {
    const p = ready(page, 'page');
    if (fresh) await p.goto('about:blank');
    await p.goto(`${ready(served, 'server').url}${hash}`);
    await p.getByTestId('connection').and(p.locator('[data-state="open"]')).waitFor();
  };

  return {
    get dir() {
      return ready(tmp, 'temp folder').dir;
    },
    get store() {
      return ready(store, 'store');
    },
    get served() {
      return ready(served, 'server');
    },
    get page() {
      return ready(page, 'page');
    },
    get problems() {
      return ready(problems, 'page');
    },
    open,
    async openRunExport(runId) {
      await open('#/runs', { fresh: true });
      const p = ready(page, 'page');
      const row = p.locator(`[role="rowgroup"] [data-run-id="${runId}"]`);
      await row.hover();
      await row.getByTestId('row-export').click();
      const dialog = p.getByTestId('export-dialog');
      await dialog.waitFor();
      return dialog;
    },
  };
}

/**
 * A session on the seeded Studio with a tiny random Qwen3 folder of `context` tokens beside the
 * database, for the new-run form's Hugging Face policies (a browser has no folder picker: its
 * path is typed).
 */
export function studioWithTinyQwen3(name: string, context: number): { session: StudioSession; readonly modelDir: string } {
  let modelDir: string | undefined;
  const session = studioInChromium(name, (store, dir) => {
    seedStudio(store);
    modelDir = writeTinyQwen3Model(path.join(dir, 'qwen3-tiny'), { context });
  });
  const ready = startedBy('the e2e session');
  return {
    session,
    get modelDir() {
      return ready(modelDir, 'model folder');
    },
  };
}

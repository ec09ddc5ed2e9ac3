/**
 * The import dialog and imported runs in the renderer (issue 39), against a fake StudioApi:
 * the pure rules (what the preview table says, the request the form gives, which field a message
 * is about), the imports store (preview, a bad path at its field, progress, cancel, an end that
 * arrives before startImport's answer), and the components themselves in Debian's Chromium on the
 * built renderer with a fake `window.studio` (the preview table, the unreadable records, the
 * progress and Cancel, the result's links, the error banner naming the field, the "imported ·"
 * badge, and no launch-again button on an imported run's page).
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createPinia, setActivePinia } from 'pinia';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ImportOrigin, ImportPreview, ImportRequest, RunSummary, StudioBridge, StudioEvent } from '#shared/contract';
import { provideStudioClient } from '../../src-renderer/src/api/client';
import type {} from '../../src-renderer/src/env';
import { metricSections } from '../../src-renderer/src/charts/metricPanels';
import { useImportsStore } from '../../src-renderer/src/stores/imports';
import {
  bannerText,
  buildImportRequest,
  emptyImportForm,
  existingNote,
  fieldOfImportError,
  importedBadge,
  isImported,
  metricKeysShown,
  originFacts,
  parseTags,
  stepsText,
} from '../../src-renderer/src/util/importView';
import { launchChromium } from '../e2e/browser';
import { builtRenderer } from '../e2e/renderer-build';

const ORIGIN: ImportOrigin = {
  format: 'verl',
  path: '/data/verl/run-0412',
  sourceKey: '.',
  digest: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  importedAt: Date.UTC(2026, 10, 2, 9, 30),
  updatedAt: Date.UTC(2026, 10, 2, 9, 30),
};

const PREVIEW: ImportPreview = {
  path: '/data/tb',
  format: 'tensorboard',
  files: 3,
  bytes: 5 * 1024 * 1024,
  runs: [
    { key: 'ppo-a', name: 'ppo-a', steps: 120, firstStep: 0, lastStep: 119, metricKeys: ['train/loss', 'train/reward', 'eval/acc', 'lr'], metricPoints: 480, generations: 0, episodes: 0, agents: [], existingRunId: null },
    { key: 'ppo-b', name: 'ppo-b', steps: 1, firstStep: 5, lastStep: 5, metricKeys: ['train/loss'], metricPoints: 1, generations: 6, episodes: 2, agents: ['solver', 'verifier'], existingRunId: 7 },
  ],
  issues: [{ file: 'ppo-b/events.out.tfevents.1.host', position: 'byte 4096', message: 'masked CRC32C of the data does not match' }],
};

describe('import view rules', () => {
  it('gives each metric key without a namespace (MLflow, trackio) a panel of its own, beside the namespaced ones', () => {
    const sections = metricSections(['loss', 'lr', 'val/acc', 'train/loss']);
    const placed = sections.flatMap((s) => s.panels.flatMap((p) => p.lines.map((l) => l.key))).sort();
    expect(placed).toEqual(['loss', 'lr', 'train/loss', 'val/acc']);
    expect(sections.find((s) => s.id === 'other')?.panels.map((p) => p.id)).toEqual(['other:loss', 'other:lr']);
  });

  it('says a source run’s steps, a few metric keys and whether it was imported before', () => {
    expect(stepsText(PREVIEW.runs[0])).toBe('120 steps · 0–119');
    expect(stepsText(PREVIEW.runs[1])).toBe('1 step · 5');
    expect(stepsText({ steps: 0, firstStep: null, lastStep: null })).toBe('no steps');
    expect(metricKeysShown(PREVIEW.runs[0].metricKeys)).toEqual({ shown: ['train/loss', 'train/reward', 'eval/acc'], more: 1 });
    expect(metricKeysShown(['a'])).toEqual({ shown: ['a'], more: 0 });
    expect(existingNote(PREVIEW.runs[0])).toBeNull();
    expect(existingNote(PREVIEW.runs[1])).toBe('already imported as run 7 — adds only what is new');
  });

  it('marks an imported run and lists its origin, the digest shortened', () => {
    expect(importedBadge(ORIGIN)).toBe('imported · veRL');
    expect(importedBadge({ ...ORIGIN, format: 'tensorboard' })).toBe('imported · TensorBoard');
    expect(isImported({ imported: ORIGIN })).toBe(true);
    expect(isImported({ imported: null })).toBe(false);
    const facts = originFacts(ORIGIN);
    expect(facts.map((f) => f.label)).toEqual(['from', 'source run', 'digest', 'imported']);
    expect(facts[2].value).toBe('9f86d081884c');
    expect(facts[2].title).toContain(ORIGIN.digest);
    // A grown source says when records were last added.
    expect(originFacts({ ...ORIGIN, updatedAt: ORIGIN.importedAt + 10 * 60_000 }).map((f) => f.label)).toContain('grown');
    // The batches of one import move updatedAt by moments: not grown.
    expect(originFacts({ ...ORIGIN, updatedAt: ORIGIN.importedAt + 1500 }).map((f) => f.label)).not.toContain('grown');
  });

  it('builds the request: runs only when some are unticked, name and tags only when given', () => {
    const keys = PREVIEW.runs.map((r) => r.key);
    const form = { ...emptyImportForm(), path: ' /data/tb ' };
    expect(buildImportRequest(form, keys, new Set(keys))).toEqual({ path: '/data/tb' });
    expect(buildImportRequest({ ...form, format: 'tensorboard', name: ' exp ', tags: 'a, b,,a ' }, keys, new Set(['ppo-b']))).toEqual({
      path: '/data/tb',
      format: 'tensorboard',
      runs: ['ppo-b'],
      name: 'exp',
      tags: ['a', 'b'],
    });
    expect(parseTags(' , ')).toEqual([]);
  });

  it('finds the field a message is about, and names it in the banner', () => {
    expect(fieldOfImportError('path: /x does not exist')).toBe('path');
    expect(fieldOfImportError('Format: mlflow cannot read a .tfevents file')).toBe('format');
    expect(fieldOfImportError('no format recognises /x')).toBeNull();
    expect(fieldOfImportError('whatever', ['runs.0'])).toBe('runs');
    expect(bannerText('path', 'no format recognises /x')).toBe('Path: no format recognises /x');
    expect(bannerText('path', 'path: /x does not exist')).toBe('path: /x does not exist');
    expect(bannerText(null, 'disk full')).toBe('disk full');
  });
});

/** A StudioBridge with only the import calls, answering as told and recording the requests. */
function fakeImports() {
  let listener: ((event: StudioEvent) => void) | null = null;
  const started: ImportRequest[] = [];
  const cancelled: string[] = [];
  let previewAnswer: () => Promise<ImportPreview> = async () => PREVIEW;
  let beforeStartAnswer: (id: string) => void = () => {};
  let n = 0;
  const client = {
    previewImport: () => previewAnswer(),
    async startImport(request: ImportRequest) {
      started.push(request);
      const importId = `imp-${++n}`;
      beforeStartAnswer(importId);
      return { importId };
    },
    async cancelImport(id: string) {
      cancelled.push(id);
    },
    onEvent(next: (event: StudioEvent) => void) {
      listener = next;
      return () => (listener = null);
    },
  };
  return {
    client: client as unknown as StudioBridge,
    started,
    cancelled,
    push: (event: StudioEvent) => listener?.(event),
    answerPreview: (answer: () => Promise<ImportPreview>) => (previewAnswer = answer),
    /** Runs between the engine starting the import and its answer reaching the renderer. */
    beforeAnswer: (hook: (id: string) => void) => (beforeStartAnswer = hook),
  };
}

describe('imports store', () => {
  let fake: ReturnType<typeof fakeImports>;
  beforeEach(() => {
    fake = fakeImports();
    provideStudioClient(fake.client);
    setActivePinia(createPinia());
  });
  afterAll(() => provideStudioClient(null));

  it('previews a path with every run ticked, and drops the preview when the path changes', async () => {
    const store = useImportsStore();
    store.open();
    store.setPath('/data/tb');
    await store.runPreview();
    expect(store.preview?.runs.map((r) => r.key)).toEqual(['ppo-a', 'ppo-b']);
    expect([...store.picked]).toEqual(['ppo-a', 'ppo-b']);
    store.setPath('/data/other');
    expect(store.preview).toBeNull();
  });

  it('shows a refused path at the path field, named in the message', async () => {
    const store = useImportsStore();
    store.setPath('/nope');
    fake.answerPreview(async () => {
      throw new Error('no format recognises /nope: it does not exist');
    });
    await store.runPreview();
    expect(store.problem).toEqual({ field: 'path', message: 'Path: no format recognises /nope: it does not exist' });
    expect(store.phase).toBe('editing');
    // An empty path is refused before asking the engine.
    store.setPath('');
    await store.runPreview();
    expect(store.problem?.field).toBe('path');
  });

  it('follows progress, and keeps an end that arrives before startImport’s answer', async () => {
    const store = useImportsStore();
    store.open();
    store.setPath('/data/tb');
    await store.runPreview();
    store.toggleRun('ppo-a');
    store.form.name = 'from tb';
    fake.beforeAnswer((id) => {
      fake.push({ type: 'import-progress', importId: id, done: 10, total: 100, records: 4 });
      fake.push({ type: 'import-finished', importId: id, status: 'done', error: null, result: { path: '/data/tb', format: 'tensorboard', runs: [{ key: 'ppo-b', runId: 7, created: false, metricPoints: 0, turns: 0, episodes: 0 }], issues: [], seconds: 0.2 } });
    });
    await store.start();
    expect(fake.started).toEqual([{ path: '/data/tb', runs: ['ppo-b'], name: 'from tb' }]);
    expect(store.phase).toBe('done');
    expect(store.result?.runs[0].runId).toBe(7);
    expect(store.progress).toEqual({ done: 100, total: 100, records: 4 });
  });

  it('cancels a running import and says what stays', async () => {
    const store = useImportsStore();
    store.setPath('/data/tb');
    await store.runPreview();
    await store.start();
    expect(store.phase).toBe('running');
    const id = store.importId!;
    fake.push({ type: 'import-progress', importId: id, done: 30, total: 120, records: 9 });
    // Another import's events are not this one's.
    fake.push({ type: 'import-progress', importId: 'other', done: 99, total: 100, records: 1 });
    expect(store.progress).toEqual({ done: 30, total: 120, records: 9 });
    expect(store.percent).toBe(25);
    await store.cancel();
    expect(fake.cancelled).toEqual([id]);
    expect(store.cancelling).toBe(true);
    fake.push({ type: 'import-finished', importId: id, status: 'cancelled', result: null, error: null });
    expect(store.phase).toBe('editing');
    expect(store.notice?.kind).toBe('cancelled');
  });

  it('puts a failed import’s message at the field it names', async () => {
    const store = useImportsStore();
    store.setPath('/data/tb');
    await store.runPreview();
    await store.start();
    fake.push({ type: 'import-finished', importId: store.importId!, status: 'failed', result: null, error: 'name: a run called "x" is running' });
    expect(store.problem).toEqual({ field: 'name', message: 'name: a run called "x" is running' });
    expect(store.notice?.kind).toBe('failed');
  });

  it('refuses to import with no run ticked, at the runs', async () => {
    const store = useImportsStore();
    store.setPath('/data/tb');
    await store.runPreview();
    store.pickAll(false);
    await store.start();
    expect(fake.started).toEqual([]);
    expect(store.problem?.field).toBe('runs');
  });
});

// --- the components in Chromium ---------------------------------------------------------------

function summary(id: number, extra: Partial<RunSummary>): RunSummary {
  return {
    id, name: `run-${id}`, status: 'done', statusReason: null, preset: 'quick', task: 'sort8', rewardScheme: 'decoupled', advantageMode: 'agentwise', pipelineMode: 'pipelined',
    seed: 1, backend: 'cpu', tags: [], notes: '', createdAt: Date.UTC(2026, 10, 1), startedAt: null, endedAt: null, lastStep: 3, keyMetrics: {}, study: null,
    configValues: {}, stopRequest: null, actions: [], imported: null, ...extra,
  };
}
const STUDIO_RUN = summary(1, { name: 'studio run', actions: [{ kind: 'run-again', command: 'marsrl run --like 1', text: 'no checkpoint' }] });
// Actions the API would never give an imported run: the page must still offer none of them.
const IMPORTED_RUN = summary(2, { name: 'verl run-0412', task: '', rewardScheme: '', advantageMode: '', pipelineMode: '', imported: ORIGIN, actions: [{ kind: 'run-again', command: 'marsrl run --like 2', text: 'x' }] });

/** The fake StudioApi the page gets as `window.studio` (runs in the browser: no closure over test variables). */
function installFakeStudio(data: { runs: RunSummary[]; preview: ImportPreview }): void {
  type Listener = (event: unknown) => void;
  const w = window as unknown as Record<string, unknown>;
  const listeners = new Set<Listener>();
  const calls: { method: string; arg: unknown }[] = [];
  w.__calls = calls;
  w.__push = (event: unknown) => listeners.forEach((l) => l(event));
  let n = 0;
  const detail = (id: number) => {
    const run = data.runs.find((r) => r.id === id);
    if (!run) throw new Error(`run ${id} does not exist`);
    return { ...run, config: {}, codeVersion: 'x', backendInfo: null, counts: { problems: 0, episodes: 0, turns: 0, supersededTurns: 0, segments: 0, metrics: 0, events: 0, checkpoints: 0 }, lastCheckpointStep: null, lastResume: null, collapse: [], runningSpans: [], checker: null };
  };
  const api: Record<string, (arg?: unknown) => Promise<unknown>> = {
    appInfo: async () => ({ version: '0.1.0', databasePath: '/tmp/fake.db', schemaVersion: 1, transport: 'electron', exportsDir: '/tmp' }),
    listRuns: async () => ({ items: data.runs, nextCursor: null }),
    getRun: async (id) => detail(id as number),
    listMetricKeys: async () => [],
    getSeries: async () => [],
    listEvents: async () => ({ items: [], nextCursor: null }),
    getTimeline: async () => [],
    previewImport: async (request) => {
      const path = (request as { path: string }).path;
      if (path !== data.preview.path) throw new Error(`no format recognises ${path}: it does not exist`);
      return data.preview;
    },
    startImport: async () => ({ importId: `imp-${++n}` }),
    // The desktop app's folder picker (absent in a browser).
    pickFolder: async () => data.preview.path,
    cancelImport: async () => undefined,
  };
  w.studio = new Proxy(api, {
    get(target, key: string) {
      if (key === 'onEvent') {
        return (l: Listener) => {
          listeners.add(l);
          return () => listeners.delete(l);
        };
      }
      const method = target[key];
      if (!method) return undefined;
      return (arg: unknown) => {
        calls.push({ method: key, arg });
        return method(arg);
      };
    },
  });
}

/** The built renderer over loopback (a module script cannot load from file://). */
function serveFolder(root: string): Promise<http.Server> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.woff2': 'font/woff2' };
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
    const file = path.join(root, rel);
    if (!file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('import dialog and imported runs in Chromium (fake window.studio)', () => {
  let server: http.Server;
  let browser: Browser;
  let page: Page;
  let base: string;
  const errors: string[] = [];
  const dialog = () => page.getByTestId('import-dialog');
  const text = async (testid: string) => ((await dialog().getByTestId(testid).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
  const calls = (method: string) => page.evaluate((m) => ((window as unknown as { __calls: { method: string; arg: unknown }[] }).__calls).filter((c) => c.method === m).map((c) => c.arg), method);
  const push = (event: StudioEvent) => page.evaluate((e) => (window as unknown as { __push(e: unknown): void }).__push(e), event);

  beforeAll(async () => {
    server = await serveFolder(await builtRenderer());
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/index.html`;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.addInitScript(installFakeStudio, { runs: [IMPORTED_RUN, STUDIO_RUN], preview: PREVIEW });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('marks the imported run in the runs list, and only it', async () => {
    await page.goto(`${base}#/runs`);
    const badge = page.locator('[data-run-id="2"] [data-testid="imported-badge"]');
    await badge.waitFor();
    expect(await badge.textContent()).toBe('imported · veRL');
    expect(await page.locator('[data-run-id="1"] [data-testid="imported-badge"]').count()).toBe(0);
    // Its details pane: the origin, and no Clone; a Studio run keeps Clone.
    await page.locator('[data-run-id="2"]').click();
    const details = page.getByTestId('run-details');
    expect(await details.getByTestId('details-origin').textContent()).toContain('/data/verl/run-0412');
    expect(await details.getByRole('link', { name: 'Clone' }).count()).toBe(0);
    await page.locator('[data-run-id="1"]').click();
    expect(await details.getByRole('link', { name: 'Clone' }).count()).toBe(1);
  });

  it('shows a bad path in the error banner naming the field, the path marked', async () => {
    await page.getByTestId('import-open').click();
    await dialog().waitFor();
    // The folder picker fills the path.
    await dialog().getByTestId('import-pick').click();
    await expect.poll(() => dialog().getByTestId('import-path').inputValue()).toBe('/data/tb');
    await dialog().getByTestId('import-path').fill('/nope');
    await dialog().getByTestId('import-preview-button').click();
    const banner = dialog().getByRole('alert');
    await banner.waitFor();
    expect(await banner.textContent()).toMatch(/^\s*Path: no format recognises \/nope: it does not exist\s*$/);
    expect(await dialog().getByTestId('import-path').getAttribute('class')).toMatch(/input--invalid/);
    expect(await dialog().getByTestId('import-start').isDisabled()).toBe(true);
  });

  it('previews the source: its runs in a table, the record it could not read with file and position', async () => {
    await dialog().getByTestId('import-path').fill('/data/tb');
    expect(await dialog().getByRole('alert').count()).toBe(0);
    await dialog().getByTestId('import-preview-button').click();
    await dialog().getByTestId('import-preview').waitFor();
    expect(await text('import-found-format')).toBe('TensorBoard');
    expect(await text('import-found-counts')).toBe('2 runs · 3 files · 5.0 MiB');
    const rows = dialog().locator('[data-testid="import-runs"] tbody tr');
    expect(await rows.count()).toBe(2);
    const cells = (i: number) => rows.nth(i).locator('td').evaluateAll((tds) => tds.map((td) => (td as HTMLElement).innerText.replace(/\s+/g, ' ').trim()));
    expect(await cells(0)).toEqual(['', 'ppo-a', '120 steps · 0–119', '4 train/loss, train/reward, eval/acc +1', '480', '0', '0', '—']);
    expect((await cells(1)).slice(1, 7)).toEqual(['ppo-b already imported as run 7 — adds only what is new', '1 step · 5', '1 train/loss', '1', '6', '2']);
    expect(await rows.nth(1).locator('[data-agent]').evaluateAll((els) => els.map((el) => el.getAttribute('data-agent')))).toEqual(['solver', 'verifier']);
    const checks = dialog().getByTestId('import-run-check');
    expect(await checks.evaluateAll((els) => els.map((el) => (el as HTMLInputElement).checked))).toEqual([true, true]);
    expect(await dialog().getByTestId('import-issue').allTextContents()).toEqual([expect.stringMatching(/ppo-b\/events\.out\.tfevents\.1\.host · byte 4096\s*masked CRC32C of the data does not match/)]);
  });

  it('imports the runs ticked with name and tags, shows progress, and cancels', async () => {
    await dialog().getByTestId('import-run-check').first().uncheck();
    await dialog().getByTestId('import-name').fill('tb exp');
    await dialog().getByTestId('import-tags').fill('tb, old');
    await dialog().getByTestId('import-start').click();
    await expect.poll(() => calls('startImport')).toEqual([{ path: '/data/tb', runs: ['ppo-b'], name: 'tb exp', tags: ['tb', 'old'] }]);
    await push({ type: 'import-progress', importId: 'imp-1', done: 2_621_440, total: 5_242_880, records: 1200 });
    const progress = dialog().getByTestId('import-progress');
    await expect.poll(() => progress.getAttribute('data-records')).toBe('1200');
    expect((await progress.textContent())?.replace(/\s+/g, ' ')).toContain('Importing · 2.5 MiB / 5.0 MiB read · 1,200 records written · 50%');
    expect(await dialog().getByTestId('import-path').isDisabled()).toBe(true);
    await dialog().getByTestId('import-cancel').click();
    await expect.poll(() => calls('cancelImport')).toEqual(['imp-1']);
    await push({ type: 'import-finished', importId: 'imp-1', status: 'cancelled', result: null, error: null });
    await dialog().getByTestId('import-notice').waitFor();
    expect(await dialog().getByTestId('import-notice').getAttribute('data-kind')).toBe('cancelled');
    expect(await dialog().getByTestId('import-path').isDisabled()).toBe(false);
  });

  it('ends with links to the runs made, which open their pages', async () => {
    await dialog().getByTestId('import-start').click();
    await expect.poll(async () => (await calls('startImport')).length).toBe(2);
    await push({ type: 'import-finished', importId: 'imp-2', status: 'done', error: null, result: { path: '/data/tb', format: 'tensorboard', runs: [{ key: 'ppo-b', runId: 2, created: false, metricPoints: 3, turns: 6, episodes: 2 }], issues: PREVIEW.issues, seconds: 1.5 } });
    await dialog().getByTestId('import-result').waitFor();
    const link = dialog().getByTestId('import-result-link');
    expect(await link.textContent()).toBe('#2 ppo-b');
    expect(await link.getAttribute('href')).toBe('#/runs/2');
    expect(await text('import-result-run')).toContain('grown: 3 metric points, 6 turns, 2 episodes added');
    expect(await text('import-result-issues')).toContain('byte 4096');
    await link.click();
    await dialog().waitFor({ state: 'hidden' });
    await page.getByTestId('run-origin').waitFor();
  });

  it('shows the imported run’s origin in its header, with no way to launch it again', async () => {
    await page.goto(`${base}#/runs/2`);
    await page.getByTestId('run-origin').waitFor();
    expect(await page.locator('.run__header [data-testid="imported-badge"]').textContent()).toBe('imported · veRL');
    expect(await page.getByTestId('origin-path').textContent()).toBe('/data/verl/run-0412');
    expect(await page.getByTestId('origin-key').textContent()).toBe('.');
    expect(await page.getByTestId('origin-digest').textContent()).toBe('9f86d081884c');
    for (const id of ['clone-run', 'run-again', 'resume-run', 'stop-run', 'run-advice']) expect(await page.getByTestId(id).count(), id).toBe(0);
    // A Studio run's page keeps them (the check above can fail).
    await page.goto(`${base}#/runs/1`);
    await page.getByTestId('run-again').waitFor();
    expect(await page.getByTestId('clone-run').count()).toBe(1);
    expect(await page.getByTestId('run-origin').count()).toBe(0);
    expect(errors).toEqual([]);
  });
});

/**
 * Runs made elsewhere imported from the Studio in Chromium against `marsrl serve` (issue 39): each
 * fixture of test/fixtures/imports (MarsRL, veRL, DrMAS, trackio and MLflow as their own code
 * writes them; TensorBoard event files written here by the codec's writer; SQLite stores built
 * from their SQL scripts) previewed and imported through the Import… dialog, each shown (its
 * dashboard's charts with points; the MarsRL problems as episode trees of Solver, Verifier and
 * Corrector turns; the veRL run beside a Studio run in Compare), a re-import that adds nothing,
 * and a large import cancelled. Screenshots: test-results/screenshots/import-*.png, and the
 * README's docs/screenshots/{import-dialog,imported-run,marsrl-episode,verl-compare}.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ImportFormatId } from '#shared/contract';
import { EventFileWriter, eventFileName } from '../../src-main/engine/tfevents/writer';
import type { Store } from '../../src-main/engine/store';
import { REPO_ROOT } from '../helpers/cli';
import { seedStudio, type Seeded } from '../helpers/seed';
import { keepScreenshot, screenshot } from './browser';
import { POLL, studioInChromium } from './studio-session';

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'imports');
/** Points of the TensorBoard source that is imported to be cancelled: seconds of work. */
const LARGE_POINTS = 100_000;

let store: Store;
let seeded: Seeded;
let page: Page;
const sources: { format: ImportFormatId; path: string }[] = [];
let largeTb: string;

/** A TensorBoard run folder of `points` scalars over two tags, written as TF2 writes them. */
function writeTensorBoard(dir: string, points: number): string {
  fs.mkdirSync(dir, { recursive: true });
  const t0 = 1_764_000_000;
  const writer = new EventFileWriter(path.join(dir, eventFileName(t0, 0, 'e2e', 1)), t0);
  for (let i = 0; i < points; i++) writer.scalar(i % 2 === 0 ? 'train/loss' : 'train/reward', Math.floor(i / 2), Math.exp(-i / points) + (i % 7) / 100, t0 + i / 100);
  writer.close();
  return dir;
}

/** A SQLite store built from a fixture's SQL script (databases are never committed). */
function sqlDatabase(script: string, out: string): string {
  const db = new Database(out);
  db.exec(fs.readFileSync(script, 'utf8'));
  db.close();
  return out;
}

/** The sources that exist in this checkout, in the order they are imported. */
function prepareSources(dir: string): void {
  const add = (format: ImportFormatId, p: string | null) => p && fs.existsSync(p) && sources.push({ format, path: p });
  add('marsrl', path.join(FIXTURES, 'marsrl', 'outputs'));
  add('verl', path.join(FIXTURES, 'verl', 'run'));
  add('drmas', path.join(FIXTURES, 'drmas', 'run'));
  add('tensorboard', writeTensorBoard(path.join(dir, 'tb', 'ppo-small'), 400));
  const trackio = path.join(FIXTURES, 'trackio', 'current.sql');
  add('trackio', fs.existsSync(trackio) ? sqlDatabase(trackio, path.join(dir, 'trackio-project.db')) : null);
  add('mlflow', path.join(FIXTURES, 'mlflow', 'mlruns'));
  const mlflowSql = path.join(FIXTURES, 'mlflow', 'sqlite-store.sql');
  add('mlflow', fs.existsSync(mlflowSql) ? sqlDatabase(mlflowSql, path.join(dir, 'mlflow.db')) : null);
  largeTb = writeTensorBoard(path.join(dir, 'tb-large', 'long-run'), LARGE_POINTS);
}

const session = studioInChromium('import', (db, dir) => {
  store = db;
  seeded = seedStudio(db);
  prepareSources(dir);
});
beforeAll(() => {
  ({ page } = session);
});

const dialog = () => page.getByTestId('import-dialog');
const countOf = (sql: string, ...args: unknown[]) => (store.db.prepare(sql).get(...args) as { n: number }).n;
const sizes = (runId: number) => ({
  metrics: countOf('SELECT COUNT(*) AS n FROM metrics WHERE run_id = ?', runId),
  turns: countOf('SELECT COUNT(*) AS n FROM turns WHERE run_id = ?', runId),
});

/** The dialog opened from the runs list, the path previewed; resolves once the preview shows. */
async function previewSource(p: string): Promise<void> {
  if (!(await dialog().isVisible())) {
    await session.open('#/runs', { fresh: true });
    await page.getByTestId('import-open').click();
    await dialog().waitFor();
  }
  await dialog().getByTestId('import-path').fill(p);
  await dialog().getByTestId('import-preview-button').click();
  await dialog().getByTestId('import-preview').waitFor({ timeout: POLL.timeout });
}

/** Import what the preview shows; the result's run ids. */
async function importPreviewed(): Promise<{ runId: number; created: boolean }[]> {
  await dialog().getByTestId('import-start').click();
  await dialog().getByTestId('import-result').waitFor({ timeout: 30_000 });
  return dialog().getByTestId('import-result-run').evaluateAll((els) => els.map((el) => ({ runId: Number(el.getAttribute('data-run-id')), created: el.getAttribute('data-created') === 'true' })));
}

const imported = new Map<string, number[]>();

describe('import dialog in Chromium against marsrl serve', () => {
  it('previews and imports every fixture format, each as read-only runs marked with their origin', async () => {
    expect(sources.length).toBeGreaterThanOrEqual(6);
    for (const source of sources) {
      await previewSource(source.path);
      expect(await dialog().getByTestId('import-preview').getAttribute('data-format'), source.path).toBe(source.format);
      expect(await dialog().locator('[data-testid="import-runs"] tbody tr').count(), source.path).toBeGreaterThan(0);
      if (source.format === 'verl') keepScreenshot(await screenshot(page, 'import-dialog-verl'), 'import-dialog.png');
      const runs = await importPreviewed();
      expect(runs.length).toBeGreaterThan(0);
      expect(runs.every((r) => r.created)).toBe(true);
      imported.set(source.path, runs.map((r) => r.runId));
      for (const { runId } of runs) {
        const row = store.db.prepare('SELECT format, path FROM import_sources WHERE run_id = ?').get(runId) as { format: string; path: string } | undefined;
        expect(row?.format).toBe(source.format);
      }
      await dialog().getByTestId('import-again').click();
    }
    await page.keyboard.press('Escape');
    // The runs list marks each one.
    await session.open('#/runs', { fresh: true });
    const verlRun = imported.get(sources.find((s) => s.format === 'verl')!.path)![0];
    const badge = page.locator(`[data-run-id="${verlRun}"] [data-testid="imported-badge"]`);
    await badge.waitFor();
    expect(await badge.textContent()).toBe('imported · veRL');
    expect(await page.locator(`[data-run-id="${seeded.done.id}"] [data-testid="imported-badge"]`).count()).toBe(0);
  });

  it('shows each imported run with metrics on its dashboard, the origin in its header and no launch-again buttons', async () => {
    for (const source of sources) {
      // One run of each source with metrics (a MarsRL output has none: its calls are below).
      const runId = (imported.get(source.path) ?? []).find((id) => sizes(id).metrics > 0);
      if (runId === undefined) continue;
      {
        // A hash change is enough: the run page is keyed by its run.
        await session.open(`#/runs/${runId}`);
        await page.getByTestId('run-origin').waitFor();
        const panel = page.locator('[data-panel]:not([data-points="0"])').first();
        await panel.locator('canvas').first().waitFor({ timeout: POLL.timeout });
        await expect.poll(async () => Number(await panel.getAttribute('data-points')), POLL).toBeGreaterThan(0);
        expect(await page.getByTestId('origin-path').textContent()).toBe(source.path);
        for (const id of ['clone-run', 'run-again', 'resume-run', 'stop-run']) expect(await page.getByTestId(id).count(), id).toBe(0);
        if (source.format === 'verl') keepScreenshot(await screenshot(page, 'import-verl-run'), 'imported-run.png');
      }
    }
  });

  it('browses a MarsRL output as episode trees of Solver, Verifier and Corrector turns', async () => {
    const marsrl = sources.find((s) => s.format === 'marsrl');
    if (!marsrl) return;
    const [runId] = imported.get(marsrl.path)!;
    // An episode with a correction, so the tree shows all three roles.
    const episode = store.db
      .prepare("SELECT episode_id AS id FROM turns WHERE run_id = ? GROUP BY episode_id HAVING SUM(agent LIKE 'corrector%') > 0 AND SUM(agent LIKE 'verifier%') > 0 ORDER BY episode_id LIMIT 1")
      .get(runId) as { id: number } | undefined;
    expect(episode).toBeDefined();
    await session.open(`#/runs/${runId}/trajectories?episode=${episode!.id}`, { fresh: true });
    const tree = page.locator('[data-turn-id][data-agent]');
    await tree.first().waitFor({ timeout: POLL.timeout });
    const agents = await tree.evaluateAll((els) => els.map((el) => el.getAttribute('data-agent') ?? ''));
    const roles = new Set(agents.map((a) => a.replace(/\d+$/, '')));
    expect([...roles].sort()).toEqual(['corrector', 'solver', 'verifier']);
    expect(agents[0]).toBe('solver');
    keepScreenshot(await screenshot(page, 'import-marsrl-episode'), 'marsrl-episode.png');
  });

  it('compares the veRL import beside a Studio run', async () => {
    const verl = sources.find((s) => s.format === 'verl');
    if (!verl) return;
    const [runId] = imported.get(verl.path)!;
    await session.open(`#/compare?runs=${runId},${seeded.done.id}`, { fresh: true });
    await page.getByTestId('run-table').waitFor({ timeout: POLL.timeout });
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe('Compare 2 runs');
    await page.getByTestId('compare-chart').locator('canvas').first().waitFor({ timeout: POLL.timeout });
    const header = await page.getByTestId('run-table').innerText();
    expect(header).toContain(`#${runId}`);
    expect(header).toContain(`#${seeded.done.id}`);
    // No study command to re-run the pair: the imported run cannot be launched again.
    expect(await page.getByTestId('study-command').count()).toBe(0);
    await page.getByTestId('compare-chart').scrollIntoViewIfNeeded();
    keepScreenshot(await screenshot(page, 'import-verl-compare'), 'verl-compare.png');
  });

  it('re-imports a source without adding anything', async () => {
    const verl = sources.find((s) => s.format === 'verl') ?? sources[0];
    const runIds = imported.get(verl.path)!;
    const before = runIds.map(sizes);
    await previewSource(verl.path);
    const existing = await dialog().locator('[data-testid="import-runs"] tbody tr').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-existing'))));
    expect(existing).toEqual(runIds);
    expect(await dialog().getByTestId('import-existing').first().textContent()).toBe(`already imported as run ${runIds[0]} — adds only what is new`);
    const again = await importPreviewed();
    expect(again).toEqual(runIds.map((runId) => ({ runId, created: false })));
    expect(runIds.map(sizes)).toEqual(before);
    await dialog().getByTestId('import-again').click();
  });

  it('shows a large import’s progress and cancels it', async () => {
    await previewSource(largeTb);
    await dialog().getByTestId('import-start').click();
    const progress = dialog().getByTestId('import-progress');
    await expect.poll(async () => Number(await progress.getAttribute('data-done')), { ...POLL, interval: 20 }).toBeGreaterThan(0);
    expect(Number(await progress.getAttribute('data-total'))).toBe(fs.statSync(fs.readdirSync(largeTb).map((f) => path.join(largeTb, f))[0]).size);
    await screenshot(page, 'import-progress');
    await dialog().getByTestId('import-cancel').click();
    const notice = dialog().getByTestId('import-notice');
    await notice.waitFor({ timeout: POLL.timeout });
    expect(await notice.getAttribute('data-kind')).toBe('cancelled');
    await screenshot(page, 'import-cancelled');
    // Whole batches written before the cancel stay; the source was not read to its end.
    const runId = (store.db.prepare("SELECT run_id AS id FROM import_sources WHERE path = ?").get(largeTb) as { id: number } | undefined)?.id;
    if (runId !== undefined) expect(sizes(runId).metrics).toBeLessThan(LARGE_POINTS);
  });

  it('names the path in the error banner for a path that does not exist', async () => {
    const missing = path.join(session.dir, 'no-such-folder');
    await dialog().getByTestId('import-path').fill(missing);
    await dialog().getByTestId('import-preview-button').click();
    const banner = dialog().getByRole('alert');
    await banner.waitFor();
    expect(await banner.innerText()).toBe(`Path: ${missing} does not exist: give the folder or file to import`);
    // The refused call is logged by the browser as a console error.
    session.problems.errors = session.problems.errors.filter((e) => !/status of 400/.test(e));
  });
});

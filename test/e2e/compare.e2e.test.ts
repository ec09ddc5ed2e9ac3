/**
 * The compare and studies views in Chromium against `marsrl serve`, on a database holding a
 * finished 2×2 study of small fake runs (written through the store's BatchWriter; no training
 * runs here). Screenshots: test-results/screenshots/compare-*.png.
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src-main/engine/store';
import { seedStudy, type SeededStudy } from '../study/seed-study';
import { screenshot, type PageProblems } from './browser';
import { POLL, studioInChromium } from './studio-session';

let store: Store;
let seeded: SeededStudy;
let page: Page;
let problems: PageProblems;

const session = studioInChromium('compare', (db) => {
  seeded = seedStudy(db, { steps: 30 });
});
beforeAll(() => {
  ({ store, page, problems } = session);
});
// A fresh document each time: a hash change alone would keep the previous view's choices.
const open = (hash: string) => session.open(hash, { fresh: true });

const cellTexts = (testId: string, row: string) =>
  page
    .getByTestId(testId)
    .locator('tbody tr')
    .filter({ has: page.locator('th', { hasText: new RegExp(`^\\s*${row}\\s*$`) }) })
    .locator('td')
    .allInnerTexts();

describe('compare view in Chromium', () => {
  it('overlays runs picked by hand, one colour per run, with a diff-only config table', async () => {
    const four = seeded.runIds.slice(0, 4);
    await open(`#/compare?runs=${four.join(',')}`);
    await page.getByTestId('run-table').waitFor();
    // Only the fields that differ: the advantage mode and the seed (all four are decoupled).
    const headers = await page.getByTestId('config-diff').locator('thead th').allInnerTexts();
    expect(headers.map((h) => h.trim())).toEqual(['run', 'advantage.mode', 'seed']);
    await expect.poll(() => page.getByTestId('config-diff').locator('tbody tr').count(), POLL).toBe(4);
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe('Compare 4 runs');
    // Deltas against the first run: run 3 (global, seed 1) has 4 Corrector spikes more (steps 5, 12, 19, 26).
    await expect.poll(async () => (await cellTexts('run-table', 'corrector1 grad spikes'))[2], POLL).toMatch(/^4\s*\+4$/);
    await page.getByTestId('compare-chart').locator('canvas').first().waitFor();
    await screenshot(page, 'compare-overlay');
  });

  it('opens a study grouped by its axes: group means with bands and deltas against the baseline group', async () => {
    await open(`#/compare?study=${seeded.studyId}`);
    await page.getByTestId('group-table').waitFor();
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe('Compare 8 runs');
    const groupHeaders = (await page.getByTestId('group-table').locator('thead th').allInnerTexts()).map((h) => h.replace(/\s+/g, ' ').trim());
    expect(groupHeaders).toEqual(['metric', 'decoupled / agentwise n=2 · baseline', 'decoupled / global n=2', 'shared / agentwise n=2', 'shared / global n=2']);
    // Global normalization spiked the Corrector: +4 spikes, seed ranges apart (*).
    const spikes = await cellTexts('group-table', 'corrector1 grad spikes');
    expect(spikes[1]).toMatch(/^4 ± 0\.0\s*Δ \+4\*$/);
    // Config diff: three fields differ over the study (two axes and the seed).
    const diffHeaders = await page.getByTestId('config-diff').locator('thead th').allInnerTexts();
    expect(diffHeaders.map((h) => h.trim())).toEqual(['run', 'advantage.mode', 'reward.scheme', 'seed']);

    // The chart of a per-agent metric, grouped, with a ± std band on the samples-seen axis.
    await page.getByLabel('Metric', { exact: true }).selectOption('corrector1/grad_norm');
    await page.getByRole('radio', { name: '± std' }).click();
    await page.getByRole('radio', { name: 'samples seen' }).click();
    await expect.poll(() => page.getByTestId('compare-chart').getAttribute('data-testid'), POLL).toBe('compare-chart');
    await page.waitForTimeout(500);
    await screenshot(page, 'compare-study-grouped');

    await page.getByTestId('group-table').scrollIntoViewIfNeeded();
    await screenshot(page, 'compare-group-table');

    // Regroup by reward scheme alone and pick the other baseline: the deltas flip sign.
    await page.locator('.groupby__key', { hasText: 'advantage.mode' }).locator('input').uncheck();
    await expect.poll(async () => (await page.getByTestId('group-table').locator('thead th').allInnerTexts()).length, POLL).toBe(3);
    await page.getByLabel('Baseline group').selectOption('shared');
    await expect.poll(async () => (await cellTexts('group-table', 'system acc'))[0], POLL).toMatch(/Δ \+0\.\d{3}\*/);
    await page.getByRole('radio', { name: 'RL step' }).click();
    await page.getByLabel('Metric', { exact: true }).selectOption('eval/system/accuracy');
    await page.locator('.compare__header .dim', { hasText: 'Loading' }).waitFor({ state: 'detached' });
    await page.waitForTimeout(300);
    await screenshot(page, 'compare-by-reward');
  });

  it('stays responsive with 20 runs selected', async () => {
    // Twelve more runs (a second study with three seeds) → 20 runs in one view.
    const more = seedStudy(store, { seeds: [1, 2, 3], steps: 30, name: 'seeded-2x2-3seeds', start: Date.UTC(2026, 0, 6) });
    const ids = [...seeded.runIds, ...more.runIds];
    expect(ids).toHaveLength(20);
    const started = Date.now();
    await open(`#/compare?runs=${ids.join(',')}`);
    await page.getByTestId('run-table').waitFor();
    await expect.poll(() => page.getByTestId('run-table').locator('thead th').count(), POLL).toBe(21);
    const loadMs = Date.now() - started;
    // Switching the metric redraws 20 overlaid runs promptly.
    const switchStart = Date.now();
    await page.getByLabel('Metric', { exact: true }).selectOption('solver/grad_norm');
    await page.waitForTimeout(100);
    await page.getByLabel('Metric', { exact: true }).selectOption('system/accuracy');
    await page.waitForFunction(() => document.querySelector('[data-testid="compare-chart"] canvas') !== null);
    const switchMs = Date.now() - switchStart;
    expect(loadMs).toBeLessThan(10_000);
    expect(switchMs).toBeLessThan(5_000);
    await page.locator('.compare__header .dim', { hasText: 'Loading' }).waitFor({ state: 'detached' });
    await screenshot(page, 'compare-20-runs');
  });
});

describe('studies view in Chromium', () => {
  it('shows a study with its progress and cells, and rejects a bad matrix naming the field', async () => {
    await open(`#/studies/${seeded.studyId}`);
    const detail = page.getByTestId('study-detail');
    await detail.waitFor();
    await expect.poll(() => detail.innerText(), POLL).toMatch(/8 done, 0 failed, 0 running, 0 queued \(100%\)/);
    // The cells table (the report below has tables of its own).
    expect(await detail.getByTestId('study-cells').locator('tbody tr').count()).toBe(8);
    // `marsrl serve` has a run manager, so launching is possible; a bad seed list is refused by the server with the field named.
    await page.getByRole('textbox', { name: 'Seeds', exact: true }).fill('1, x');
    await page.getByRole('button', { name: 'Launch study' }).click();
    await expect.poll(() => page.locator('.launch [role="alert"]').innerText(), POLL).toMatch(/seeds/);
    // The refused request shows up in the console as a 400; nothing else may.
    expect(problems.errors.splice(0).filter((e) => !/status of 400/.test(e))).toEqual([]);
    await screenshot(page, 'compare-studies');
  });
});

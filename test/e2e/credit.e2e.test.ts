/**
 * Counterfactual credit (issue 40) in Chromium against `marsrl serve`: the turn panel shows a
 * turn's reward under each scheme and advantage under each mode, the run's own cell equal to the
 * stored advantage and every cell the value the engine computes; the run page charts per agent
 * how far the run's advantages are from an alternative; the export dialog adds the columns.
 * Screenshots: docs/screenshots/credit-panel.png and credit-divergence.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatValue } from '#shared/format';
import { turnCounterfactual } from '../../src-main/engine/rl/credit-run';
import type { Store } from '../../src-main/engine/store';
import { seedCreditRun } from '../helpers/seed';
import { keepScreenshot, screenshot, SCREENSHOT_DIR } from './browser';
import { POLL, studioInChromium } from './studio-session';

let store: Store;
let page: Page;
let runId: number;

const session = studioInChromium('credit', (db) => {
  runId = seedCreditRun(db, { name: 'sort decoupled/global (credit)', mode: 'global', steps: 30, problemsPerStep: 6 });
});
beforeAll(() => {
  ({ store, page } = session);
});

const text = async (selector: ReturnType<Page['locator']>) => ((await selector.textContent()) ?? '').trim();

describe('counterfactual credit in the turn panel (issue 40)', () => {
  it('shows every scheme and mode, the run’s own cell equal to the stored advantage', async () => {
    const step = 10;
    const corrector = store.db
      .prepare("SELECT t.id, t.episode_id AS episodeId FROM turns t WHERE t.run_id = ? AND t.step = ? AND t.agent = 'corrector1' ORDER BY t.id LIMIT 1")
      .get(runId, step) as { id: number; episodeId: number };
    const credit = turnCounterfactual(store, corrector.id)!;
    await session.open(`#/runs/${runId}/trajectories?step=${step}`, { fresh: true });
    await page.locator(`.pane--list [data-episode-id="${corrector.episodeId}"]`).click();
    await page.locator(`[role="tree"] [data-turn-id="${corrector.id}"]`).click();
    const panel = page.getByTestId('counterfactual-credit');
    await panel.getByTestId('counterfactual-table').waitFor({ timeout: POLL.timeout });
    const table = panel.getByTestId('counterfactual-table');
    expect(await table.locator('thead th').allInnerTexts()).toEqual(['', 'decoupled', 'shared', 'run − A']);
    const reward = await table.locator('tr[data-row="reward"] td').allInnerTexts();
    expect(reward.slice(0, 2)).toEqual([formatValue(credit.rewards.decoupled!), formatValue(credit.rewards.shared!)]);
    for (const mode of credit.modes) {
      const cells = await table.locator(`tr[data-row="${mode}"] td`).allInnerTexts();
      expect(cells.slice(0, 2)).toEqual([formatValue(credit.advantages.decoupled[mode]!), formatValue(credit.advantages.shared[mode]!)]);
    }
    expect(await text(table.locator('[data-own="true"]'))).toBe(formatValue(credit.stored.advantage));
    expect(await table.locator('[data-own="true"]').count()).toBe(1);
    expect(await text(panel.getByTestId('counterfactual-reproduced'))).toContain(`gives the stored advantage ${formatValue(credit.stored.advantage)}`);
    await panel.scrollIntoViewIfNeeded();
    keepScreenshot(await screenshot(page, 'credit-panel'), 'credit-panel.png');
  });
});

describe('credit divergence on the run page (issue 40)', () => {
  it('charts per agent how far the run’s advantages are from an alternative, and the spread beside the run’s', async () => {
    await session.open(`#/runs/${runId}`, { fresh: true });
    const panel = page.getByTestId('credit-divergence');
    await panel.waitFor({ timeout: POLL.timeout });
    const turns = (store.db.prepare('SELECT COUNT(*) AS n FROM advantages WHERE run_id = ?').get(runId) as { n: number }).n;
    expect(await text(panel.getByTestId('credit-summary'))).toContain(`from ${turns.toLocaleString('en-US')} stored turns`);
    expect(await panel.getByTestId('credit-alternative').inputValue()).toBe('decoupled|agentwise');
    const labels = await panel.getByTestId('credit-alternative').locator('option').allInnerTexts();
    expect(labels).toContain('global (run)');
    expect(labels).toContain('shared · agentwise');
    await panel.locator('canvas').first().waitFor();
    await panel.getByTestId('credit-metric-std').click();
    await expect.poll(() => panel.getByTestId('credit-metric-std').getAttribute('aria-checked'), POLL).toBe('true');
    await panel.scrollIntoViewIfNeeded();
    // Let ECharts draw the new option before the picture.
    await page.waitForTimeout(300);
    const shot = path.join(SCREENSHOT_DIR, 'credit-divergence.png');
    fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await panel.screenshot({ path: shot });
    keepScreenshot(shot, 'credit-divergence.png');
  });
});

describe('the export dialog adds the counterfactual columns (issue 40)', () => {
  it('offers them for trajectories and writes them', async () => {
    const dialog = await session.openRunExport(runId);
    const box = dialog.getByTestId('export-counterfactual');
    await box.check();
    const out = path.join(session.dir, 'credit-export.jsonl');
    await dialog.getByTestId('export-out').fill(out);
    await dialog.getByTestId('export-start').click();
    await dialog.getByTestId('export-result').waitFor({ timeout: POLL.timeout });
    const first = JSON.parse(fs.readFileSync(out, 'utf8').split('\n')[0]) as Record<string, number>;
    expect(first.advantage_global).toBeCloseTo(first.advantage, 12);
    expect(first).toHaveProperty('reward_shared');
    expect(first.advantage_agentwise).toBe(turnCounterfactual(store, first.turn_id)!.advantages.decoupled.agentwise);
  });
});

/**
 * One problem, many episodes (issue 40) in Chromium against `marsrl serve`: two seeded runs of the
 * same problems (decoupled / agent-wise and shared / global) at three steps. From Compare to the
 * problem list, the "outcome differs" filter, one problem as a grid of three steps × two runs whose
 * cells show the stored verdicts, rewards and advantages; from a turn of the trajectory browser to
 * its problem. The README's picture: docs/screenshots/problem-across-runs.png.
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedProblems, type SeededProblems } from '../helpers/seed';
import { keepScreenshot, screenshot } from './browser';
import { POLL, studioInChromium } from './studio-session';

let seeded: SeededProblems;
let page: Page;

const session = studioInChromium('problem', (store) => {
  seeded = seedProblems(store, { problems: 12, heldOut: 3, steps: [0, 10, 20] });
});
beforeAll(() => {
  ({ page } = session);
});


/** What the grid shows: per cell (run, step), the episode id and each turn's reward and advantage as the page's data attributes. */
async function gridCells() {
  return page.getByTestId('problem-episode').evaluateAll((cells) =>
    cells.map((cell) => ({
      runId: Number(cell.getAttribute('data-run-id')),
      step: Number(cell.getAttribute('data-step')),
      episodeId: Number(cell.getAttribute('data-episode-id')),
      turns: [...cell.querySelectorAll('[data-testid="problem-turn"]')].map((t) => ({ id: Number(t.getAttribute('data-turn-id')), reward: Number(t.getAttribute('data-reward')), advantage: Number(t.getAttribute('data-advantage')) })),
    })),
  );
}

describe('one problem across steps and runs in Chromium', () => {
  it('opens from Compare, filters the problems whose outcome differs, and shows 3 steps × 2 runs with stored credit', async () => {
    const runIds = seeded.runs.map((r) => r.id);
    await session.open(`#/compare?runs=${runIds.join(',')}`, { fresh: true });
    await page.getByTestId('compare-problems-link').click();
    await page.getByTestId('problem-view').waitFor();
    await expect.poll(() => page.getByTestId('problem-list').locator('button').count(), POLL).toBe(seeded.problems.length);
    // Held-out first.
    const firstChips = await page.getByTestId('problem-list').locator('button').evaluateAll((rows) => rows.map((r) => r.textContent?.includes('held-out') ?? false));
    expect(firstChips).toEqual(seeded.problems.map((p) => p.split === 'test').sort((a, b) => Number(b) - Number(a)));

    await page.getByTestId('problem-differs').check();
    const differing = seeded.problems.filter((p) => {
      const last = seeded.runs.map((r) => seeded.episodes.filter((e) => e.runId === r.id && e.matchKey === p.matchKey).sort((a, b) => a.step - b.step).at(-1)?.correct);
      return last.every((o) => o !== undefined) && last[0] !== last[1];
    });
    expect(differing.length).toBeGreaterThan(0);
    await expect.poll(() => page.getByTestId('problem-list').locator('button').count(), POLL).toBe(differing.length);
    // A differing training problem whose trees hold a Corrector's repair (the richest picture).
    const shown = differing.find((p) => p.split === 'train' && seeded.episodes.some((e) => e.matchKey === p.matchKey && e.turns.some((t) => t.agent === 'corrector1'))) ?? differing[0];
    await page.locator(`[data-problem-key="${shown.matchKey}"]`).click();
    await expect.poll(() => page.getByTestId('problem-header').innerText(), POLL).toContain(shown.question);
    await expect.poll(() => page.getByTestId('problem-step-row').allInnerTexts(), POLL).toEqual(['step 0', 'step 10', 'step 20']);
    expect((await page.getByTestId('problem-run-head').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim())).toEqual([
      `#${runIds[0]} ${seeded.runs[0].name} decoupled / agentwise`,
      `#${runIds[1]} ${seeded.runs[1].name} shared / global`,
    ]);
    const cells = await gridCells();
    const want = seeded.episodes.filter((e) => e.matchKey === shown.matchKey);
    expect(cells.map((c) => c.episodeId).sort()).toEqual(want.map((e) => e.episodeId).sort());
    for (const cell of cells) {
      const w = want.find((e) => e.episodeId === cell.episodeId)!;
      expect([cell.runId, cell.step]).toEqual([w.runId, w.step]);
      expect(cell.turns.map((t) => t.id).sort()).toEqual(w.turns.map((t) => t.id).sort());
      for (const t of cell.turns) {
        const s = w.turns.find((x) => x.id === t.id)!;
        expect(t.reward).toBe(s.reward);
        expect(t.advantage).toBeCloseTo(s.advantage, 9);
      }
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
    keepScreenshot(await screenshot(page, 'problem-across-runs'), 'problem-across-runs.png');

    // The step picker: two steps typed, two rows left; the URL keeps them.
    await page.getByTestId('problem-steps').fill('20, 0');
    await page.getByTestId('problem-steps').press('Enter');
    await expect.poll(() => page.getByTestId('problem-step-row').allInnerTexts(), POLL).toEqual(['step 0', 'step 20']);
    expect(decodeURIComponent(page.url())).toContain('steps=0,20');
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it("opens a turn's problem from the trajectory browser, across the run's steps", async () => {
    const episode = seeded.episodes.find((e) => e.runId === seeded.runs[1].id && e.step === 10 && e.matchKey === seeded.problems[5].matchKey)!;
    const turn = episode.turns[2];
    await session.open(`#/runs/${episode.runId}/trajectories?episode=${episode.episodeId}&turn=${turn.id}`, { fresh: true });
    await page.getByTestId('turn-problem-link').click();
    await page.getByTestId('problem-view').waitFor();
    await expect.poll(() => page.getByTestId('problem-header').innerText(), POLL).toContain(seeded.problems[5].question);
    await expect.poll(() => page.getByTestId('problem-step-row').allInnerTexts(), POLL).toEqual(['step 0', 'step 10', 'step 20']);
    const cells = await gridCells();
    expect(cells.map((c) => c.episodeId).sort()).toEqual(seeded.episodes.filter((e) => e.runId === episode.runId && e.matchKey === episode.matchKey).map((e) => e.episodeId).sort());
    expect(cells.find((c) => c.episodeId === episode.episodeId)?.turns.map((t) => t.id)).toContain(turn.id);
  });
});

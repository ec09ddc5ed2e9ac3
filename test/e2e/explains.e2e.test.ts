/**
 * Issue 18, "The interface tells the truth and explains itself", in Chromium against
 * `marsrl serve`: the numbers a chart shows are the logged numbers (smoothing marked, held-out
 * series drawn as logged, one unit per axis, titles that say what a panel holds). Screenshots
 * land in test-results/screenshots/ (the ones the issue names are copied to docs/screenshots/).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { compareRuns, loadRuns } from '../../src-main/engine/compare';
import type { Store } from '../../src-main/engine/store';
import { formatValue } from '#shared/format';
import { runColor } from '../../src-renderer/src/charts/compareOption';
import { seedStudy, type SeededStudy } from '../study/seed-study';
import { screenshot } from './browser';
import { Rng } from '../../src-main/engine/util/rng';
import { seedStudio, writeEpisode, writeSteps, type Seeded } from '../helpers/seed';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import { expandMatrix, parseMatrix } from '../../src-main/engine/study/matrix';
import { createStudy } from '../../src-main/engine/study/runner';
import { POLL, studioInChromium } from './studio-session';

let store: Store;
let seeded: Seeded;
let study: SeededStudy;
let groupStudy: SeededStudy;

/** A study varying a key no fixed column shows (the Solver's group size), one seed, runs left queued. */
function seedGroupStudy(db: Store): SeededStudy {
  const matrix = parseMatrix({ name: 'group-sizes', preset: 'quick', axes: { 'rollout.solver_group': [4, 16] }, seeds: [7], concurrency: 1 });
  const cells = expandMatrix(matrix);
  const studyId = createStudy(db, matrix, cells);
  const runIds = cells.map((cell) => {
    const config = resolveConfig(deepMerge(presetDocument('quick'), cell.overrides));
    const runId = db.runs.create({ name: `groups ${cell.label}`, preset: 'quick', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: cell.seed });
    db.studies.setCellRun(studyId, cell.cellIndex, runId);
    return runId;
  });
  return { studyId, runIds };
}
let page: Page;

/** Timings and the fixed judged set, as the pipeline trainer and the evaluator log them. */
function addTimingsAndFixedSet(db: Store, runId: number, steps: number): void {
  const writer = db.writer({ flushIntervalMs: 0 });
  for (let step = 0; step < steps; step++) {
    const wallTime = step * 3.1;
    writer.metric({ runId, step, wallTime, key: 'perf/rollout_s', value: 2.1 + (step % 5) * 0.05 });
    writer.metric({ runId, step, wallTime, key: 'perf/update_s', value: 0.8 + (step % 3) * 0.04 });
    if (step % 10 === 0 || step === steps - 1) {
      writer.metric({ runId, step, wallTime, key: 'eval/fixed/answers', value: 800 });
      writer.metric({ runId, step, wallTime, key: 'eval/fixed/wrong_share', value: 0.8 - step / 200 });
      writer.metric({ runId, step, wallTime, key: 'eval/system/margin', value: 0.135 });
    }
  }
  writer.close();
}

const session = studioInChromium('explains', (db) => {
  seeded = seedStudio(db);
  addTimingsAndFixedSet(db, seeded.done.id, seeded.done.steps);
  study = seedStudy(db, { steps: 12 });
  groupStudy = seedGroupStudy(db);
  db.events.addCheckpoint({ runId: seeded.running.id, step: 20, policyId: 'solver', path: 'checkpoints/step-20', createdAt: Date.now(), metrics: null });
});
beforeAll(() => {
  ({ store, page } = session);
});

const panel = (id: string) => page.locator(`[data-panel="${id}"]`);

/** Hover a panel's chart at a fraction of its width; returns the tooltip's words. */
async function hoverReadout(id: string, fraction: number): Promise<string> {
  await panel(id).scrollIntoViewIfNeeded();
  const canvas = panel(id).locator('canvas').first();
  await canvas.waitFor();
  const box = (await canvas.boundingBox())!;
  await canvas.hover({ position: { x: box.width * fraction, y: box.height / 2 } });
  const readout = panel(id).getByTestId('panel-readout');
  await expect.poll(async () => (await readout.textContent())?.trim() ?? '', POLL).not.toBe('');
  return (await readout.textContent())!.trim();
}

describe('numbers shown are the numbers (issue 18)', () => {
  it('draws held-out series as logged, and shows value and smoothed side by side where it smooths', async () => {
    const run = seeded.done;
    await session.open(`#/runs/${run.id}`);
    await panel('train:grad_norm').waitFor();
    // The default smoothing leaves every held-out panel alone and marks the training panels it smooths.
    const evalPanels = page.locator('[data-section="eval"] [data-panel]');
    await expect.poll(() => evalPanels.count(), POLL).toBeGreaterThan(2);
    // A panel is drawn before its series arrive (data-points 0, nothing smoothed yet): read the
    // marks once the panels under test hold their points.
    await expect.poll(() => panel('train:grad_norm').getAttribute('data-points'), POLL).not.toBe('0');
    await expect.poll(() => page.locator('[data-section="eval"] [data-panel][data-points="0"]').count(), POLL).toBe(0);
    expect(await page.locator('[data-section="eval"] [data-smoothed="true"]').count()).toBe(0);
    expect(await panel('train:grad_norm').getAttribute('data-smoothed')).toBe('true');
    expect(await panel('train:grad_norm').getByTestId('smoothed-mark').textContent()).toContain('0.60');
    expect(await page.locator('[data-section="eval"]').getByTestId('smoothed-mark').count()).toBe(0);

    // The last held-out point reads the value the run logged, to the digit.
    const last = await hoverReadout('eval:accuracy', 0.95);
    const logged = store.metrics.latest(run.id, ['eval/system/accuracy'])['eval/system/accuracy'];
    expect(last).toContain(`step ${run.steps - 1}`);
    expect(last).toMatch(new RegExp(`system\\s+value ${formatValue(logged).replace('.', '\\.')}(\\n|$)`));
    expect(last).not.toContain('smoothed');

    // A smoothed training panel gives both numbers: the logged value and the curve's.
    const train = await hoverReadout('train:grad_norm', 0.5);
    const step = Number(/^step (\d+)/.exec(train)?.[1]);
    const at = store.metrics.series(run.id, 'solver/grad_norm', step - 1, 1).items[0];
    expect(at.step).toBe(step);
    expect(train).toMatch(new RegExp(`solver\\s+value ${formatValue(at.value).replace('.', '\\.')} · smoothed \\d`));
    await screenshot(page, 'dashboard-tooltip');

    // Asking for it smooths the held-out series too.
    await page.getByLabel('Smooth held-out and short series too').check();
    await expect.poll(() => panel('eval:accuracy').getAttribute('data-smoothed'), POLL).toBe('true');
    await page.getByLabel('Smooth held-out and short series too').uncheck();
  });

  it('puts one unit on an axis and titles panels by what they hold', async () => {
    const run = seeded.done;
    await session.open(`#/runs/${run.id}`);
    await panel('train:grad_norm').waitFor();
    // perf: seconds apart from tokens/s; fixed: the count apart from the share.
    await expect.poll(() => panel('train:perf:seconds').getAttribute('data-unit'), POLL).toBe('seconds');
    expect(await panel('train:perf:tokens-s').getAttribute('data-unit')).toBe('tokens/s');
    expect(await panel('eval:fixed:count').locator('.legend, .panel__latest').textContent()).toContain('800');
    expect(await panel('eval:fixed:share').getAttribute('data-unit')).toBe('share');
    // The margin's panel says it is the margin, and its corner value says it is the last one.
    const margin = page.locator('[data-panel^="eval:system"]').filter({ hasText: 'System − Solver accuracy' });
    expect(await margin.count()).toBe(1);
    expect((await margin.locator('.panel__latest').textContent())?.replace(/\s+/g, ' ').trim()).toBe('last 0.1350');
    expect(await margin.locator('.panel__title').getAttribute('title')).toContain('minus the Solver alone');
    const corrector = panel('train:corrector1');
    expect(await corrector.locator('.panel__title').textContent()).toContain('Corrector fix rate');
  });
});

describe("compare's bands say what they stand on (issue 18)", () => {
  it('names the seeds under a 95% CI, warns at two, clips it to the metric range, and explains the metric', async () => {
    await session.open(`#/compare?study=${study.studyId}`, { fresh: true });
    await page.getByTestId('group-table').waitFor();
    await page.getByLabel('Metric', { exact: true }).selectOption('eval/system/accuracy');
    await page.getByRole('radio', { name: '95% CI' }).click();
    const notes = page.getByTestId('band-notes').locator('li');
    await expect.poll(() => notes.count(), POLL).toBe(4);
    for (const text of await notes.allInnerTexts()) {
      expect(text).toMatch(/95% CI \(Student t\) over n = 2 seeds · too few seeds for a meaningful interval; use 3\+ seeds or min–max · clipped to the metric's range \[0, 1\]/);
    }
    expect(await page.getByTestId('band-notes').getByRole('alert').count()).toBe(4);
    // min–max needs no warning; the seeds are still named.
    await page.getByRole('radio', { name: 'min–max' }).click();
    await expect.poll(() => page.getByTestId('band-notes').getByRole('alert').count(), POLL).toBe(0);
    expect(await notes.first().innerText()).toContain('min–max over n = 2 seeds');
    // The metric picker and the line under it say what the metric is, from the catalog.
    expect(await page.getByLabel('Metric', { exact: true }).locator('option:checked').innerText()).toBe('eval/system/accuracy — Accuracy');
    expect(await page.getByTestId('metric-description').innerText()).toContain('Held-out evaluation (for the whole chain)');
    await page.getByRole('radio', { name: '95% CI' }).click();
    await expect.poll(() => page.getByTestId('band-notes').getByRole('alert').count(), POLL).toBe(4);
    await page.waitForTimeout(300);
    await screenshot(page, 'compare-warning-band');
  });
});

describe('exports from the browser land in the documented exports folder (issue 18)', () => {
  it('resolves a relative path against the per-user exports folder, shows the full path, and words errors for the form', async () => {
    const run = seeded.done;
    const exportsFolder = path.join(session.dir, 'home', 'exports');
    const dialog = await session.openRunExport(run.id);
    // The default name is unique per run: it carries the run id.
    expect(await dialog.getByTestId('export-out').inputValue()).toContain(`-run${run.id}-`);
    await dialog.locator('[data-format="sft"]').click();
    await dialog.getByTestId('export-out').fill('relative-sft.jsonl');
    const full = path.join(exportsFolder, 'relative-sft.jsonl');
    await expect.poll(() => dialog.getByTestId('export-out-resolved').innerText(), POLL).toBe(`Writes ${full}`);
    await dialog.getByTestId('export-start').click();
    await dialog.getByTestId('export-result').waitFor({ timeout: POLL.timeout });
    expect((await dialog.getByTestId('export-out-path').innerText()).trim()).toBe(full);
    expect(fs.existsSync(full)).toBe(true);
    // The server's working directory (the checkout) got nothing.
    expect(fs.existsSync(path.resolve('relative-sft.jsonl'))).toBe(false);

    // The same file again: the advice names the dialog's button, not a CLI flag.
    await dialog.getByTestId('export-again').click();
    await dialog.getByTestId('export-start').click();
    const issue = dialog.locator('[data-issue-path="out"]');
    await issue.waitFor();
    expect(await issue.innerText()).toContain('press "Replace it (force)" to overwrite it');
    expect(await issue.innerText()).not.toContain('--force');
    // The refused call is logged by the browser as a failed request.
    session.problems.errors = session.problems.errors.filter((e) => !/status of 400/.test(e));
  });
});

describe('task notation explained next to the turn (issue 18)', () => {
  it("shows the sort family's own description of the Verifier's and the Solver's notation", async () => {
    const run = seeded.done;
    const turns = store.trajectories.episodeTurns(seeded.rejectingEpisodeId);
    const verifier = turns.find((t) => t.agent === 'verifier1')!;
    const solver = turns.find((t) => t.agent === 'solver')!;
    await session.open(`#/runs/${run.id}/trajectories?step=20`, { fresh: true });
    await page.locator(`.pane--list [data-episode-id="${seeded.rejectingEpisodeId}"]`).click();
    const treeRow = (id: number) => page.locator(`[role="tree"] [data-turn-id="${id}"]`);
    await treeRow(verifier.id).click();
    const notation = page.getByTestId('turn-notation');
    await expect.poll(() => notation.locator('dt').allInnerTexts(), POLL).toEqual(['s:0=1=2x3…', 'V:ok / V:no']);
    expect(await notation.innerText()).toContain("The question's digits re-sorted, each followed by = when the answer has the same digit");
    // The tree says which answer is final and why a branch went no further.
    const episode = store.trajectories.getEpisode(seeded.rejectingEpisodeId)!;
    const finals = await page.locator('[role="tree"] [data-turn-id]:has([data-testid="final-mark"])').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-turn-id'))));
    expect(finals.length).toBeGreaterThan(0);
    for (const id of finals) expect(turns.find((x) => x.id === id)?.parsed).toBe(episode.finalAnswer);
    const stops = await page.getByTestId('stop-mark').allInnerTexts();
    expect(stops).toContain('■ not judged: selection kept 2 of 8');
    expect(stops.some((s) => s === '■ round limit reached' || s.startsWith('■ approved'))).toBe(true);
    await treeRow(solver.id).click();
    await expect.poll(() => notation.locator('dt').allInnerTexts(), POLL).toEqual(['c:1111011111', 'A:']);
    expect(await notation.innerText()).toContain('How many times each digit 0…9 occurs in the question');
  });
});

describe('trajectories a researcher can interrogate (issue 18)', () => {
  /**
   * The episodes listed: the count the list holds, and the ids of the rows drawn (the list is
   * virtual, so only the first screenful is in the page), as one comparable value.
   */
  const listed = async () => {
    const count = Number(await page.getByTestId('episode-filters').getAttribute('data-episode-count'));
    const shown = await page.locator('.pane--list [data-episode-id]').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-episode-id'))));
    return { count, shown };
  };
  /** Polls until the list holds exactly `ids` (in order, as far as it is drawn). */
  async function expectListed(ids: number[]): Promise<void> {
    await expect
      .poll(async () => {
        const { count, shown } = await listed();
        const ok = count === ids.length && (ids.length === 0 || shown.length > 0) && shown.every((id, i) => id === ids[i]);
        return ok ? 'ok' : JSON.stringify({ count, shown, want: ids });
      }, POLL)
      .toBe('ok');
  }
  const expectedIds = (query: Omit<Parameters<Store['trajectories']['pageEpisodes']>[0], 'runId'>, runId = seeded.done.id) =>
    store.trajectories.pageEpisodes({ runId, limit: 100, ...query }).items.map((e) => e.id);

  it("opens on the latest step's training episodes and filters by outcome, Verifier and Corrector errors, step range and text", async () => {
    const run = seeded.done;
    await session.open(`#/runs/${run.id}/trajectories`, { fresh: true });
    await expect.poll(() => page.getByTestId('step-input').inputValue(), POLL).toBe('59');
    expect(page.url()).toContain('step=59');
    expect(await page.getByTestId('filter-split').inputValue()).toBe('train');
    await expectListed(expectedIds({ step: 59, split: 'train' }));

    await page.getByTestId('filter-outcome').selectOption('unsolved');
    await expectListed(expectedIds({ step: 59, split: 'train', outcome: 'unsolved' }));
    await page.getByTestId('filter-outcome').selectOption('');

    // Every step, between 10 and 50, where a Corrector fixed a wrong answer.
    await page.getByRole('button', { name: 'All steps' }).click();
    await page.getByTestId('filter-step-from').fill('10');
    await page.getByTestId('filter-step-from').press('Tab');
    await page.getByTestId('filter-step-to').fill('50');
    await page.getByTestId('filter-step-to').press('Tab');
    await page.getByTestId('filter-corrector').selectOption('fixed');
    const fixed = expectedIds({ split: 'train', stepFrom: 10, stepTo: 50, corrector: 'fixed' });
    expect(fixed.length).toBeGreaterThan(0);
    await expectListed(fixed);
    await page.getByTestId('filter-corrector').selectOption('');
    await page.getByTestId('filter-verifier').selectOption('false_approve');
    await expectListed(expectedIds({ split: 'train', stepFrom: 10, stepTo: 50, verifier: 'false_approve' }));
    await page.getByTestId('filter-verifier').selectOption('false_reject');
    await expectListed(expectedIds({ split: 'train', stepFrom: 10, stepTo: 50, verifier: 'false_reject' }));
    await page.getByTestId('filter-verifier').selectOption('');

    // Text search in prompts and outputs: the digits of one episode's question.
    const question = store.trajectories.getEpisode(seeded.rejectingEpisodeId)!;
    const digits = store.trajectories.getProblem(question.problemId!)!.question.replace(/^sort /, '');
    await page.getByTestId('filter-search').fill(digits);
    await expectListed(expectedIds({ split: 'train', stepFrom: 10, stepTo: 50, search: digits }));
    expect(expectedIds({ split: 'train', stepFrom: 10, stepTo: 50, search: digits })).toContain(seeded.rejectingEpisodeId);
    await page.locator(`.pane--list [data-episode-id="${seeded.rejectingEpisodeId}"]`).click();
    await page.getByTestId('turn-detail').waitFor();
    await screenshot(page, 'trajectory-filters');
  });

  it('grows while the run writes: counts and new episodes arrive without a reload', async () => {
    const run = seeded.running;
    await session.open(`#/runs/${run.id}/trajectories`, { fresh: true });
    await expect.poll(() => page.getByTestId('step-input').inputValue(), POLL).toBe('20');
    await page.getByRole('button', { name: 'All steps' }).click();
    await expectListed(expectedIds({ split: 'train' }, run.id));
    const before = (await listed()).count;
    // Another process trains on: two steps, and the episodes of step 25.
    const rng = new Rng(5, 'live-trajectories');
    const writer = store.writer({ flushIntervalMs: 0 });
    writeSteps(store, writer, run, 24, 26, rng);
    for (let p = 0; p < 3; p++) writeEpisode(writer, run.id, 25, 'train', rng, Date.now(), false);
    writer.close();
    await expectListed(expectedIds({ split: 'train' }, run.id));
    expect((await listed()).count).toBe(before + 3);
    const episodes = store.trajectories.pageEpisodes({ runId: run.id, limit: 1000 }).items.length;
    await expect.poll(() => page.locator('.traj__counts').innerText(), POLL).toContain(`${episodes} episodes`);
  });

  it('connects the live channel on a direct load of any page', async () => {
    for (const hash of ['#/new', `#/runs/${seeded.done.id}/trajectories`]) {
      await page.goto('about:blank');
      await page.goto(`${session.served.url}${hash}`);
      await expect.poll(() => page.getByTestId('connection').getAttribute('data-state'), POLL).toBe('open');
    }
  });
});

describe('runs that can be told apart (issue 18)', () => {
  it('shows each run’s seed, opens a run with one click on its name, and compares runs picked with ctrl/shift-click', async () => {
    await session.open('#/runs', { fresh: true });
    const row = (id: number) => page.locator(`[role="rowgroup"] [data-run-id="${id}"]`);
    await row(seeded.done.id).waitFor();
    // The seed column tells runs apart whose names differ only at the end.
    for (const id of study.runIds) {
      await row(id).scrollIntoViewIfNeeded();
      expect(await row(id).getByTestId('run-seed').innerText()).toBe(String(store.runs.get(id)!.seed));
    }
    const [a, b, c] = study.runIds;
    await row(a).scrollIntoViewIfNeeded();
    await row(a).locator('[role="cell"]').nth(3).click();
    await row(b).locator('[role="cell"]').nth(3).click({ modifiers: ['Control'] });
    expect(await page.getByTestId('compare-picked').innerText()).toBe('Compare 2');
    await row(c).locator('[role="cell"]').nth(3).click({ modifiers: ['Shift'] });
    const picked = await page.locator('[role="rowgroup"] [data-picked="true"]').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-run-id'))));
    const ids = await page.locator('[role="rowgroup"] [data-run-id]').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-run-id'))));
    // Shift-click adds the range between the last picked run and this one.
    const [lo, hi] = [ids.indexOf(b), ids.indexOf(c)].sort((x, y) => x - y);
    expect(new Set(picked)).toEqual(new Set([a, ...ids.slice(lo, hi + 1)]));
    await screenshot(page, 'runs-table-multiselect');
    await page.getByTestId('compare-picked').click();
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe(`Compare ${picked.length} runs`);
    expect(page.url()).toMatch(/#\/compare\?runs=/);

    // At 1024 px every column fits, the details pane open or not, and no header is cut mid-word.
    await session.open('#/runs', { fresh: true });
    try {
      for (const [width, detailsOpen] of [[1024, false], [1024, true], [1440, true]] as const) {
        await page.setViewportSize({ width, height: 768 });
        if (detailsOpen && !(await page.getByTestId('run-details').isVisible())) await row(seeded.done.id).locator('[role="cell"]').nth(2).click();
        const table = (await page.getByRole('table', { name: 'Runs' }).boundingBox())!;
        for (const name of ['Eval acc', 'Step', 'Age', 'Seed']) {
          const box = (await page.getByRole('columnheader', { name }).boundingBox())!;
          expect(box.x + box.width, `${name} with details ${detailsOpen}`).toBeLessThanOrEqual(table.x + table.width + 0.5);
        }
        const cut = await page.locator('[role="columnheader"] .sort').evaluateAll((els) => els.filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.textContent));
        expect(cut, `headers at ${width} px`).toEqual([]);
        const cells = await page.locator('[role="rowgroup"] [data-col="lastStep"], [role="rowgroup"] [data-col="evalAccuracy"]').evaluateAll((els) => els.filter((el) => (el as HTMLElement).offsetWidth > 0 && el.scrollWidth > el.clientWidth + 1).map((el) => el.textContent));
        expect(cells, `accuracy cells at ${width} px`).toEqual([]);
      }
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }

    // One click on a name opens the run.
    await session.open('#/runs', { fresh: true });
    await row(seeded.done.id).locator('.runs__name').click({ position: { x: 4, y: 8 } });
    await expect.poll(() => page.url(), POLL).toContain(`#/runs/${seeded.done.id}`);
    await page.getByTestId('run-name').waitFor();
  });
});

describe('runs told apart by their config (issue 18)', () => {
  const row = (id: number) => page.locator(`[role="rowgroup"] [data-run-id="${id}"]`);
  const cell = (id: number, column: string) => row(id).locator(`[data-extra-col="${column}"]`);

  it("shows a study run's cell values as columns, picks a study's runs for Compare, and adds any config key as a kept column", async () => {
    await page.evaluate(() => window.localStorage.clear());
    await session.open('#/runs', { fresh: true });
    await row(groupStudy.runIds[0]).waitFor();
    // The varied key no fixed column shows becomes a column; every study run names its study and cell.
    const axisHeader = page.locator('[role="columnheader"][data-extra-col="study:rollout.solver_group"]');
    expect((await axisHeader.innerText()).toLowerCase().replace(/\s+/g, ' ')).toBe('solver group');
    expect(await axisHeader.getAttribute('title')).toBe('rollout.solver_group (a study axis)');
    // Not cut: the header wraps at its words instead.
    expect(await axisHeader.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    for (const id of groupStudy.runIds) {
      const groupSize = String((store.runs.get(id)!.config.rollout as { solver_group: number }).solver_group);
      expect(await cell(id, 'study:rollout.solver_group').innerText()).toBe(groupSize);
      expect(await cell(id, 'study').innerText()).toBe(`#${groupStudy.studyId} group-sizes`);
    }
    expect(await cell(seeded.done.id, 'study').innerText()).toBe('—');

    // "Pick a study's runs", then Compare N opens Compare with exactly them.
    await page.getByTestId('pick-study').selectOption(String(study.studyId));
    const picked = await page.locator('[role="rowgroup"] [data-picked="true"]').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-run-id'))));
    expect(new Set(picked)).toEqual(new Set(study.runIds));
    expect(await page.getByTestId('compare-picked').innerText()).toBe(`Compare ${study.runIds.length}`);
    await screenshot(page, 'runs-table-study-columns');
    await page.getByTestId('compare-picked').click();
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe(`Compare ${study.runIds.length} runs`);
    const compared = decodeURIComponent(new URL(page.url()).hash.split('runs=')[1]?.split('&')[0] ?? '').split(',').map(Number);
    expect(new Set(compared)).toEqual(new Set(study.runIds));

    // Any config key as a column: picked from the config paths, filled from each run's config, kept after a reload.
    await session.open('#/runs', { fresh: true });
    await row(seeded.done.id).waitFor();
    await page.getByTestId('column-picker').click();
    await page.getByLabel('Filter config paths').fill('solver_group');
    const columnPath = await page.getByTestId('column-picker-panel').locator('input[type="checkbox"]').first().getAttribute('data-path');
    expect(columnPath).toBe('rollout.solver_group');
    await page.getByTestId('column-picker-panel').locator(`input[data-path="${columnPath}"]`).check();
    const configValue = (id: number) => String(columnPath!.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], store.runs.get(id)!.config));
    await expect.poll(() => cell(seeded.done.id, `config:${columnPath}`).innerText(), POLL).toBe(configValue(seeded.done.id));
    expect(await page.evaluate(() => window.localStorage.getItem('marsrl.runs.configColumns'))).toBe(JSON.stringify([columnPath]));
    await session.open('#/runs', { fresh: true });
    for (const id of [seeded.done.id, ...groupStudy.runIds]) {
      await expect.poll(() => cell(id, `config:${columnPath}`).innerText(), POLL).toBe(configValue(id));
    }
    await page.evaluate(() => window.localStorage.clear());
  });
});

describe('compare that can be driven (issue 18)', () => {
  it('keeps the run chooser open while choosing, selects all, shows the baseline, and wraps the legend', async () => {
    await session.open('#/compare', { fresh: true });
    const chooser = page.getByTestId('run-chooser');
    expect(await chooser.getAttribute('open')).not.toBeNull();
    await chooser.getByLabel('Filter runs').fill('seeded');
    await chooser.locator('label', { hasText: `#${study.runIds[0]} ` }).locator('input').check();
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe('Compare 1 run');
    expect(await chooser.getAttribute('open')).not.toBeNull();
    await chooser.locator('label', { hasText: `#${study.runIds[1]} ` }).locator('input').check();
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe('Compare 2 runs');
    expect(await chooser.getAttribute('open')).not.toBeNull();
    await chooser.getByTestId('select-shown').click();
    await expect.poll(() => page.locator('h1').innerText(), POLL).toBe(`Compare ${study.runIds.length} runs`);
    const first = store.runs.get(study.runIds[0])!;
    await expect.poll(() => page.getByLabel('Baseline run').locator('option:checked').innerText(), POLL).toBe(`first run (#${first.id} ${first.name})`);
  });
});

describe('compare more than one metric at a time (issue 18)', () => {
  it('draws one chart per chosen metric, the same runs in the same colours, and removes one again', async () => {
    // A run without metrics first: colours follow a run's place among the compared runs, not the drawn line's.
    const ids = [groupStudy.runIds[0], ...study.runIds.slice(0, 3)];
    await session.open(`#/compare?runs=${ids.join(',')}`, { fresh: true });
    const charts = page.locator('[data-testid="compare-chart"], [data-testid="compare-multiple"]');
    await expect.poll(() => charts.count(), POLL).toBe(1);
    const add = page.getByTestId('add-metric');
    await expect.poll(() => add.locator('option[value="system/accuracy"]').count(), POLL).toBe(1);
    await add.selectOption('system/accuracy');
    await add.selectOption('eval/system/pass@4');
    const metrics = () => charts.evaluateAll((els) => els.map((el) => el.getAttribute('data-metric')));
    await expect.poll(metrics, POLL).toEqual(['eval/system/accuracy', 'system/accuracy', 'eval/system/pass@4']);
    for (let i = 0; i < 3; i++) await charts.nth(i).locator('canvas').first().waitFor();
    // Every chart draws the same runs (an empty line for the run without metrics), each in its own colour everywhere.
    const expected = ids.map((id) => `${id}=${runColor(ids.indexOf(id))}`).join(' ');
    await expect.poll(() => charts.evaluateAll((els) => els.map((el) => el.getAttribute('data-lines'))), POLL).toEqual([expected, expected, expected]);
    expect(await page.getByTestId('compare-multiple').first().locator('.multiple__title').innerText()).toContain('system/accuracy');
    // One legend for all the small multiples, naming each run once.
    expect(await page.getByTestId('shared-legend').locator('li').allInnerTexts()).toEqual(ids.map((id) => `#${id} ${store.runs.get(id)!.name}`));
    // Side by side at 1440 px: the small multiples share rows.
    const boxes = await Promise.all([0, 1].map(async (i) => (await charts.nth(i).boundingBox())!));
    expect(Math.abs(boxes[0].y - boxes[1].y)).toBeLessThan(1);
    await screenshot(page, 'compare-small-multiples');
    await page.getByRole('button', { name: 'Remove the system/accuracy chart' }).click();
    await expect.poll(metrics, POLL).toEqual(['eval/system/accuracy', 'eval/system/pass@4']);
  });
});

describe('runs that stop (issue 18)', () => {
  it('asks before stopping and says how many steps since the last checkpoint a resume redoes', async () => {
    const run = seeded.running;
    await session.open(`#/runs/${run.id}`, { fresh: true });
    await page.getByTestId('stop-run').click();
    const text = await page.getByTestId('stop-redo').innerText();
    const step = Number(/step (\d+) \//.exec(await page.getByTestId('run-step').innerText())?.[1]);
    expect(step).toBeGreaterThan(20);
    expect(text).toContain(`The last checkpoint is at step 20; ${step - 20} steps since then will be redone on resume.`);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.getByTestId('stop-redo').isVisible(), POLL).toBe(false);
    expect(store.runs.get(run.id)!.status).toBe('running');
  });
});

describe('the study report in the app (issue 18)', () => {
  it('shows the group table, the differences beyond the seed spread and the accuracy chart on the Studies page', async () => {
    await session.open(`#/studies/${study.studyId}`, { fresh: true });
    const report = page.getByTestId('study-report');
    await report.getByTestId('study-group-table').waitFor();
    const headers = (await report.getByTestId('study-group-table').locator('thead th').allInnerTexts()).map((h) => h.replace(/\s+/g, ' ').trim());
    expect(headers).toEqual(['metric', 'decoupled / agentwise n=2 · baseline', 'decoupled / global n=2', 'shared / agentwise n=2', 'shared / global n=2']);
    // The same differences the engine's comparison finds beyond the seed spread.
    const runs = loadRuns(store, study.runIds);
    const result = compareRuns(runs, { groupBy: ['reward.scheme', 'advantage.mode'], baselineGroup: 'decoupled / agentwise' });
    const exceeding = result.groups.flatMap((g) => (g.label === result.baselineGroup ? [] : result.metrics.filter((m) => g.spread[m.id]?.exceeds).map((m) => `${g.label}: ${m.label}`)));
    const notes = await report.getByTestId('study-spread-notes').locator('li').allInnerTexts();
    expect(notes.map((n) => n.split(' Δ ')[0])).toEqual(exceeding.length ? exceeding : ['None: every difference lies within the spread across seeds.']);
    await report.getByTestId('study-chart').locator('canvas').waitFor();
    await report.evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await page.waitForTimeout(300);
    await screenshot(page, 'study-report');
  });
});

describe('a run that stopped and resumed (issue 18)', () => {
  const MINUTE = 60_000;
  /** Ran 10 minutes, stood stopped 50, resumed and ran 5 more: 15 minutes of running time. */
  function seedResumedRun(db: Store): number {
    const t0 = Date.now() - 3 * 3600_000;
    const config = resolveConfig(presetDocument('quick')) as unknown as Record<string, unknown>;
    const runId = db.runs.create({ name: 'stopped and resumed', preset: 'quick', config, codeVersion: 'test', seed: 5 }, t0);
    db.runs.setStatus(runId, 'running', null, t0);
    const writer = db.writer({ flushIntervalMs: 0 });
    for (let step = 0; step < 10; step++) writer.metric({ runId, step, wallTime: step * 60, key: 'system/accuracy', value: 0.5 + step / 100 });
    writer.close();
    db.events.insertEvent.run({ runId, step: 10, time: t0 + 10 * MINUTE, level: 'warning', kind: 'interrupted', message: 'stopped before step 10: stopped by the user', data: null });
    db.runs.setStatus(runId, 'interrupted', 'stopped by the user', t0 + 10 * MINUTE);
    db.events.insertEvent.run({ runId, step: 8, time: t0 + 60 * MINUTE, level: 'info', kind: 'resumed', message: 'resumed from the checkpoint of step 8', data: null });
    db.runs.setStatus(runId, 'running', null, t0 + 60 * MINUTE);
    db.runs.setStatus(runId, 'interrupted', 'worker lost', t0 + 65 * MINUTE);
    return runId;
  }

  it('counts running time only in "ran for", and keeps the last step while a resume sets up', async () => {
    const runId = seedResumedRun(store);
    // Every event the server pushes passes through; the test adds the ones a resuming worker sends.
    let socket: Parameters<Parameters<Page['routeWebSocket']>[1]>[0] | null = null;
    await page.routeWebSocket(/\/ws(\?|$)/, (ws) => {
      ws.connectToServer();
      socket = ws;
    });
    await session.open(`#/runs/${runId}`, { fresh: true });
    // 10 minutes before the stop and 5 after the resume; the 50 minutes stopped are left out.
    await expect.poll(() => page.getByTestId('run-elapsed').innerText(), POLL).toBe('· ran for 15m00s');
    const stepText = () => page.getByTestId('run-step').innerText();
    await expect.poll(stepText, POLL).toMatch(/^step 9 \/ \d+$/);
    expect(socket).not.toBeNull();
    const totalSteps = Number(/\/ (\d+)$/.exec(await stepText())![1]);
    const push = (step: number) => socket!.send(JSON.stringify({ type: 'run-progress', runId, step, totalSteps, metrics: {} }));
    // The resumed worker's setup reports step 0: the counter keeps step 9 until a later step arrives.
    push(0);
    await page.waitForTimeout(500);
    expect(await stepText()).toBe(`step 9 / ${totalSteps}`);
    push(12);
    await expect.poll(stepText, POLL).toBe(`step 12 / ${totalSteps}`);
  });
});

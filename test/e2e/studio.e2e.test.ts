/**
 * The Studio in a real browser: Debian's Chromium (playwright-core) against `marsrl serve`
 * started as a user starts it, on a database seeded the way training writes. Live updates come
 * from this test process writing to the database like a training worker in another process;
 * the server's watcher pushes them over the WebSocket. Screenshots of every view are saved under
 * test-results/screenshots/.
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig, validateConfig } from '../../src-main/engine/preflight';
import type { Store } from '../../src-main/engine/store';
import { Rng } from '../../src-main/engine/util/rng';
import { describeParsed } from '../../src-renderer/src/util/episodeTree';
import { screenshot } from './browser';
import { POLL, studioInChromium } from './studio-session';
import { seedStudio, writeSteps, type Seeded } from '../helpers/seed';

let store: Store;
let seeded: Seeded;
let scratchRunId: number;
let page: Page;

const session = studioInChromium('studio', (db) => {
  seeded = seedStudio(db);
  scratchRunId = db.runs.create({ name: 'scratch run to delete', preset: 'quick', config: resolveConfig(presetDocument('quick')) as unknown as Record<string, unknown>, codeVersion: 'e2e', seed: 9 });
  db.runs.setStatus(scratchRunId, 'running');
  db.runs.setStatus(scratchRunId, 'interrupted', 'stopped by the user');
});
beforeAll(() => {
  ({ store, page } = session);
});
const open = (hash: string) => session.open(hash);

/** Points drawn by a dashboard panel (the sum over its series). */
const panelPoints = (id: string) => page.locator(`[data-panel="${id}"]`).getAttribute('data-points').then(Number);

function metricCount(runId: number, keys: string[]): number {
  return keys.reduce((n, key) => n + store.metrics.series(runId, key, -Infinity, 1_000_000).items.length, 0);
}

describe('Studio in Chromium against marsrl serve', () => {
  it('lists runs: sorts, filters, edits tags and notes, deletes after confirmation', async () => {
    await open('#/runs');
    const rows = page.locator('[role="rowgroup"] [data-run-id]');
    await expect.poll(() => rows.count(), POLL).toBe(4);
    // Newest first by default.
    expect(await rows.first().getAttribute('data-run-id')).toBe(String(scratchRunId));

    // Sorting by held-out accuracy puts the best run first (highest eval/system/accuracy).
    const best = [seeded.done, seeded.running, seeded.failed]
      .map((r) => ({ id: r.id, acc: store.metrics.latest(r.id, ['eval/system/accuracy'])['eval/system/accuracy'] }))
      .sort((a, b) => b.acc - a.acc)[0];
    await page.getByRole('button', { name: 'Eval acc' }).click();
    await expect.poll(() => rows.first().getAttribute('data-run-id'), POLL).toBe(String(best.id));
    await expect.poll(() => page.getByRole('columnheader', { name: 'Eval acc' }).getAttribute('aria-sort'), POLL).toBe('descending');

    await page.getByRole('radio', { name: 'Failed' }).click();
    await expect.poll(() => rows.count(), POLL).toBe(1);
    expect(await rows.first().getAttribute('data-run-id')).toBe(String(seeded.failed.id));
    await page.getByRole('radio', { name: 'All' }).click();
    await expect.poll(() => rows.count(), POLL).toBe(4);
    await page.getByRole('combobox', { name: 'Filter by reward scheme' }).selectOption('shared');
    await expect.poll(() => rows.count(), POLL).toBe(1);
    await page.getByRole('combobox', { name: 'Filter by reward scheme' }).selectOption({ label: 'Any reward' });

    // Tags and notes, saved through the API into the database.
    await page.locator(`[role="rowgroup"] [data-run-id="${seeded.failed.id}"]`).click();
    const details = page.getByTestId('run-details');
    await details.waitFor();
    await details.getByLabel('Add a tag').fill('needs-rerun');
    await details.getByLabel('Add a tag').press('Enter');
    await details.getByTestId('notes').fill('Diverged: lr 1e-3 is too high for these policies.');
    await details.getByRole('button', { name: 'Save' }).click();
    await details.getByText('Saved').waitFor();
    const saved = store.runs.get(seeded.failed.id)!;
    expect(saved.tags).toEqual(['lr-sweep', 'needs-rerun']);
    expect(saved.notes).toBe('Diverged: lr 1e-3 is too high for these policies.');
    await expect.poll(() => page.locator(`[data-run-id="${seeded.failed.id}"] .tag`).allTextContents(), POLL).toEqual(['lr-sweep', 'needs-rerun']);
    await screenshot(page, 'runs');

    // Delete asks first; cancelling keeps the run, confirming removes it everywhere.
    await page.locator(`[role="rowgroup"] [data-run-id="${scratchRunId}"]`).click();
    await details.getByRole('button', { name: 'Delete…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await screenshot(page, 'runs-delete-confirmation');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(store.runs.get(scratchRunId)).not.toBeNull();
    await details.getByRole('button', { name: 'Delete…' }).click();
    await dialog.getByRole('button', { name: 'Delete run' }).click();
    await expect.poll(() => rows.count(), POLL).toBe(3);
    expect(store.runs.get(scratchRunId)).toBeNull();
  });

  it('shows a live dashboard: charts grow as the run trains, pushed over the WebSocket', async () => {
    const run = seeded.running;
    await open(`#/runs/${run.id}`);
    await page.getByTestId('run-name').filter({ hasText: run.name }).waitFor();
    const gradKeys = ['solver/grad_norm', 'verifier1/grad_norm', 'corrector1/grad_norm'];
    await expect.poll(() => panelPoints('train:grad_norm'), POLL).toBe(metricCount(run.id, gradKeys));
    const before = await panelPoints('train:grad_norm');
    // Panels come from the keys the run logged, grouped by namespace, not from a fixed list.
    expect(await page.locator('[data-section="eval"] [data-panel]').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-panel="train:advantage"]').count()).toBe(1);
    // Hovering draws the (canvas) tooltip; the CSP check after the test covers it.
    // Charts are created when scrolled into view.
    await page.locator('[data-panel="train:grad_norm"]').scrollIntoViewIfNeeded();
    const canvas = page.locator('[data-panel="train:grad_norm"] canvas').first();
    await canvas.hover({ position: { x: 200, y: 90 } });

    // Another process trains six more steps; nothing in the page polls.
    const writer = store.writer({ flushIntervalMs: 0 });
    writeSteps(store, writer, run, 24, 30, new Rng(21, 'live'));
    writer.close();
    await expect.poll(() => panelPoints('train:grad_norm'), POLL).toBe(metricCount(run.id, gradKeys));
    expect(await panelPoints('train:grad_norm')).toBe(before + 18);
    await expect.poll(() => page.getByTestId('run-step').textContent(), POLL).toMatch(/step 29 \/ 60/);
    await page.getByRole('slider', { name: /Smoothing/ }).fill('0.9');
    await screenshot(page, 'dashboard-live');

    // The x-axis switches to wall time; the series are fetched again for it.
    await page.getByRole('radio', { name: 'Wall time' }).click();
    await expect.poll(() => panelPoints('train:grad_norm'), POLL).toBe(metricCount(run.id, gradKeys));

    // Pipeline Gantt of the timeline, and the events log, which also follows pushes.
    await page.getByRole('tab', { name: 'Pipeline' }).click();
    await expect.poll(() => page.getByTestId('gantt').getAttribute('data-spans').then(Number), POLL).toBe(store.events.timeline(run.id).length);
    await page.waitForTimeout(300);
    await screenshot(page, 'pipeline');
    await page.getByRole('tab', { name: 'Events' }).click();
    const eventRows = page.locator('[data-event-kind]');
    await expect.poll(() => eventRows.count(), POLL).toBe(store.events.events(run.id, 0, 1000).items.length);
    store.events.log(run.id, 'warning', 'nan_skipped', 'NaN in verifier1 loss; update skipped', null, 30);
    await expect.poll(() => page.locator('[data-event-kind="nan_skipped"]').count(), POLL).toBe(1);
    await screenshot(page, 'events');
    await page.getByRole('tab', { name: 'Config' }).click();
    await page.locator('[data-config-path="task.family"]').waitFor();
    await screenshot(page, 'config');
  });

  it("opens a trajectory and reads a Verifier's verdict, segments and all", async () => {
    const run = seeded.done;
    const turns = store.trajectories.episodeTurns(seeded.rejectingEpisodeId);
    const verifier = turns.find((t) => t.agent === 'verifier1')!;
    const corrector = turns.find((t) => t.agent === 'corrector1')!;
    await open(`#/runs/${run.id}/trajectories?step=20`);
    const episodeButton = page.locator(`.pane--list [data-episode-id="${seeded.rejectingEpisodeId}"]`);
    await episodeButton.click();
    await page.getByTestId('episode-header').filter({ hasText: `episode #${seeded.rejectingEpisodeId}` }).waitFor();

    // The tree nests Verifier judgments under the solution they judged, repairs under the verdict.
    const treeRow = (id: number) => page.locator(`[role="tree"] [data-turn-id="${id}"]`);
    await treeRow(verifier.id).click();
    const detail = page.getByTestId('turn-detail');
    await expect.poll(() => detail.getAttribute('data-turn-id'), POLL).toBe(String(verifier.id));
    expect((await page.getByTestId('turn-parsed').textContent())?.trim()).toBe(describeParsed('verifier1', verifier.parsed));
    expect(describeParsed('verifier1', verifier.parsed)).toMatch(/^(approves|rejects)$/);
    expect((await page.getByTestId('turn-correct').textContent())?.trim()).toMatch(verifier.correct ? /^yes/ : /^no/);
    const segments = store.trajectories.segments(verifier.id);
    expect(segments.length).toBeGreaterThan(1);
    const text = page.getByTestId('turn-text');
    expect(await text.locator('.seg').allTextContents()).toEqual(segments.map((s) => s.text));
    expect(await text.locator('.seg__mark').count()).toBe(segments.length);
    const indentOf = async (id: number) => (await treeRow(id).locator('.tree__agent').getAttribute('class'))?.match(/tree__depth-(\d)/)?.[1];
    expect(await indentOf(verifier.id)).toBe('1');
    expect(await indentOf(corrector.id)).toBe('2');
    await screenshot(page, 'trajectories');

    // Turn search: by agent and correctness, keyset-paged by the store.
    await page.getByTestId('mode-turns').click();
    await page.getByTestId('filter-agent').selectOption('verifier1');
    await page.getByTestId('filter-correct').selectOption('false');
    const expected = store.trajectories.pageTurns({ runId: run.id, step: 20, agent: 'verifier1', correct: false, limit: 100 }).items;
    const listed = page.locator('.pane--list [data-turn-id]');
    await expect.poll(async () => (await listed.first().getAttribute('data-turn-id')) ?? '', POLL).toBe(String(expected[0]?.id ?? ''));
    // Only the rows in view exist (the list is virtualised); they are the store's first ones, in order.
    const shownIds = (await listed.evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-turn-id')))));
    expect(shownIds.length).toBeGreaterThan(0);
    expect(shownIds).toEqual(expected.slice(0, shownIds.length).map((t) => t.id));
    await listed.first().click();
    await expect.poll(() => detail.getAttribute('data-turn-id'), POLL).toBe(String(expected[0].id));
    await screenshot(page, 'trajectories-turn-search');
  });

  it("rejects a bad form value with the schema's own message", async () => {
    await open('#/new');
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid/);
    const quick = resolveConfig(presetDocument('quick')) as unknown as Record<string, Record<string, unknown>>;
    const messageFor = (change: (doc: Record<string, Record<string, unknown>>) => void, path: string) => {
      const doc = structuredClone(quick);
      change(doc);
      const result = validateConfig(doc);
      if (result.ok) throw new Error(`expected ${path} to be refused`);
      return result.issues.find((i) => i.path === path)!.message;
    };

    await page.locator('#field-rollout-solver_group').fill('0');
    const issue = page.locator('[data-issue-path="rollout.solver_group"]');
    await issue.waitFor();
    expect((await issue.textContent())?.trim()).toBe(messageFor((d) => (d.rollout.solver_group = 0), 'rollout.solver_group'));
    expect(await page.getByTestId('launch').isDisabled()).toBe(true);
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/problem/);
    await page.locator('#field-rollout-solver_group').evaluate((el) => el.scrollIntoView({ block: 'center' }));
    await screenshot(page, 'new-run-invalid');

    // Text where a number belongs, and a per-policy field: the schema's messages again.
    await page.locator('#field-rollout-solver_group').fill('8');
    await page.locator('#field-seed').fill('ten');
    const seedIssue = page.locator('[data-issue-path="seed"]');
    await seedIssue.waitFor();
    expect((await seedIssue.textContent())?.trim()).toBe(messageFor((d) => ((d as Record<string, unknown>).seed = 'ten'), 'seed'));
    await page.locator('#field-seed').fill('3');
    await page.locator('#field-policies-solver-optimizer-lr').fill('0');
    const lrIssue = page.locator('[data-issue-path="policies.solver.optimizer.lr"]');
    await lrIssue.waitFor();
    expect((await lrIssue.textContent())?.trim()).toBe(
      messageFor((d) => ((d.policies.solver as Record<string, Record<string, unknown>>).optimizer.lr = 0), 'policies.solver.optimizer.lr'),
    );
    // A cross-field rule, reported on the field it names.
    await page.locator('#field-policies-solver-optimizer-lr').fill('1e-4');
    await page.locator('#field-rollout-select_k').fill('9');
    const selectIssue = page.locator('[data-issue-path="rollout.select_k"]');
    await selectIssue.waitFor();
    expect((await selectIssue.textContent())?.trim()).toBe(messageFor((d) => (d.rollout.select_k = 9), 'rollout.select_k'));
    await page.locator('#field-rollout-select_k').fill('2');
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid · 1 change/);
    expect(await page.getByTestId('launch').isDisabled()).toBe(false);
  });
  it('creates a run from the form and watches it train to the end', async () => {
    await open('#/new?preset=quick');
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid/);
    // A tiny configuration: two RL steps of a few problems, a short warm start, a tiny evaluation.
    const tiny: [string, string][] = [
      ['name', 'e2e tiny run from the form'],
      ['task-train_size', '50'],
      ['task-test_size', '10'],
      ['rollout-problems_per_step', '2'],
      ['rollout-solver_group', '4'],
      ['optimization-steps', '2'],
      ['optimization-checkpoint_every', '0'],
      ['pretrain-steps', '5'],
      ['eval-every', '1'],
      ['eval-k', '2'],
      ['eval-problems', '4'],
    ];
    for (const [field, value] of tiny) {
      const input = page.locator(`#field-${field}`);
      await input.fill(value);
      // Each value must stick before the next field is typed (a failure names the field).
      await expect.poll(() => input.inputValue(), POLL).toBe(value);
    }
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid · 11 changes/);
    await page.getByTestId('launch').click();

    await page.waitForURL(/#\/runs\/\d+$/);
    const runId = Number(/#\/runs\/(\d+)$/.exec(page.url())?.[1]);
    const run = store.runs.get(runId)!;
    expect(run.name).toBe('e2e tiny run from the form');
    expect(run.preset).toBe('quick');
    expect((run.config.optimization as { steps: number }).steps).toBe(2);
    await page.getByTestId('run-name').filter({ hasText: 'e2e tiny run from the form' }).waitFor();

    // Charts appear and fill while it trains, without a reload, until the run is done.
    await page.locator('.run__header .status-badge--done').waitFor({ timeout: 150_000 });
    expect(store.runs.get(runId)?.status).toBe('done');
    const keys = store.metrics.keys(runId).filter((k) => /^[a-z]+\d*\/grad_norm$/.test(k));
    expect(keys.length).toBeGreaterThan(0);
    await expect.poll(() => panelPoints('train:grad_norm'), POLL).toBe(metricCount(runId, keys));
    await expect.poll(() => page.getByTestId('run-step').textContent(), POLL).toMatch(/step \d+ \/ 2/);
    await screenshot(page, 'dashboard-real-run');

    // Its trajectories are browsable too: the first Verifier turn of its first episode.
    const firstEpisode = store.trajectories.pageEpisodes({ runId, limit: 1 }).items[0];
    const verifier = store.trajectories.episodeTurns(firstEpisode.id).find((t) => t.agent.startsWith('verifier'));
    await open(`#/runs/${runId}/trajectories?episode=${firstEpisode.id}${verifier ? `&turn=${verifier.id}` : ''}`);
    await page.getByTestId('episode-header').filter({ hasText: `episode #${firstEpisode.id}` }).waitFor();
    if (verifier) {
      await expect.poll(() => page.getByTestId('turn-detail').getAttribute('data-turn-id'), POLL).toBe(String(verifier.id));
      expect((await page.getByTestId('turn-parsed').textContent())?.trim()).toBe(describeParsed(verifier.agent, verifier.parsed));
    }
    await screenshot(page, 'trajectories-real-run');
  }, 240_000);
});

/**
 * Replay in Chromium against `marsrl serve` (issue 40): an RL run trained here (the Studio GPT),
 * one of its greedy evaluation episodes opened in the trajectory browser, replayed from the
 * episode tree with the checkpoint it was evaluated with: the replay's tree stands beside the
 * stored one (two columns, not under it), says the texts came back the same, and the run page
 * lists the replay. Screenshot: docs/screenshots/replay-beside-stored.png.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { trainRun } from '../../src-main/engine/training/trainer';
import { tinyConfig } from '../training/tiny';
import { keepScreenshot, screenshot } from './browser';
import { POLL, studioInChromium } from './studio-session';

const session = studioInChromium('replay');
let page: Page;
let runId = 0;

beforeAll(async () => {
  page = session.page;
  await initBackend('wasm');
  const config = tinyConfig({
    runtime: { backend: 'wasm' },
    task: { family: 'sort', difficulty: 3, train_size: 40, test_size: 20 },
    rollout: { problems_per_step: 1, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 2, max_response_tokens: 24, selection: 'random' },
    optimization: { steps: 2, minibatch_size: 8, checkpoint_every: 1 },
    eval: { every: 1, k: 1, problems: 3 },
    pipeline: { mode: 'sync', segment_tokens: 8, max_segments: 3 },
  });
  const { store } = session;
  runId = store.runs.create({ name: 'replay-e2e', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
  store.runs.setStatus(runId, 'running');
  const outcome = await trainRun({ store, runId, config, runDir: path.join(session.dir, 'run') });
  expect(outcome.status).toBe('done');
}, 180_000);

describe('replay in Chromium', () => {
  it('replays a stored episode from its tree and shows the new tree beside the stored one', async () => {
    const episode = session.store.trajectories.pageEpisodes({ runId, split: 'test', step: 2, limit: 1 }).items[0];
    const stored = session.store.trajectories.episodeTurns(episode.id);
    await session.open(`#/runs/${runId}/trajectories?step=2&episode=${episode.id}`, { fresh: true });
    await page.getByTestId('episode-replay').click();
    const dialog = page.getByTestId('replay-dialog');
    await dialog.waitFor();
    // The checkpoint the step-2 evaluation used: step 1's, offered among the run's checkpoints.
    await expect.poll(() => dialog.getByTestId('replay-model').locator('option').allInnerTexts(), POLL).toContain(`run ${runId} (replay-e2e): step 1 · gpt`);
    await dialog.getByTestId('replay-model').selectOption(`ckpt:${runId}:1`);
    await dialog.getByTestId('replay-decoding').selectOption('greedy');
    await dialog.getByTestId('replay-start').click();
    await expect.poll(() => dialog.getByTestId('replay-summary').innerText(), POLL).toMatch(/Same texts as stored/);
    await expect.poll(() => dialog.getByTestId('replay-reproducible').innerText(), POLL).toMatch(/Reproducible: a greedy evaluation chain/);

    // Both trees, one turn row per stored turn, the same texts in the same order.
    const storedCol = dialog.getByTestId('replay-stored');
    const replayCol = dialog.getByTestId('replay-new');
    const texts = async (col: typeof storedCol) => (await col.locator('[role="treeitem"] .tree__text').allInnerTexts()).map((t) => t.replace(/^★ final/, '').replace(/■ .*?(?=\S)/, '').trim());
    await expect.poll(() => replayCol.locator('[role="treeitem"]').count(), POLL).toBe(stored.length);
    expect(await storedCol.locator('[role="treeitem"]').count()).toBe(stored.length);
    expect(await texts(replayCol)).toEqual(await texts(storedCol));
    await expect.poll(() => replayCol.getByTestId('episode-title').innerText(), POLL).toMatch(new RegExp(`checkpoint of step 1 of run ${runId} · greedy`));

    // Beside, not under: the two columns share a top edge and the replay starts right of the stored one.
    const a = (await storedCol.boundingBox())!;
    const b = (await replayCol.boundingBox())!;
    expect(Math.abs(a.y - b.y)).toBeLessThan(2);
    expect(b.x).toBeGreaterThanOrEqual(a.x + a.width);
    expect(a.height).toBeGreaterThan(150);
    const shot = await screenshot(page, 'replay-beside-stored');
    keepScreenshot(shot, 'replay-beside-stored.png');
  }, 60_000);

  it('lists the replay on the run page, and opens it beside its episode again', async () => {
    await session.open(`#/runs/${runId}`, { fresh: true });
    const list = page.getByTestId('run-replays');
    await list.waitFor();
    const rows = list.locator('tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().innerText()).toMatch(/checkpoint of step 1.*greedy · seed \d+.*done/s);
    await rows.first().getByRole('button', { name: 'Open' }).click();
    const dialog = page.getByTestId('replay-dialog');
    await expect.poll(() => dialog.getByTestId('replay-new').locator('[role="treeitem"]').count(), POLL).toBeGreaterThan(0);
    await expect.poll(() => dialog.getByTestId('replay-stored').locator('[role="treeitem"]').count(), POLL).toBeGreaterThan(0);
    // The run's own data is untouched: its episodes' count is what training wrote.
    const counted = session.store.db.prepare('SELECT COUNT(*) AS n FROM turns WHERE run_id = ?').get(runId) as { n: number };
    expect(counted.n).toBe(session.store.trajectories.pageTurns({ runId, limit: 1000 }).items.length);
  }, 60_000);
});

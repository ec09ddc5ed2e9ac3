/**
 * Issue 35, "What the screen says is what happened", in Chromium against `marsrl serve`: Stop
 * from the app on a run another process owns, advice that is true (resume from checkpoint N, or
 * run again), a resume that says what it did, Compare that warns (one seed a side, a collapsed
 * Verifier), an advantage a reader recomputes by hand, the trajectory browser (one final answer,
 * the Corrector filter, filters in the URL, keys, 1024 px) and the charts (integer steps, shares
 * capped at 1, one tooltip, units from the catalog). Screenshots at 1024×768 and 1920×1080 land in
 * test-results/screenshots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { RunConfig } from '../../src-main/engine/config/schema';
import type { Store } from '../../src-main/engine/store';
import { tinyConfig } from '../training/tiny';
import { keepScreenshot, screenshot } from './browser';
import { quickRunRows, seedStudio, writeQuickRunTurns, type Seeded } from '../helpers/seed';
import { POLL, studioInChromium } from './studio-session';

const DEAD_PID = 2 ** 22 + 977;

let store: Store;
let page: Page;
let seeded: Seeded;
const ids = { killedEarly: 0, withCheckpoint: 0, resumed: 0, shared: 0, decoupled: 0 };

const quick = (over: Record<string, unknown>) => resolveConfig(deepMerge(presetDocument('quick'), over)) as unknown as Record<string, unknown>;

/** Rows of the real quick runs' last ten steps (test/fixtures/collapse-quick.json), written as the trainer writes them. */
function writeFixtureTurns(db: Store, runId: number, which: 'shared' | 'decoupled'): void {
  const writer = db.writer({ maxPending: 100_000, flushIntervalMs: 0 });
  writeQuickRunTurns(writer, runId, quickRunRows(which), 10_000_000 * (which === 'shared' ? 1 : 2));
  for (let step = 0; step <= 60; step += 20) {
    writer.metric({ runId, step, wallTime: step, key: 'eval/system/accuracy', value: step === 60 ? (which === 'shared' ? 0.97 : 0.895) : 0.8 });
    writer.metric({ runId, step, wallTime: step, key: 'eval/verifier/precision', value: which === 'shared' ? 0.285 : 0.62 });
    writer.metric({ runId, step, wallTime: step, key: 'eval/verifier/recall', value: which === 'shared' ? 1 : 0.56 });
  }
  writer.close();
}

function seedIssue35(db: Store, dir: string): void {
  seeded = seedStudio(db);
  // Killed with every process during its warm start: recorded running, owner gone, no checkpoint.
  const tiny = tinyConfig({ optimization: { steps: 2, checkpoint_every: 1 } }) as RunConfig;
  ids.killedEarly = db.runs.create({ name: 'killed before its first checkpoint', preset: null, config: tiny as unknown as Record<string, unknown>, codeVersion: 'e2e', seed: tiny.seed });
  db.runs.setStatus(ids.killedEarly, 'running');
  db.runs.heartbeat(ids.killedEarly, DEAD_PID);

  // Stopped after step 1 with its checkpoint on disk; early evaluations at steps 0 and 1, a
  // held-out accuracy of 1.0, and the memory the policies hold.
  ids.withCheckpoint = db.runs.create({ name: 'stopped at step 1', preset: 'quick', config: quick({}), codeVersion: 'e2e', seed: 4 });
  db.runs.setStatus(ids.withCheckpoint, 'running', null, Date.now() - 60_000);
  db.runs.setStatus(ids.withCheckpoint, 'interrupted', 'stopped by the user');
  const checkpoint = path.join(dir, 'ckpt', 'step-000001', 'solver');
  fs.mkdirSync(checkpoint, { recursive: true });
  db.events.addCheckpoint({ runId: ids.withCheckpoint, step: 1, policyId: 'solver', path: checkpoint, createdAt: Date.now(), metrics: null });
  const writer = db.writer({ flushIntervalMs: 0 });
  for (const step of [0, 1]) {
    writer.metric({ runId: ids.withCheckpoint, step, wallTime: step * 3, key: 'eval/system/accuracy', value: step === 0 ? 0.9 : 1 });
    writer.metric({ runId: ids.withCheckpoint, step, wallTime: step * 3, key: 'eval/solver/accuracy', value: step === 0 ? 0.82 : 0.97 });
    writer.metric({ runId: ids.withCheckpoint, step, wallTime: step * 3, key: 'solver/reward/mean', value: 0.5 + step * 0.1 });
  }
  for (const policy of ['solver', 'verifier', 'corrector']) {
    writer.metric({ runId: ids.withCheckpoint, step: 0, wallTime: 0, key: `memory/${policy}/weights_bytes`, value: 412_160 });
    writer.metric({ runId: ids.withCheckpoint, step: 0, wallTime: 0, key: `memory/${policy}/optimizer_bytes`, value: 824_320 });
  }
  writer.close();

  // Resumed past a checkpoint that failed its checksum, as the trainer logs it.
  ids.resumed = db.runs.create({ name: 'resumed past a bad checkpoint', preset: 'quick', config: quick({}), codeVersion: 'e2e', seed: 5 });
  db.runs.setStatus(ids.resumed, 'running', null, Date.now() - 120_000);
  db.runs.setStatus(ids.resumed, 'done');
  db.events.log(ids.resumed, 'warning', 'checkpoint_unusable', 'the checkpoint of step 9 in /runs/1/checkpoints/step-000009 cannot be loaded (optimizer.bin: checksum mismatch); trying the one before it', null, 9);
  db.events.log(
    ids.resumed, 'info', 'resumed', 'resumed from the checkpoint of step 4 (1 newer checkpoint skipped, see above) as attempt 2: steps from 5 on are redone; the 956 turns stored after it are kept as superseded',
    { path: '/runs/1/checkpoints/step-000004', step: 4, attempt: 2, superseded: { turns: 956, episodes: 40, metrics: 310 }, skippedCheckpoints: [{ step: 9, dir: '/runs/1/checkpoints/step-000009', error: 'policy solver: optimizer.bin: checksum mismatch (sha256 3a0f… expected 9c1e…)' }] },
    4,
  );

  // One decoupled and one shared run, each one seed: the shared one's Verifier rejects everything.
  ids.decoupled = db.runs.create({ name: 'quick decoupled', preset: 'quick', config: quick({ reward: { scheme: 'decoupled' } }), codeVersion: 'e2e', seed: 1 });
  ids.shared = db.runs.create({ name: 'quick shared', preset: 'quick', config: quick({ reward: { scheme: 'shared' } }), codeVersion: 'e2e', seed: 1 });
  for (const id of [ids.decoupled, ids.shared]) {
    db.runs.setStatus(id, 'running', null, Date.now() - 300_000);
    db.runs.setStatus(id, 'done');
  }
  writeFixtureTurns(db, ids.decoupled, 'decoupled');
  writeFixtureTurns(db, ids.shared, 'shared');
}

const session = studioInChromium('truth', seedIssue35);
beforeAll(() => {
  ({ store, page } = session);
});

async function atSizes(name: string, ready: () => Promise<unknown>): Promise<void> {
  for (const [width, height] of [[1024, 768], [1920, 1080]] as const) {
    await page.setViewportSize({ width, height });
    await ready();
    await screenshot(page, `${name}-${width}x${height}`);
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

/** A run's page, freshly opened, and its one `testId` element once it shows. */
async function onRunPage(runId: number, testId: string): Promise<Locator> {
  await session.open(`#/runs/${runId}`, { fresh: true });
  const shown = page.getByTestId(testId);
  await expect.poll(() => shown.count(), POLL).toBe(1);
  return shown;
}

describe('stop from the app, and advice that is true', () => {
  it('a run killed before its first checkpoint offers "run again with this config", never a resume, and the button starts one', async () => {
    const advice = await onRunPage(ids.killedEarly, 'run-advice');
    expect(await advice.getAttribute('data-kind')).toBe('run-again');
    expect(await advice.textContent()).toMatch(new RegExp(`no checkpoint was saved before it stopped, so it cannot be resumed.*marsrl run --like ${ids.killedEarly}`, 's'));
    expect(await page.getByTestId('resume-run').count()).toBe(0);
    expect(await page.getByTestId('stop-run').count()).toBe(0);
    expect(await page.locator('body').textContent()).not.toMatch(/marsrl resume/);
    await atSizes('run-advice', () => page.getByTestId('run-again').waitFor());

    await page.getByTestId('run-again').click();
    // Its own page: a new run with this run's config.
    await expect.poll(() => page.getByTestId('run-name').textContent(), POLL).toContain(`killed before its first checkpoint (like #${ids.killedEarly})`);
    const made = store.runs.list({ limit: 1 }).items[0];
    expect(made.id).toBeGreaterThan(ids.killedEarly);
    const { name: _n, ...madeConfig } = made.config;
    const { name: _m, ...modelConfig } = store.runs.get(ids.killedEarly)!.config;
    expect(madeConfig).toEqual(modelConfig);
  });

  it('a run with a checkpoint on disk is offered a resume from that step, by button and command', async () => {
    await session.open(`#/runs/${ids.withCheckpoint}`, { fresh: true });
    const button = page.getByTestId('resume-run');
    await expect.poll(() => button.textContent(), POLL).toContain('Resume from step 1');
    const advice = page.getByTestId('run-advice');
    expect(await advice.getAttribute('data-kind')).toBe('resume');
    expect(await advice.textContent()).toMatch(new RegExp(`resume from its checkpoint of step 1.*marsrl resume ${ids.withCheckpoint}`, 's'));
    expect(await page.getByTestId('run-again').count()).toBe(0);
  });

  it("Stop on a run another process owns records the request and says it is stopping", async () => {
    const run = seeded.running;
    await session.open(`#/runs/${run.id}`, { fresh: true });
    await page.getByTestId('stop-run').click();
    expect(await page.getByTestId('stop-redo').textContent()).toContain('whichever process runs it');
    await page.getByRole('button', { name: 'Stop run' }).click();
    const notice = page.getByTestId('stop-requested');
    await expect.poll(() => notice.textContent(), POLL).toMatch(/Stopping at the next safe point — stopped by the user from marsrl serve/);
    expect(store.runs.get(run.id)!.stopRequest).toMatchObject({ reason: 'stopped by the user from marsrl serve' });
    expect(await page.getByTestId('stop-run').isDisabled()).toBe(true);
    await atSizes('run-stopping', () => notice.waitFor());
    // No error: the old answer was 409 "not running in this process".
    expect(await page.locator('.error-banner').count()).toBe(0);
  });

  it('a resume says which checkpoint it used, which newer one it skipped and why, and what it superseded', async () => {
    await session.open(`#/runs/${ids.resumed}`, { fresh: true });
    const report = page.getByTestId('resume-report');
    await expect.poll(() => report.textContent(), POLL).toMatch(/Resumed as attempt 2 from the checkpoint of step 4; the newer checkpoint of step 9 was skipped: policy solver: optimizer\.bin: checksum mismatch.*Steps from 5 on were redone: 956 turns of the earlier attempt are kept as superseded/s);
    await atSizes('run-resume-report', () => report.waitFor());
  });
});

describe('collapse flags and a comparison that warns', () => {
  it('flags the collapsed Verifier on its run page with the numbers, and not the other run', async () => {
    const flag = await onRunPage(ids.shared, 'collapse-flag');
    expect(await flag.getAttribute('data-agent')).toBe('verifier1');
    expect(await flag.textContent()).toMatch(/verifier1 rejects nearly everything: 605 of 605 verdicts \(100\.0%\) in steps 50–59, 224 of the 224 right solutions among them; precision 0\.630, recall 1\.000/);
    await atSizes('run-collapse', () => flag.waitFor());
    await session.open(`#/runs/${ids.decoupled}`, { fresh: true });
    await page.getByTestId('run-name').filter({ hasText: 'quick decoupled' }).waitFor();
    await page.locator('[data-panel]').first().waitFor();
    expect(await page.getByTestId('collapse-flag').count()).toBe(0);
  });

  it('Compare says each side is one seed, gives the study that would make a difference evidence, and names the collapse', async () => {
    await session.open(`#/compare?runs=${ids.decoupled},${ids.shared}`, { fresh: true });
    const warnings = page.getByTestId('compare-warnings');
    await warnings.waitFor();
    const oneSeed = warnings.locator('[data-kind="one-seed"]');
    expect(await oneSeed.textContent()).toMatch(new RegExp(`Each side is one run of one seed \\(run ${ids.decoupled}: seed 1; run ${ids.shared}: seed 1\\), so a difference between them is not evidence`));
    expect(await page.getByTestId('study-command').textContent()).toBe(`marsrl study --like ${ids.decoupled},${ids.shared} --seeds 3`);
    expect(await warnings.locator('[data-kind="collapse"]').textContent()).toMatch(/quick shared\): verifier1 rejects nearly everything: 605 of 605/);
    const table = page.getByTestId('run-table');
    await table.waitFor();
    expect(await table.getByTestId('collapse-chip').count()).toBe(1);
    expect(await table.locator('thead').textContent()).toMatch(/seed 1 \(1 run\)/);
    await atSizes('compare-warnings', () => warnings.waitFor());
  });
});

describe('an advantage you can check', () => {
  it('shows the group, mean, std, count, mode and formula, and the numbers recompute the advantage', async () => {
    const run = seeded.done;
    const episode = seeded.rejectingEpisodeId;
    // A Corrector's repairs: rewards 1 and 0 in one group, so the advantage is not trivially 0.
    const turn = store.trajectories.episodeTurns(episode).find((t) => t.agent === 'corrector1' && t.advantage !== 0)!;
    await session.open(`#/runs/${run.id}/trajectories?episode=${episode}&turn=${turn.id}`, { fresh: true });
    const panel = page.getByTestId('advantage-explain');
    await panel.getByTestId('advantage-formula').waitFor();
    expect(await panel.getByTestId('advantage-mode').textContent()).toBe('agentwise');
    expect((await panel.getByTestId('advantage-formula').textContent())?.trim()).toBe('A = (R − μ_k) / (σ_k + ε)');
    // The members the statistics use, read off the screen, recompute the advantage by hand.
    const used = panel.locator('[data-testid="advantage-members"] tbody tr[data-used="true"]');
    const rewards = (await used.evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-reward')))));
    expect(rewards.length).toBeGreaterThan(1);
    const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const std = Math.sqrt(rewards.reduce((a, b) => a + (b - mean) ** 2, 0) / (rewards.length - 1));
    const expected = (turn.reward! - mean) / (std + 1e-6);
    expect(await panel.getByTestId('advantage-baseline').textContent()).toContain(`(n = ${rewards.length})`);
    expect(await panel.getByTestId('advantage-baseline').textContent()).toMatch(new RegExp(`= ${Number(mean.toPrecision(6))}$`));
    expect(await panel.getByTestId('advantage-scale').textContent()).toMatch(new RegExp(`= ${Number(std.toPrecision(6))}$`));
    const substituted = (await panel.getByTestId('advantage-substituted').textContent())!.trim();
    expect(Number(/= (-?[\d.e-]+)$/.exec(substituted)?.[1])).toBeCloseTo(expected, 4);
    expect(expected).toBeCloseTo(turn.advantage!, 5);
    expect(await panel.getByTestId('advantage-check').getAttribute('data-agrees')).toBe('true');
    // The README's picture of the trajectory browser (docs/screenshots).
    const shot = await screenshot(page, 'trajectories');
    keepScreenshot(shot, 'trajectories.png');
  });
});

describe('the trajectory browser', () => {
  const finals = () => page.getByTestId('final-mark').count();

  it('marks one final answer per episode', async () => {
    const run = seeded.done;
    const episodes = store.trajectories.pageEpisodes({ runId: run.id, split: 'train', limit: 12 }).items;
    for (const episode of episodes) {
      await session.open(`#/runs/${run.id}/trajectories?episode=${episode.id}`);
      await page.getByTestId('episode-header').filter({ hasText: `episode #${episode.id}` }).waitFor();
      // The tree is virtualised: make every row exist before counting.
      await page.setViewportSize({ width: 1440, height: 3000 });
      expect(await finals(), `episode ${episode.id}`).toBe(episode.finalAnswer === null ? 0 : 1);
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  });

  it('"Corrector broke" opens a matching episode, highlights the turn that matched, and keeps it all in the URL (Back too)', async () => {
    const run = seeded.done;
    await session.open(`#/runs/${run.id}/trajectories`, { fresh: true });
    await page.getByTestId('filter-corrector').waitFor();
    await page.getByTestId('filter-step-from').fill('');
    const before = page.url();
    await page.getByTestId('filter-corrector').selectOption('broke');
    await expect.poll(() => page.url(), POLL).toContain('corrector=broke');
    const matching = new Set(store.trajectories.pageEpisodes({ runId: run.id, corrector: 'broke', split: 'train', step: Number(new URL(page.url().replace('#', '')).searchParams.get('step') ?? NaN) || undefined, limit: 1000 }).items.map((e) => e.id));
    // The open episode is one the filter lists, and its matched turn is highlighted and selected.
    await expect.poll(async () => Number(/episode=(\d+)/.exec(page.url())?.[1] ?? 0), POLL).toBeGreaterThan(0);
    const open = Number(/episode=(\d+)/.exec(page.url())![1]);
    if (matching.size > 0) {
      expect(matching.has(open)).toBe(true);
      const matched = page.locator('[data-matched="true"]');
      await expect.poll(() => matched.count(), POLL).toBeGreaterThan(0);
      expect(await matched.first().getAttribute('data-agent')).toMatch(/^corrector/);
      const selected = Number(/turn=(\d+)/.exec(page.url())![1]);
      expect(await matched.first().getAttribute('data-turn-id')).toBe(String(selected));
      // What matched is a repair that turned a right input wrong.
      const turn = store.trajectories.getTurn(selected)!;
      const input = store.trajectories.getTurn(store.trajectories.getTurn(turn.parentTurnId!)!.parentTurnId!)!;
      expect([input.correct, turn.correct]).toEqual([true, false]);
    }
    // Reload: the filter and the open episode come back from the URL.
    await page.reload();
    await page.getByTestId('connection').and(page.locator('[data-state="open"]')).waitFor();
    await expect.poll(() => page.getByTestId('filter-corrector').inputValue(), POLL).toBe('broke');
    await expect.poll(() => page.getByTestId('episode-header').textContent(), POLL).toContain(`episode #${open}`);
    // Back: before the filter.
    await page.goBack();
    await expect.poll(() => page.url(), POLL).not.toContain('corrector=broke');
    expect(page.url().split('#')[0]).toBe(before.split('#')[0]);
    await expect.poll(() => page.getByTestId('filter-corrector').inputValue(), POLL).toBe('');
  });

  it('j / k move between episodes and n / p between turns', async () => {
    const run = seeded.done;
    const listed = store.trajectories.pageEpisodes({ runId: run.id, step: 20, split: 'train', limit: 10 }).items;
    await session.open(`#/runs/${run.id}/trajectories?step=20&split=train&episode=${listed[0].id}`, { fresh: true });
    await page.getByTestId('episode-header').filter({ hasText: `episode #${listed[0].id}` }).waitFor();
    await page.locator('body').press('j');
    await expect.poll(() => page.getByTestId('episode-header').textContent(), POLL).toContain(`episode #${listed[1].id}`);
    await page.locator('body').press('k');
    await expect.poll(() => page.getByTestId('episode-header').textContent(), POLL).toContain(`episode #${listed[0].id}`);
    const turns = store.trajectories.episodeTurns(listed[0].id);
    const first = Number(await page.getByTestId('turn-detail').getAttribute('data-turn-id'));
    await page.locator('body').press('n');
    await expect.poll(async () => Number(await page.getByTestId('turn-detail').getAttribute('data-turn-id')), POLL).not.toBe(first);
    const second = Number(await page.getByTestId('turn-detail').getAttribute('data-turn-id'));
    expect(turns.some((t) => t.id === second)).toBe(true);
    await page.locator('body').press('p');
    await expect.poll(async () => Number(await page.getByTestId('turn-detail').getAttribute('data-turn-id')), POLL).toBe(first);
    // Keys typed into a field stay there.
    await page.getByTestId('filter-search').press('j');
    expect(await page.getByTestId('episode-header').textContent()).toContain(`episode #${listed[0].id}`);
  });

  it('fits 1024 px without overflowing', async () => {
    const run = seeded.done;
    await page.setViewportSize({ width: 1024, height: 768 });
    await session.open(`#/runs/${run.id}/trajectories?corrector=broke`, { fresh: true });
    await page.locator('[data-matched="true"]').first().waitFor();
    await page.getByTestId('advantage-explain').waitFor();
    const overflow = await page.evaluate(() => {
      const doc = document.scrollingElement!;
      const wide = [...document.querySelectorAll<HTMLElement>('.traj__body, .pane, .tree__head, .tree__turn, .filters, .traj__toolbar')].filter((el) => el.scrollWidth > el.clientWidth + 1);
      return { page: doc.scrollWidth - doc.clientWidth, wide: wide.map((el) => el.className) };
    });
    expect(overflow).toEqual({ page: 0, wide: [] });
    await page.setViewportSize({ width: 1440, height: 900 });
    await atSizes('trajectories-filtered', () => page.getByTestId('advantage-explain').waitFor());
  });
});

describe('charts', () => {
  const panel = (id: string) => page.locator(`[data-panel="${id}"]`);
  const chartOf = (id: string) => panel(id).locator('.echart');

  it('labels steps as whole numbers, keeps shares within 1, and titles every axis with its unit', async () => {
    await session.open(`#/runs/${ids.withCheckpoint}`, { fresh: true });
    await chartOf('eval:accuracy').waitFor();
    await expect.poll(() => chartOf('eval:accuracy').getAttribute('data-x-ticks'), POLL).not.toBeNull();
    const ticks = (await chartOf('eval:accuracy').getAttribute('data-x-ticks'))!.split(',').map(Number);
    expect(ticks.every(Number.isInteger)).toBe(true);
    expect(new Set(ticks).size).toBe(ticks.length);
    const [, top] = (await chartOf('eval:accuracy').getAttribute('data-y-extent'))!.split(',').map(Number);
    expect(top).toBeLessThanOrEqual(1);
    // Memory is in bytes, from the catalog, not "ratio".
    const memory = page.locator('[data-panel^="train:memory"]');
    await expect.poll(() => memory.count(), POLL).toBeGreaterThan(0);
    expect(await memory.evaluateAll((els) => els.map((e) => e.getAttribute('data-unit')))).toEqual(expect.arrayContaining(['bytes']));
    expect(await page.locator('[data-panel][data-unit="value"]').count()).toBe(0);
  });

  it('hovering one chart shows one tooltip (the others keep the shared cursor only)', async () => {
    await session.open(`#/runs/${seeded.done.id}`, { fresh: true });
    await panel('train:grad_norm').scrollIntoViewIfNeeded();
    const canvas = panel('train:grad_norm').locator('canvas').first();
    await canvas.waitFor();
    const box = (await canvas.boundingBox())!;
    await canvas.hover({ position: { x: box.width * 0.5, y: box.height / 2 } });
    await expect.poll(() => panel('train:grad_norm').getByTestId('panel-readout').textContent(), POLL).not.toBe('');
    const filled = await page.getByTestId('panel-readout').evaluateAll((els) => els.filter((e) => (e.textContent ?? '').trim() !== '').length);
    expect(filled).toBe(1);
    // The README's picture of the dashboard (docs/screenshots).
    const shot = await screenshot(page, 'dashboard-one-tooltip');
    keepScreenshot(shot, 'dashboard.png');
  });
});

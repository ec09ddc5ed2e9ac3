/**
 * A veRL run from the new-run form in Chromium, on Ray (issue 38): the verl-grpo preset pointed at
 * a fake Ray Jobs server (test/helpers/fake-ray.ts) whose jobs run the stand-in engine
 * (test/helpers/standin), which writes veRL's files. The form shows the exact command the run
 * would submit; a setting veRL refuses is placed at its field and Launch stays refused; fixed, the
 * run is launched by `marsrl serve`'s run manager, followed to done, and its run page shows the
 * Ray job (SUCCEEDED, the log's end), its metrics drawn and its generations browsable by step and
 * agent. Screenshots: test-results/screenshots/engine-*.png.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeRay } from '../helpers/fake-ray';
import { STANDIN_PYTHON } from '../helpers/engines';
import { keepScreenshot, screenshot } from './browser';
import { POLL, studioInChromium } from './studio-session';

// The engine run's worker (started by `marsrl serve`, which inherits this environment) polls the
// Ray job every 200 ms instead of 2 s (engine-run.ts's test knob): the stand-in's jobs last a
// second or two.
process.env.MARSRL_ENGINE_POLL_MS = '200';

/** A real worker process and the stand-in engine run here: a run takes several seconds, more on a loaded machine. */
const RUN_POLL = { timeout: 90_000, interval: 250 };

let page: Page;
let fake: FakeRay;
/** A second cluster whose jobs fail at step 2 (the stand-in raises, as veRL would, with a traceback). */
let failing: FakeRay;
/** A third whose engine takes 1.5 s a step, for a run to follow live and stop. */
let slow: FakeRay;
/** The run the first test launched, which the second clones. */
let launched: number | null = null;
const session = studioInChromium('engine');
beforeAll(async () => {
  ({ page } = session);
  fake = await new FakeRay({ pendingMs: 20, env: { STANDIN_STEP_MS: '100', STANDIN_LINE_MS: '0' } }).start();
  failing = await new FakeRay({ pendingMs: 20, env: { STANDIN_STEP_MS: '100', STANDIN_LINE_MS: '0', STANDIN_FAIL_AT_STEP: '2' } }).start();
  slow = await new FakeRay({ pendingMs: 20, stopWaitMs: 1000, env: { STANDIN_STEP_MS: '1500', STANDIN_LINE_MS: '0' } }).start();
});
afterAll(async () => {
  await fake?.close();
  await failing?.close();
  await slow?.close();
});

async function fill(path: string, value: string): Promise<void> {
  const input = page.locator(`#field-${path.replace(/[^a-zA-Z0-9_-]/g, '-')}`);
  await input.fill(value);
  // Each value must stick before the next field is typed (a failure names the field).
  await expect.poll(() => input.inputValue(), POLL).toBe(value);
}
const placed = (path: string) => page.locator(`[data-issue-path="${path}"]`);
const status = () => page.getByTestId('form-status').textContent();
const command = () => page.getByTestId('engine-command');

/** Clones run `from` in the form, sends it to `cluster` (with `more` fields typed), launches it and returns the new run's id. */
async function cloneTo(from: number, cluster: FakeRay, more: [string, string][] = []): Promise<number> {
  await session.open(`#/new?from=${from}`, { fresh: true });
  await page.getByTestId('engine-block').waitFor();
  await fill('engine.address', cluster.address);
  for (const [p, value] of more) await fill(p, value);
  await expect.poll(() => command().getAttribute('data-state'), POLL).toBe('ok');
  await expect.poll(() => page.getByTestId('engine-entrypoint').textContent(), POLL).toContain(' -m verl.trainer.main_ppo ');
  await expect.poll(() => page.getByTestId('launch').isDisabled(), POLL).toBe(false);
  await page.getByTestId('launch').click();
  await page.waitForURL(new RegExp(`#/runs/(?!${from}\\b)\\d+`), { timeout: POLL.timeout });
  return Number(/#\/runs\/(\d+)/.exec(page.url())![1]);
}

describe('an engine run from the new-run form', () => {
  it('shows the command veRL would get, places its refusals at their fields, launches, and follows the Ray job to done', async () => {
    await session.open('#/new?preset=verl-grpo', { fresh: true });
    const block = page.getByTestId('engine-block');
    await block.waitFor();
    expect(await block.getAttribute('data-kind')).toBe('verl');
    // The preset names no model: veRL's plan refuses it, at engine.model, and there is no command yet.
    await expect.poll(() => placed('engine.model').first().textContent(), POLL).toMatch(/the engine needs a starting model/);
    expect(await command().getAttribute('data-state')).toBe('refused');
    expect(await page.getByTestId('launch').isDisabled()).toBe(true);

    await fill('engine.address', fake.address);
    await fill('engine.python', STANDIN_PYTHON);
    await fill('engine.model', '/models/Qwen3-4B');
    const sizes: [string, string][] = [
      ['task.train_size', '64'],
      ['task.test_size', '20'],
      ['rollout.problems_per_step', '4'],
      ['optimization.steps', '3'],
      ['optimization.checkpoint_every', '2'],
      ['optimization.minibatch_size', '32'],
      ['eval.every', '2'],
      ['eval.problems', '4'],
    ];
    for (const [path, value] of sizes) await fill(path, value);
    await expect.poll(status, POLL).toMatch(/^\s*Valid/);
    await expect.poll(() => command().getAttribute('data-state'), POLL).toBe('ok');
    const entrypoint = page.getByTestId('engine-entrypoint');
    await expect.poll(() => entrypoint.textContent(), POLL).toContain('trainer.total_training_steps=3');
    const text = (await entrypoint.textContent()) ?? '';
    expect(text.startsWith(`${STANDIN_PYTHON} -m verl.trainer.main_ppo `)).toBe(true);
    expect(text).toContain('actor_rollout_ref.model.path=/models/Qwen3-4B');
    expect(text).toContain('data.train_batch_size=4');
    // No engine.version and nothing asked yet: planned for the newest veRL the Studio knows, and said so.
    expect(await page.getByTestId('engine-version-note').textContent()).toMatch(/Planned for veRL \d+\.\d+\.\d+, the newest the Studio knows; the launch asks engine\.python for its version\./);
    expect(await page.getByTestId('engine-env').textContent()).toMatch(/^VERL_FILE_LOGGER_PATH=\//m);
    // The engine's own fields, where the run goes and with what.
    await page.locator('#group-engine').evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await screenshot(page, 'engine-form-fields');
    await block.scrollIntoViewIfNeeded();
    await command().scrollIntoViewIfNeeded();
    keepScreenshot(await screenshot(page, 'engine-form'), 'engine-form.png');

    // veRL counts its mini-batch in prompts: 30 turns is no whole number of groups of 8. Refused at the field, by veRL's plan.
    await fill('optimization.minibatch_size', '30');
    await expect.poll(() => placed('optimization.minibatch_size').first().textContent(), POLL).toMatch(/multiple of rollout\.solver_group \(8\)/);
    await expect.poll(() => command().getAttribute('data-state'), POLL).toBe('refused');
    expect(await page.getByTestId('engine-refused').textContent()).toContain('optimization.minibatch_size');
    expect(await page.getByTestId('launch').isDisabled()).toBe(true);
    await expect.poll(status, POLL).toMatch(/1 problem to fix/);
    await placed('optimization.minibatch_size').first().scrollIntoViewIfNeeded();
    await screenshot(page, 'engine-form-refused');

    await fill('optimization.minibatch_size', '32');
    await expect.poll(() => command().getAttribute('data-state'), POLL).toBe('ok');
    await expect.poll(() => page.getByTestId('launch').isDisabled(), POLL).toBe(false);
    await page.getByTestId('launch').click();

    // The run page: launched by `marsrl serve`'s run manager, followed to done.
    await page.waitForURL(/#\/runs\/\d+/, { timeout: POLL.timeout });
    const runId = Number(/#\/runs\/(\d+)/.exec(page.url())![1]);
    launched = runId;
    await expect.poll(() => page.locator('.status-badge').first().textContent(), RUN_POLL).toMatch(/Done/);
    const run = session.store.runs.get(runId);
    expect(run?.status).toBe('done');

    // The Engine tab: the attempt's Ray job, SUCCEEDED, with the end of its log; the command folded.
    await page.getByRole('tab', { name: 'Engine' }).click();
    const job = page.getByTestId('engine-job');
    await expect.poll(() => job.count(), POLL).toBe(1);
    await expect.poll(() => job.getByTestId('ray-status').textContent(), POLL).toBe('SUCCEEDED');
    expect(await job.getByTestId('submission-id').textContent()).toMatch(new RegExp(`marsrl-${runId}-`));
    await expect.poll(async () => ((await job.getByTestId('engine-log').textContent()) ?? '').trim().length, POLL).toBeGreaterThan(0);
    expect(await job.getByTestId('engine-job-command').isVisible()).toBe(false);
    expect(await job.getByTestId('engine-job-command').textContent()).toContain('trainer.total_training_steps=3');
    expect(await page.getByTestId('engine-failure').count()).toBe(0);
    keepScreenshot(await screenshot(page, 'engine-run'), 'engine-run.png');

    // Its metrics on the Charts tab: the held-out accuracy (veRL's val-core acc mapped onto the catalog), drawn.
    expect(session.store.metrics.keys(runId)).toContain('eval/solver/accuracy');
    await page.getByRole('tab', { name: 'Charts' }).click();
    const accuracy = page.locator('[data-panel="eval:accuracy"]');
    await accuracy.locator('canvas').first().waitFor({ timeout: POLL.timeout });
    // Steps 0 (before training), 2 and 3: one point each of the Solver's and the system's accuracy.
    await expect.poll(async () => Number(await accuracy.getAttribute('data-points')), POLL).toBeGreaterThanOrEqual(3);

    // Its generations: the episodes of step 1, each a Solver turn.
    await session.open(`#/runs/${runId}/trajectories?step=1`, { fresh: true });
    const episodes = page.locator('.pane--list [data-episode-id]');
    await expect.poll(() => episodes.count(), POLL).toBeGreaterThan(0);
    expect(await episodes.first().textContent()).toContain('step 1');
    await episodes.first().click();
    const turns = page.locator('[role="tree"] [data-turn-id]');
    await expect.poll(() => turns.count(), POLL).toBeGreaterThan(0);
    expect(new Set(await turns.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-agent'))))).toEqual(new Set(['solver']));
  }, 240_000);

  it('shows why a Ray job FAILED: the run page says so, the Engine tab leads with the traceback', async () => {
    expect(launched).not.toBeNull();
    // The finished run cloned, sent to the cluster whose jobs fail.
    const runId = await cloneTo(launched!, failing);
    await expect.poll(() => page.locator('.status-badge').first().textContent(), RUN_POLL).toMatch(/Failed/);
    await page.getByTestId('engine-failed-notice').waitFor({ timeout: POLL.timeout });
    await page.getByTestId('engine-failed-notice').getByRole('link', { name: 'Engine tab' }).click();
    const failure = page.getByTestId('engine-failure');
    await failure.waitFor({ timeout: POLL.timeout });
    expect(await failure.textContent()).toMatch(/The Ray job of attempt 1 failed/);
    await expect.poll(() => page.getByTestId('engine-traceback').textContent(), POLL).toMatch(/^Traceback \(most recent call last\):/);
    expect(await page.getByTestId('engine-job').getByTestId('ray-status').textContent()).toBe('FAILED');
    expect(session.store.runs.get(runId)?.status).toBe('failed');
    await screenshot(page, 'engine-run-failed');
  }, 180_000);

  it('follows a live job on the Engine tab (its log read again as it grows) and stops it with the run page’s Stop', async () => {
    expect(launched).not.toBeNull();
    const runId = await cloneTo(launched!, slow, [['optimization.steps', '20']]);
    await page.getByRole('tab', { name: 'Engine' }).click();
    const job = page.getByTestId('engine-job');
    await expect.poll(() => job.getByTestId('ray-status').textContent(), RUN_POLL).toBe('RUNNING');
    // The log's end is read again while the run is live: a step line appears without a reload.
    const log = job.getByTestId('engine-log');
    await expect.poll(async () => /step:1 - /.test((await log.textContent()) ?? ''), RUN_POLL).toBe(true);
    await expect.poll(async () => /step:2 - /.test((await log.textContent()) ?? ''), RUN_POLL).toBe(true);
    await page.getByTestId('stop-run').click();
    await page.getByRole('button', { name: 'Stop run' }).click();
    await expect.poll(() => page.locator('.status-badge').first().textContent(), RUN_POLL).toMatch(/Interrupted/);
    await expect.poll(() => job.getByTestId('ray-status').textContent(), POLL).toBe('STOPPED');
    expect(session.store.runs.get(runId)?.status).toBe('interrupted');
    await screenshot(page, 'engine-run-stopped');
  }, 180_000);

  it('plans a DrMAS run with one starting model per policy, from the checkout engine.python has or engine.working_dir', async () => {
    await session.open('#/new?preset=drmas-marsrl', { fresh: true });
    const block = page.getByTestId('engine-block');
    await block.waitFor();
    expect(await block.getAttribute('data-kind')).toBe('drmas');
    expect(await block.locator('[data-section="drmas"]').count()).toBe(1);
    await fill('engine.address', fake.address);
    await fill('engine.python', STANDIN_PYTHON);
    // Three policies (Solver, Verifier, Corrector, each its own weights): a starting model for each.
    await page.getByTestId('engine-model-per-policy').check();
    for (const id of ['solver', 'verifier', 'corrector']) await fill(`engine.model.${id}`, `/models/${id}-4B`);
    // The preview runs nothing: the checkout engine.python has installed is named as what the launch finds.
    await expect.poll(() => command().getAttribute('data-state'), POLL).toBe('ok');
    await expect.poll(async () => (await page.getByTestId('engine-entrypoint').textContent()) ?? '', POLL).toMatch(/^cd \/DRMAS-CHECKOUT-OF-ENGINE-PYTHON && /);
    await fill('engine.working_dir', '/opt/DrMAS');
    await expect.poll(async () => (await page.getByTestId('engine-entrypoint').textContent()) ?? '', POLL).toMatch(/^cd \/opt\/DrMAS && /);
    const text = (await page.getByTestId('engine-entrypoint').textContent()) ?? '';
    for (const id of ['solver', 'verifier', 'corrector']) expect(text).toContain(`/models/${id}-4B`);
    expect(text).toContain('algorithm.group_by_agent_id=True');
    await command().scrollIntoViewIfNeeded();
    await screenshot(page, 'engine-form-drmas');
  });
});

/**
 * Dataset export from the Studio in Chromium against `marsrl serve`: the export dialog opened
 * from the runs table and from the trajectory browser, an export read back with DuckDB (an
 * independent reader), the errors a user meets (existing file without force, a folder that does
 * not exist, filters matching nothing) shown at the field they name with nothing left on disk,
 * and a large export's progress and cancellation. Screenshots: test-results/screenshots/export-*.png.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { Store } from '../../src-main/engine/store';
import { duck, source } from '../export/duck';
import { screenshot, type PageProblems } from './browser';
import { POLL, studioInChromium } from './studio-session';
import { seedStudio, type Seeded } from '../helpers/seed';

/** Turns of the run that is exported to show progress and be cancelled: seconds of work. */
const BULK_TURNS = 200_000;

let store: Store;
let seeded: Seeded;
let bulkRunId: number;
let outDir: string;
let page: Page;
let problems: PageProblems;

/** A run of BULK_TURNS Solver turns, inserted in one statement (the seed writer would take long). */
function insertBulkRun(): number {
  const config = resolveConfig(presetDocument('quick')) as unknown as Record<string, unknown>;
  const runId = store.runs.create({ name: 'bulk 200k turns', preset: 'quick', config, codeVersion: 'e2e', seed: 5 });
  store.runs.setStatus(runId, 'running');
  store.runs.setStatus(runId, 'done');
  // Ids reserved the way the store's writers reserve them, so no later write can collide.
  const { next_id: end } = store.db.prepare("UPDATE id_blocks SET next_id = next_id + ? WHERE name = 'turns' RETURNING next_id").get(BULK_TURNS) as { next_id: number };
  store.db
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < @last)
       INSERT INTO turns (id, run_id, episode_id, step, agent, policy_id, round, group_id, parent_turn_id, sample_index,
                          prompt, text, token_count, parsed, correct, format_valid, policy_version_min, policy_version_max, created_at)
       SELECT @first + i, @runId, NULL, i / 2000, 'solver', 'solver', 0, 0, NULL, i % 8,
              'sort ' || (10000000 + i), 'c:1111111100 A:' || (10000000 + i), 20, NULL, i % 2, 1, 0, 0, 0 FROM n`,
    )
    .run({ last: BULK_TURNS - 1, first: end - BULK_TURNS, runId });
  return runId;
}

const session = studioInChromium('export', (db, dir) => {
  store = db;
  seeded = seedStudio(db);
  bulkRunId = insertBulkRun();
  outDir = path.join(dir, 'exports');
  fs.mkdirSync(outDir);
});
beforeAll(() => {
  ({ page, problems } = session);
});
const open = (hash: string) => session.open(hash);

const dialog = () => page.getByTestId('export-dialog');
const issue = (field: string): Locator => dialog().locator(`[data-issue-path="${field}"]`);
const text = async (locator: Locator) => ((await locator.textContent()) ?? '').replace(/\s+/g, ' ').trim();
const turnsOf = (runId: number) => (store.db.prepare('SELECT COUNT(*) AS n FROM turns WHERE run_id = ?').get(runId) as { n: number }).n;
const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const chosenRuns = () => dialog().locator('[data-testid="export-runs"] [data-run-id]').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-run-id'))));
const checkedAgents = () => dialog().locator('input[data-agent]').evaluateAll((els) => (els as HTMLInputElement[]).filter((el) => el.checked).map((el) => el.dataset.agent));
/**
 * The browser logs every refused call (HTTP 400) as a console error; a test that provokes them
 * takes exactly those out of the page's problems, and any other error still fails it.
 */
function expectRefusedCalls(count: number): void {
  const refused = problems.errors.filter((e) => /status of 400 \(Bad Request\)/.test(e));
  expect(refused).toHaveLength(count);
  problems.errors = problems.errors.filter((e) => !refused.includes(e));
}
const correctness = (label: string) => dialog().getByRole('radiogroup', { name: 'Correctness' }).getByRole('radio', { name: label, exact: true });
const listedAgents = () => dialog().locator('input[data-agent]').evaluateAll((els) => els.map((el) => (el as HTMLInputElement).dataset.agent));

describe('export dialog in Chromium against marsrl serve', () => {
  it('exports a run from the runs table to Parquet that DuckDB reads back', async () => {
    const run = seeded.done;
    await open('#/runs');
    const row = page.locator(`[role="rowgroup"] [data-run-id="${run.id}"]`);
    await row.hover();
    await row.getByTestId('row-export').hover();
    await screenshot(page, 'export-row-action');
    await row.getByTestId('row-export').click();
    await dialog().waitFor();

    // Prefilled with the run; Trajectories in Parquet (its usual container); the run's agents offered.
    expect(await chosenRuns()).toEqual([run.id]);
    expect(await dialog().getByRole('radio', { name: /^Trajectories/ }).isChecked()).toBe(true);
    expect(await dialog().getByRole('radio', { name: 'Parquet' }).isChecked()).toBe(true);
    await expect.poll(listedAgents, POLL).toEqual(['solver', 'verifier1', 'corrector1']);
    expect(await checkedAgents()).toEqual([]);
    // Choosing SFT switches the container to JSONL and keeps correct turns unless told otherwise.
    await dialog().locator('[data-format="sft"]').click();
    expect(await dialog().getByRole('radio', { name: 'JSONL' }).isChecked()).toBe(true);
    expect(await correctness('Correct').isChecked()).toBe(true);
    expect(await dialog().getByTestId('export-out').inputValue()).toMatch(new RegExp(`/sort8-decoupled-agentwise-run${run.id}-sft\\.jsonl$`));
    await dialog().locator('[data-format="trajectories"]').click();
    expect(await dialog().getByRole('radio', { name: 'Parquet' }).isChecked()).toBe(true);
    expect(await correctness('Any').isChecked()).toBe(true);

    const out = path.join(outDir, 'done.parquet');
    await dialog().getByTestId('export-out').fill(out);
    await screenshot(page, 'export-dialog');
    await dialog().getByTestId('export-start').click();
    await dialog().getByTestId('export-result').waitFor({ timeout: POLL.timeout });

    const turns = turnsOf(run.id);
    expect(turns).toBeGreaterThan(500);
    expect(await text(dialog().getByTestId('export-rows'))).toBe(turns.toLocaleString('en-US'));
    expect(await text(dialog().getByTestId('export-out-path'))).toBe(out);
    expect(await text(dialog().getByTestId('export-card-path'))).toBe(`${out}.card.md`);
    expect(await text(dialog().getByTestId('export-bytes'))).toMatch(/^\d+(\.\d)? (B|kB|MB)$/);
    expect(fs.existsSync(`${out}.card.md`)).toBe(true);
    const [read] = await duck(`SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id) AS ids, MIN(run_id) AS lo, MAX(run_id) AS hi FROM ${source(out, 'parquet')}`);
    expect(read).toEqual({ n: turns, ids: turns, lo: run.id, hi: run.id });
    await screenshot(page, 'export-done');
  });

  it('refuses an existing file without force and a missing folder, at the output field, writing nothing', async () => {
    const out = path.join(outDir, 'done.parquet');
    const before = { hash: sha256(out), mtime: fs.statSync(out).mtimeMs, card: sha256(`${out}.card.md`) };
    // The same export again, from the same values.
    await dialog().getByTestId('export-again').click();
    expect(await dialog().getByTestId('export-out').inputValue()).toBe(out);
    await dialog().getByTestId('export-start').click();
    await issue('out').waitFor();
    expect(await text(issue('out'))).toMatch(/already exists.*force/);
    expect(await text(issue('out'))).toContain(out);
    expect(await dialog().getByTestId('export-out').getAttribute('class')).toMatch(/input--invalid/);
    await screenshot(page, 'export-exists');
    expect({ hash: sha256(out), mtime: fs.statSync(out).mtimeMs, card: sha256(`${out}.card.md`) }).toEqual(before);

    // A folder that does not exist: the message says so, and what to do.
    const missing = path.join(session.dir, 'no-such-folder', 'x.parquet');
    await dialog().getByTestId('export-out').fill(missing);
    expect(await issue('out').count()).toBe(0);
    await dialog().getByTestId('export-start').click();
    await issue('out').waitFor();
    expect(await text(issue('out'))).toMatch(/^out: cannot write .*does not exist; create it first or choose another path/);
    expect(fs.existsSync(path.dirname(missing))).toBe(false);
    expect(fs.readdirSync(outDir).sort()).toEqual(['done.parquet', 'done.parquet.card.md']);
    expectRefusedCalls(2);
  });

  it('reports filters that match nothing as an empty result and leaves no file', async () => {
    const out = path.join(outDir, 'empty.parquet');
    await dialog().getByTestId('export-out').fill(out);
    await dialog().getByTestId('export-min-reward').fill('5');
    await dialog().getByTestId('export-start').click();
    await issue('filters').waitFor();
    expect(await text(issue('filters'))).toMatch(/^empty result: no turns of run .* match \(reward 5\.\.\+inf\); widen the filters or choose other runs$/);
    await dialog().locator('[data-testid="export-filters"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'export-empty');
    expect(fs.existsSync(out)).toBe(false);
    expect(fs.readdirSync(outDir).sort()).toEqual(['done.parquet', 'done.parquet.card.md']);
    await dialog().getByRole('button', { name: 'Close', exact: true }).click();
    await dialog().waitFor({ state: 'hidden' });
    expectRefusedCalls(1);
  });

  it('shows a long export’s progress and cancels it, leaving nothing behind', async () => {
    // The toolbar's Export… exports the selected run.
    await page.locator(`[role="rowgroup"] [data-run-id="${bulkRunId}"]`).click();
    await page.getByTestId('export-selected').click();
    await dialog().waitFor();
    expect(await chosenRuns()).toEqual([bulkRunId]);
    const out = path.join(outDir, 'bulk.parquet');
    await dialog().getByTestId('export-out').fill(out);
    await dialog().getByTestId('export-start').click();

    const progress = dialog().getByTestId('export-progress');
    await expect.poll(async () => Number(await progress.getAttribute('data-done')), POLL).toBeGreaterThan(0);
    expect(Number(await progress.getAttribute('data-total'))).toBe(BULK_TURNS);
    expect(await dialog().getByTestId('export-out').isDisabled()).toBe(true);
    // Hidden, the export carries on behind a button that shows it again.
    await page.keyboard.press('Escape');
    await dialog().waitFor({ state: 'hidden' });
    const pill = page.getByTestId('export-pill');
    expect(await pill.getAttribute('data-kind')).toBe('running');
    await screenshot(page, 'export-hidden');
    await pill.click();
    await dialog().waitFor();
    await screenshot(page, 'export-progress');
    await dialog().getByTestId('export-cancel').click();

    const notice = dialog().getByTestId('export-notice');
    await notice.waitFor({ timeout: POLL.timeout });
    expect(await notice.getAttribute('data-kind')).toBe('cancelled');
    expect(await text(notice)).toBe('Export cancelled, nothing written.');
    expect(await dialog().getByTestId('export-out').isDisabled()).toBe(false);
    await screenshot(page, 'export-cancelled');
    // No file, no card, no temporary file.
    expect(fs.readdirSync(outDir).sort()).toEqual(['done.parquet', 'done.parquet.card.md']);
    await page.keyboard.press('Escape');
    await dialog().waitFor({ state: 'hidden' });
  });

  it('opens from the trajectory browser with the run and the filters in view', async () => {
    const run = seeded.done;
    await open(`#/runs/${run.id}/trajectories?step=20`);
    await page.getByTestId('mode-turns').click();
    await page.getByTestId('filter-agent').selectOption('verifier1');
    await page.getByTestId('filter-correct').selectOption('false');
    await page.locator('.pane--list [data-turn-id]').first().waitFor();
    await page.getByTestId('export-trajectories').click();
    await dialog().waitFor();

    expect(await chosenRuns()).toEqual([run.id]);
    await expect.poll(listedAgents, POLL).toEqual(['solver', 'verifier1', 'corrector1']);
    expect(await checkedAgents()).toEqual(['verifier1']);
    expect(await dialog().getByTestId('export-step-from').inputValue()).toBe('20');
    expect(await dialog().getByTestId('export-step-to').inputValue()).toBe('20');
    expect(await correctness('Incorrect').isChecked()).toBe(true);
    expect(await dialog().getByRole('radio', { name: /^Trajectories/ }).isChecked()).toBe(true);
    // The path suggested is in the folder of the last export, named after the run and format.
    const out = await dialog().getByTestId('export-out').inputValue();
    expect(out).toBe(path.join(outDir, `sort8-decoupled-agentwise-run${run.id}-trajectories.parquet`));
    await screenshot(page, 'export-from-trajectories');

    // More runs can join the export, and leave it again; the suggested name follows.
    await dialog().getByLabel('Add a run').selectOption(String(seeded.running.id));
    expect(await chosenRuns()).toEqual([run.id, seeded.running.id]);
    expect(await dialog().getByTestId('export-out').inputValue()).toBe(path.join(outDir, `sort8-decoupled-agentwise-run${run.id}-and-1-more-trajectories.parquet`));
    await dialog().getByRole('button', { name: `Remove run ${seeded.running.id}` }).click();
    expect(await chosenRuns()).toEqual([run.id]);
    expect(await dialog().getByTestId('export-out').inputValue()).toBe(out);

    // Exported as prefilled: exactly the turns the turn search lists.
    await dialog().getByTestId('export-start').click();
    await dialog().getByTestId('export-result').waitFor({ timeout: POLL.timeout });
    const expected = (store.db.prepare("SELECT COUNT(*) AS n FROM turns WHERE run_id = ? AND step = 20 AND agent = 'verifier1' AND correct = 0").get(run.id) as { n: number }).n;
    expect(expected).toBeGreaterThan(0);
    const [read] = await duck(`SELECT COUNT(*) AS n, COUNT(*) FILTER (WHERE agent = 'verifier1' AND step = 20 AND NOT correct) AS matching FROM ${source(out, 'parquet')}`);
    expect(read).toEqual({ n: expected, matching: expected });
  });
});

/**
 * The new-run form's model block in a real browser (issue #13): a policy switched to the Hugging
 * Face family by typing a folder's path (a browser has no folder picker) shows what the Studio's
 * inspect says about it before the run starts, and the form validates the hf config.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { inspectHfFolder } from '../../src-main/engine/checkpoint/inspect';
import { screenshot } from './browser';
import { POLL, studioWithTinyQwen3 } from './studio-session';

let page: Page;
const studio = studioWithTinyQwen3('model', 384);
const { session } = studio;
beforeAll(() => {
  ({ page } = session);
});

describe('new-run form: a Hugging Face policy', () => {
  it('types a model folder and sees the inspect summary; the form validates it', async () => {
    // The runs list first: the new-run form alone subscribes to no pushed events, so the event
    // socket (which open() waits for) would not be opened.
    await session.open('#/runs');
    await session.open('#/new');
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid/);
    const solver = page.locator('[data-policy="solver"]');
    await expect.poll(() => solver.locator('[data-model-kind]').getAttribute('data-model-kind'), POLL).toBe('gpt');
    expect(await page.locator('#field-policies-solver-model-d_model').count()).toBe(1);

    await page.locator('#field-policies-solver-model-kind').selectOption('hf');
    await expect.poll(() => solver.locator('[data-model-kind]').getAttribute('data-model-kind'), POLL).toBe('hf');
    // The GPT's sizes are gone, the folder's fields are there; no picker in a browser.
    expect(await page.locator('#field-policies-solver-model-d_model').count()).toBe(0);
    expect(await page.locator('#field-policies-solver-model-dtype').count()).toBe(1);
    expect(await solver.getByTestId('pick-folder').count()).toBe(0);
    await page.locator('[data-issue-path="policies.solver.model.path"]').waitFor();

    // A folder that is not a model: the summary says why.
    await page.locator('#field-policies-solver-model-path').fill(path.dirname(studio.modelDir));
    const inspect = solver.getByTestId('model-inspect');
    await expect.poll(() => inspect.getAttribute('data-supported'), POLL).toBe('false');
    expect(await inspect.textContent()).toMatch(/Not supported:.*config\.json/s);

    await page.locator('#field-policies-solver-model-path').fill(studio.modelDir);
    await expect.poll(() => inspect.getAttribute('data-supported'), POLL).toBe('true');
    const text = (await inspect.textContent()) ?? '';
    const report = inspectHfFolder(studio.modelDir);
    expect(text).toMatch(/Supported: this folder can be the policy\./);
    expect(text).toMatch(/Qwen3ForCausalLM · qwen3/);
    expect(text).toMatch(/384 tokens/);
    expect(text).toMatch(new RegExp(`1 layers, width 16, 2 heads / 1 KV \\(head 8\\), vocabulary ${report.config!.vocabSize}, tied embeddings`));
    expect(text).toMatch(/<\|im_end\|>/);
    expect(text).toMatch(/tokenizer_config\.json \(chat_template\)/);
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid/);
    await inspect.scrollIntoViewIfNeeded();
    await screenshot(page, 'new-run-hf-model');

    // Back to the GPT: its sizes return with their defaults, the folder's fields go.
    await page.locator('#field-policies-solver-model-kind').selectOption('gpt');
    await page.locator('#field-policies-solver-model-d_model').waitFor();
    expect(await page.locator('#field-policies-solver-model-path').count()).toBe(0);
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid/);
  });
});

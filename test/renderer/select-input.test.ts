/**
 * The renderer's SelectInput in Debian's Chromium, mounted alone in a small page built with the
 * renderer's Vite setup: typed values under v-model (a number stays a number, the slot's null
 * option gives null), each option's title and disabled state, the attributes that fall through to
 * the <select>, a v-model picker whose parent puts its value back ("+ Add a metric chart…" shows
 * again), and a one-way binding read by a @change handler, which keeps the pick until the bound
 * value follows it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../e2e/browser';
import { REPO_ROOT } from '../helpers/cli';

const COMPONENT = path.join(REPO_ROOT, 'src-renderer/src/components/SelectInput.vue');

const HARNESS = `<script setup lang="ts">
import { ref } from 'vue';
import SelectInput from ${JSON.stringify(COMPONENT)};

const runs = [{ value: 1, label: '#1 one', title: 'the first run' }, { value: 2, label: '#2 two', disabled: true }, { value: 3, label: '#3 three' }];
const metrics = [{ value: 'loss', label: 'loss' }, { value: 'reward', label: 'reward' }];
const runId = ref<number | null>(3);
const pick = ref('');
const added = ref<string[]>([]);
function add(): void {
  added.value = [...added.value, pick.value];
  pick.value = '';
}
const bound = ref('loss');
const read = ref<string[]>([]);
function onRead(event: Event): void {
  read.value = [...read.value, (event.target as HTMLSelectElement).value];
}
</script>

<template>
  <SelectInput v-model="runId" :options="runs" class="extra" aria-label="Baseline run" data-testid="typed">
    <option :value="null">first run</option>
  </SelectInput>
  <output data-testid="typed-value">{{ JSON.stringify(runId) }}</output>
  <SelectInput v-model="pick" :options="metrics" data-testid="picker" @change="add">
    <option value="">+ Add a chart</option>
  </SelectInput>
  <output data-testid="added">{{ added.join(',') }}</output>
  <SelectInput :model-value="bound" :options="metrics" disabled data-testid="frozen" />
  <SelectInput :model-value="bound" :options="metrics" data-testid="one-way" @change="onRead" />
  <output data-testid="read">{{ read.join(',') }}</output>
  <button type="button" data-testid="follow" @click="bound = read[read.length - 1] ?? bound">follow</button>
</template>
`;

/** Builds the harness page (inside the repository, so that Vite finds vue) and returns its folder. */
async function buildHarness(): Promise<string> {
  const src = path.join(REPO_ROOT, 'test-results', `select-input-${process.pid}`);
  fs.rmSync(src, { recursive: true, force: true });
  fs.mkdirSync(src, { recursive: true });
  fs.writeFileSync(path.join(src, 'Harness.vue'), HARNESS);
  fs.writeFileSync(path.join(src, 'main.ts'), "import { createApp } from 'vue';\nimport Harness from './Harness.vue';\ncreateApp(Harness).mount('#app');\n");
  fs.writeFileSync(path.join(src, 'index.html'), '<!doctype html><html><body><div id="app"></div><script type="module" src="./main.ts"></script></body></html>');
  const [{ build }, { default: vue }] = await Promise.all([import('vite'), import('@vitejs/plugin-vue')]);
  const out = path.join(src, 'dist');
  await build({ configFile: false, root: src, base: './', plugins: [vue()], logLevel: 'error', build: { outDir: out, emptyOutDir: true, reportCompressedSize: false } });
  return out;
}

describe('SelectInput in Chromium', () => {
  let browser: Browser;
  let page: Page;
  let root: string;
  const errors: string[] = [];
  const text = async (testid: string) => (await page.getByTestId(testid).textContent()) ?? '';
  const chosen = (testid: string) => page.getByTestId(testid).evaluate((el) => (el as HTMLSelectElement).selectedOptions[0]?.textContent?.trim() ?? null);

  beforeAll(async () => {
    root = await buildHarness();
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('pageerror', (error) => errors.push(error.message));
    await page.route('http://harness.test/**', (route) => route.fulfill({ path: path.join(root, new URL(route.request().url()).pathname) }));
    await page.goto('http://harness.test/index.html');
    await page.getByTestId('typed').waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    fs.rmSync(path.dirname(root), { recursive: true, force: true });
  });

  it('lists the slot first, then the options, with their titles, disabled states and the attributes passed', async () => {
    const typed = page.getByTestId('typed');
    expect(await typed.evaluate((el) => [el.tagName, el.className, el.getAttribute('aria-label')])).toEqual(['SELECT', 'input extra', 'Baseline run']);
    const options = await typed.locator('option').evaluateAll((els) => els.map((o) => [o.textContent?.trim(), o.getAttribute('value'), o.getAttribute('title'), (o as HTMLOptionElement).disabled]));
    expect(options).toEqual([
      ['first run', null, null, false],
      ['#1 one', '1', 'the first run', false],
      ['#2 two', '2', null, true],
      ['#3 three', '3', null, false],
    ]);
    expect(await page.getByTestId('frozen').isDisabled()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('keeps the values’ types under v-model: a number, and null from the slot', async () => {
    expect(await chosen('typed')).toBe('#3 three');
    await page.getByTestId('typed').selectOption('1');
    await expect.poll(() => text('typed-value')).toBe('1');
    await page.getByTestId('typed').selectOption({ label: 'first run' });
    await expect.poll(() => text('typed-value')).toBe('null');
  });

  it('shows a v-model picker’s first option again when its parent puts the value back', async () => {
    await page.getByTestId('picker').selectOption('reward');
    await expect.poll(() => text('added')).toBe('reward');
    await expect.poll(() => chosen('picker')).toBe('+ Add a chart');
    await page.getByTestId('picker').selectOption('loss');
    await expect.poll(() => text('added')).toBe('reward,loss');
    await expect.poll(() => chosen('picker')).toBe('+ Add a chart');
  });

  it('bound one way, hands the pick to @change and keeps it until the bound value follows', async () => {
    await page.getByTestId('one-way').selectOption('reward');
    await expect.poll(() => text('read')).toBe('reward');
    expect(await chosen('one-way')).toBe('reward');
    await page.getByTestId('follow').click();
    expect(await chosen('one-way')).toBe('reward');
    expect(await chosen('frozen')).toBe('reward');
    expect(errors).toEqual([]);
  });
});

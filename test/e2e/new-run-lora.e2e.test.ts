/**
 * A qwen-lora-style run configured in the new-run form in a real browser (issue #14): a tiny
 * random Qwen3 folder as the one policy of every role, LoRA settings (targets as checkboxes of the
 * modules the folder has), the roles' prompt templates, the math task. A bad rank, a target the
 * model lacks and a template naming an unknown variable are each placed at their field with the
 * message `marsrl config validate` prints for the same document; fixed, a 2-step run starts and
 * finishes; its adapters are then exported from the run page as a PEFT folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { openSafetensors } from '../../src-main/engine/hf/safetensors';
import { marsrl } from '../helpers/cli';
import { keepScreenshot, screenshot } from './browser';
import { studioWithTinyQwen3 } from './studio-session';

const POLL = { timeout: 30_000, interval: 100 };
const SEVEN = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

let page: Page;
const studio = studioWithTinyQwen3('lora', 1024);
const { session } = studio;
beforeAll(() => {
  ({ page } = session);
});

async function fill(field: string, value: string): Promise<void> {
  const input = page.locator(`#field-${field}`);
  await input.fill(value);
  // Each value must stick before the next field is typed (a failure names the field).
  await expect.poll(() => input.inputValue(), POLL).toBe(value);
}
function placed(path: string) {
  return page.locator(`[data-issue-path="${path}"]`);
}
const status = () => page.getByTestId('form-status').textContent();

/** `marsrl config validate FILE`'s message for each path, as the CLI prints it (`  path: message (got …)`). */
function cliMessages(document: Record<string, unknown>): Map<string, string> {
  const file = path.join(session.dir, 'cli-check.json');
  fs.writeFileSync(file, JSON.stringify(document));
  const result = marsrl(['config', 'validate', file]);
  expect(result.code).not.toBe(0);
  const out = new Map<string, string>();
  for (const line of result.stderr.split('\n')) {
    const m = /^ {2}([\w.*-]+): (.*?)(?: \(got .*\))?$/.exec(line);
    if (m) out.set(m[1], m[2]);
  }
  return out;
}

describe('new-run form: the qwen-lora preset', () => {
  it('asks for the downloaded model folder, gives it to every policy, and checks the preset’s LoRA settings against that model', async () => {
    await session.open('#/runs');
    await session.open('#/new?preset=quick', { fresh: true });
    await expect.poll(status, POLL).toMatch(/Valid/);
    expect(await page.getByTestId('preset-folder').count()).toBe(0);
    await page.getByTestId('preset').selectOption('qwen-lora');
    const ask = page.getByTestId('preset-folder');
    await ask.waitFor();
    expect(await ask.textContent()).toMatch(/used by solver, verifier, corrector/);
    await expect.poll(() => page.getByTestId('preset-folder-issue').first().textContent(), POLL).toMatch(/missing: set policies\.solver\.model\.path .* to your downloaded Qwen folder/);
    expect(await page.getByTestId('launch').isDisabled()).toBe(true);

    await page.locator('#field-preset-model-folder').fill(studio.modelDir);
    for (const id of ['solver', 'verifier', 'corrector']) await expect.poll(() => page.locator(`#field-policies-${id}-model-path`).inputValue(), POLL).toBe(studio.modelDir);
    // The preset's rank 16 is more than the tiny model's k_proj (8 × 16) allows: said at each rank field.
    for (const id of ['solver', 'verifier', 'corrector']) {
      await expect.poll(() => placed(`policies.${id}.model.lora.rank`).textContent(), POLL).toMatch(/rank 16 is larger than the k_proj layer allows/);
    }
    expect(await page.getByTestId('preset-folder-issue').count()).toBe(0);
    expect(await page.locator('[data-policy="solver"] [data-testid="lora"]').getAttribute('data-enabled')).toBe('true');
  });
});

describe('new-run form: a qwen-lora-style run', () => {
  it('places a bad rank, a bad target and a bad template variable at their fields with the CLI’s messages; fixed, a 2-step LoRA run finishes; its adapters export from the run page', async () => {
    await session.open('#/runs');
    await session.open('#/new?preset=quick');
    await expect.poll(status, POLL).toMatch(/Valid/);

    // One policy for every role (Dr. MAS's shared setting), on the math word problems.
    for (const role of ['verifier', 'corrector']) await fill(`agents-${role}`, 'solver');
    for (const id of ['verifier', 'corrector']) await page.getByRole('button', { name: `Remove policy ${id}` }).click();
    await page.locator('#field-task-family').selectOption('math');
    await page.locator('#field-pipeline-mode').selectOption('sync');
    const tiny: [string, string][] = [
      ['name', 'e2e tiny lora run'],
      ['task-difficulty', '1'],
      ['task-train_size', '20'],
      ['task-test_size', '4'],
      ['rollout-problems_per_step', '1'],
      ['rollout-solver_group', '2'],
      ['rollout-select_k', '1'],
      ['rollout-verifier_group', '2'],
      ['rollout-corrector_group', '2'],
      ['rollout-max_response_tokens', '12'],
      ['pipeline-segment_tokens', '6'],
      ['pipeline-max_segments', '2'],
      ['optimization-steps', '2'],
      ['optimization-minibatch_size', '8'],
      ['pretrain-steps', '2'],
      ['eval-every', '0'],
      ['eval-k', '1'],
      ['eval-problems', '2'],
      ['policies-solver-init', ''],
    ];
    for (const [field, value] of tiny) await fill(field, value);

    // The folder as the policy's model; the inspect summary reads it and LoRA lists its modules.
    await page.locator('#field-policies-solver-model-kind').selectOption('hf');
    await fill('policies-solver-model-path', studio.modelDir);
    const solver = page.locator('[data-policy="solver"]');
    await expect.poll(() => solver.getByTestId('model-inspect').getAttribute('data-supported'), POLL).toBe('true');
    const lora = solver.getByTestId('lora');
    expect(await lora.getAttribute('data-enabled')).toBe('false');
    await lora.getByTestId('lora-toggle').check();
    await expect.poll(() => lora.getAttribute('data-enabled'), POLL).toBe('true');
    expect(await lora.locator('[data-module]').evaluateAll((els) => els.map((e) => e.getAttribute('data-module')))).toEqual(SEVEN);
    expect(await lora.locator('[data-module]:checked').count()).toBe(7);
    // k_proj / v_proj of the tiny model are 8×16 (one KV head of 8): rank ≤ 8 over all seven.
    expect(await lora.getByTestId('lora-max-rank').textContent()).toMatch(/rank up to 8/);
    expect(await page.locator('#field-policies-solver-model-lora-rank').inputValue()).toBe('8');

    // Short system prompts: the tiny model's context holds them with room for the responses.
    const prompts = page.locator('#group-prompts');
    expect(await prompts.locator('[data-role="verifier"] [data-testid="prompt-variable"]').allTextContents()).toEqual(['{question}', '{solution}', '{answer}']);
    expect(await page.locator('#field-prompts-solver-system').inputValue()).toMatch(/\\boxed\{answer\}/);
    expect(await prompts.locator('[data-role="solver"]').textContent()).toMatch(/shipped default/);
    await fill('prompts-solver-system', 'Solve it; end with \\boxed{answer}.');
    await fill('prompts-verifier-system', 'Check it; end with "Verdict: correct" or "Verdict: incorrect".');
    await fill('prompts-corrector-system', 'Fix it; end with \\boxed{answer}.');
    await expect.poll(status, POLL).toMatch(/Valid/);

    // Three mistakes: a rank above k_proj's 8, a module Qwen3 lacks, a variable the Solver lacks.
    await fill('policies-solver-model-lora-rank', '12');
    await fill('policies-solver-model-lora-targets-other', 'qkv_proj');
    await fill('prompts-solver-user', '{question}\nHint: {hint}');
    await expect.poll(status, POLL).toMatch(/3 problems to fix/);
    await prompts.locator('[data-role="solver"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'new-run-prompts');
    const cli = cliMessages({
      name: 'e2e tiny lora run',
      task: { family: 'math' },
      agents: { solver: 'solver', verifier: 'solver', corrector: 'solver' },
      policies: { solver: { model: { kind: 'hf', path: studio.modelDir, lora: { rank: 12, targets: [...SEVEN, 'qkv_proj'] } } } },
      rollout: { max_response_tokens: 12 },
      pipeline: { segment_tokens: 6 },
      prompts: { solver: { user: '{question}\nHint: {hint}' } },
    });
    for (const [field, pattern] of [
      ['policies.solver.model.lora.rank', /rank 12 is larger than the k_proj layer allows \(8×16, so at most min\(in, out\) = 8\)/],
      ['policies.solver.model.lora.targets', /"qkv_proj" is not a module of Qwen3ForCausalLM; its linear modules are q_proj, k_proj/],
      ['prompts.solver.user', /unknown template variable \{hint\}; the solver knows \{question\}/],
    ] as const) {
      const shown = (await placed(field).textContent())?.trim() ?? '';
      expect(shown, field).toMatch(pattern);
      expect(cli.get(field), field).toBe(shown);
    }
    expect(await page.getByTestId('launch').isDisabled()).toBe(true);
    await lora.scrollIntoViewIfNeeded();
    const shot = await screenshot(page, 'new-run-lora');
    keepScreenshot(shot, 'new-run-lora.png');

    // Fixed: a rank the layers allow, Qwen3's own modules only, the shipped user template.
    await fill('policies-solver-model-lora-rank', '4');
    await fill('policies-solver-model-lora-targets-other', '');
    await lora.locator('[data-module="gate_proj"]').uncheck();
    await page.locator('[data-restore="prompts.solver.user"]').click();
    await expect.poll(() => page.locator('#field-prompts-solver-user').inputValue(), POLL).toBe('{question}');
    await expect.poll(status, POLL).toMatch(/Valid/);
    expect(await placed('policies.solver.model.lora.rank').count()).toBe(0);

    await page.getByTestId('launch').click();
    await page.waitForURL(/#\/runs\/\d+$/);
    const runId = Number(/#\/runs\/(\d+)$/.exec(page.url())?.[1]);
    const run = session.store.runs.get(runId)!;
    const model = (run.config.policies as Record<string, { model: Record<string, unknown> }>).solver.model;
    expect(model).toMatchObject({ kind: 'hf', path: studio.modelDir, lora: { rank: 4, targets: SEVEN.filter((m) => m !== 'gate_proj') } });
    await page.locator('.run__header .status-badge--done, .run__header .status-badge--failed').waitFor({ timeout: 240_000 });
    const failure = session.store.events.events(runId).items.find((e) => e.level === 'error');
    expect(session.store.runs.get(runId)?.status, failure?.message).toBe('done');

    // The adapters out, from the run page: a PEFT folder under the per-user exports folder.
    await page.getByTestId('export-model').click();
    const dialog = page.getByTestId('model-export');
    await dialog.waitFor();
    expect(await dialog.locator('#model-export-policy option').allTextContents()).toEqual(['solver']);
    await dialog.locator('#model-export-format').selectOption('peft');
    await dialog.locator('#model-export-out').fill('tiny-lora-adapters');
    await dialog.getByTestId('model-export-start').click();
    await expect.poll(() => dialog.getByTestId('model-export-result').textContent(), { timeout: 120_000, interval: 200 }).toMatch(/adapter_model\.safetensors/);
    await screenshot(page, 'run-model-export');
    const out = path.join(session.dir, 'home', 'exports', 'tiny-lora-adapters');
    const config = JSON.parse(fs.readFileSync(path.join(out, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ peft_type: 'LORA', r: 4 });
    expect([...(config.target_modules as string[])].sort()).toEqual(SEVEN.filter((m) => m !== 'gate_proj').sort());
    // PEFT's names and shapes: lora_A is r × in, lora_B is out × r (k_proj of the tiny model: 8 × 16).
    const { tensors } = openSafetensors(path.join(out, 'adapter_model.safetensors'));
    expect(tensors.get('base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight')?.shape).toEqual([4, 16]);
    expect(tensors.get('base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight')?.shape).toEqual([8, 4]);
    expect(tensors.has('base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight')).toBe(false);
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });

    // The dataset export dialog lists the model export too: from it, the merged folder.
    const datasets = await session.openRunExport(runId);
    await datasets.getByTestId('export-model-from-dialog').click();
    await datasets.waitFor({ state: 'hidden' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`From run ${runId} (e2e tiny lora run)`);
    await dialog.locator('#model-export-format').selectOption('hf');
    expect(await dialog.locator('#model-export-out').inputValue()).toBe(`run-${runId}-solver-merged`);
    await dialog.getByTestId('model-export-start').click();
    await expect.poll(() => dialog.getByTestId('model-export-result').textContent(), { timeout: 120_000, interval: 200 }).toMatch(/Wrote the merged Hugging Face folder of solver/);
    const merged = path.join(session.dir, 'home', 'exports', `run-${runId}-solver-merged`);
    expect(fs.existsSync(path.join(merged, 'config.json'))).toBe(true);
    expect(openSafetensors(merged).tensors.has('model.layers.0.self_attn.k_proj.weight')).toBe(true);
  }, 400_000);
});

/**
 * The qwen-lora preset (issue #14): MarsRL with one LoRA adapter per role on a user's downloaded
 * Qwen folder, sized for one GPU workstation. Listed by `marsrl presets`; without the folder it is
 * refused naming each setting to give; with a (tiny, random) Qwen folder it validates as LoRA
 * r 16 / alpha 32 on every linear with the shipped MarsRL prompts; a folder too small for rank 16
 * is refused naming the layer.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROMPTS } from '../../src-main/engine/agents/prompts';
import { ConfigError, listPresets } from '../../src-main/engine/config/load';
import { loadRunConfig } from '../../src-main/engine/preflight';
import { DEFAULT_LORA_TARGETS, loraSettingsFromBlock } from '../../src-main/engine/hf/lora-settings';
import { marsrl, marsrlMain } from '../helpers/cli';
import { makeCheckpoint, type Checkpoint } from '../hf/fixtures';
import { tempDir } from '../helpers/tmp';
import { writeTinyQwen3Model } from '../training/hf-tiny';

const ROLES = ['solver', 'verifier', 'corrector'] as const;
let qwen: Checkpoint;
const folder = tempDir('marsrl-qwen-lora-');
beforeAll(() => {
  // Qwen3 layout with k/v 64→64 (rank 16 fits every linear) and a context the 768-token budget fits in.
  qwen = makeCheckpoint('qwen3', { context: 4096 });
});
afterAll(() => {
  qwen.cleanup();
  folder.cleanup();
});

const pathsTo = (dir: string) => ROLES.map((role) => `policies.${role}.model.path=${dir}`);

describe('the qwen-lora preset', () => {
  it('is listed, and without a model folder names each setting to give', () => {
    expect(listPresets().map((p) => p.name)).toContain('qwen-lora');
    expect(listPresets().find((p) => p.name === 'qwen-lora')?.description).toMatch(/Qwen2\.5-0\.5B-Instruct or Qwen3-0\.6B/);
    let error: unknown = null;
    try {
      loadRunConfig({ preset: 'qwen-lora' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues;
    expect(issues.map((i) => i.path)).toEqual(ROLES.map((role) => `policies.${role}.model.path`));
    for (const role of ROLES) {
      expect(issues.find((i) => i.path === `policies.${role}.model.path`)?.message).toMatch(
        new RegExp(`set policies\\.${role}\\.model\\.path \\(or --set policies\\.${role}\\.model\\.path=DIR\\) to your downloaded Qwen folder`),
      );
    }
  });

  it('with a Qwen folder: one LoRA adapter per role (r 16, alpha 32, every linear) on one base, MarsRL prompts, GPU-workstation sizes', () => {
    const { config } = loadRunConfig({ preset: 'qwen-lora', overrides: pathsTo(qwen.dir) });
    expect(config.task.family).toBe('math');
    expect(config.agents).toEqual({ solver: 'solver', verifier: 'verifier', corrector: 'corrector' });
    for (const role of ROLES) {
      const model = config.policies[role].model;
      expect(model.kind).toBe('hf');
      if (model.kind !== 'hf') continue;
      expect(model.path).toBe(qwen.dir);
      expect(loraSettingsFromBlock(model.lora!)).toMatchObject({ rank: 16, alpha: 32, targets: [...DEFAULT_LORA_TARGETS] });
    }
    expect(config.prompts).toEqual(DEFAULT_PROMPTS);
    expect(config.rollout.max_response_tokens).toBeGreaterThanOrEqual(512);
    expect(config.rollout.problems_per_step * config.rollout.solver_group).toBeGreaterThanOrEqual(64);
    expect(config.pipeline.segment_tokens * config.pipeline.max_segments).toBeGreaterThanOrEqual(config.rollout.max_response_tokens);
  });

  it('`marsrl config validate --preset qwen-lora --set …` refuses without the folder, accepts it, and refuses a base too small for rank 16 naming the layer', async () => {
    const missing = await marsrlMain(['config', 'validate', '--preset', 'qwen-lora']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/policies\.solver\.model\.path: missing: set policies\.solver\.model\.path \(or --set policies\.solver\.model\.path=DIR\) to your downloaded Qwen folder/);
    const ok = marsrl(['config', 'validate', '--preset', 'qwen-lora', ...pathsTo(qwen.dir).flatMap((s) => ['--set', s])]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/preset qwen-lora: valid \(seed \d+, task math, 3 policies, 200 steps\)/);
    // The tiny test Qwen3 has k/v 16→8: rank 16 is more than those layers allow.
    const small = writeTinyQwen3Model(path.join(folder.dir, 'small'), { context: 4096 });
    const tooSmall = await marsrlMain(['config', 'validate', '--preset', 'qwen-lora', ...pathsTo(small).flatMap((s) => ['--set', s])]);
    expect(tooSmall.code).toBe(2);
    expect(tooSmall.stderr).toMatch(/policies\.solver\.model\.lora\.rank: rank 16 is larger than the k_proj layer allows \(8×16, so at most min\(in, out\) = 8\)/);
  });
});

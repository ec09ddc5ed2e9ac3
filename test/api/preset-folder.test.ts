/**
 * StudioApi.getPreset for a preset that runs on the user's own downloaded model (qwen-lora,
 * issue #14): it cannot resolve without the folder, so the form gets it with the folder empty —
 * the preset's own values over the defaults — and validation names the one thing to give.
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { ConfigValidation, StudioApi } from '#shared/contract';
import { serviceInTemp } from '../helpers/service';
import { writeTinyQwen3Model } from '../training/hf-tiny';

const studio = serviceInTemp('http', 'marsrl-preset-folder-');
let service: StudioApi;
beforeAll(() => {
  service = studio.service;
});

describe('getPreset qwen-lora', () => {
  it('opens with the folder empty, the preset’s values over the defaults, and resolves once the folder is given', async () => {
    const raw = presetDocument('qwen-lora') as { policies: Record<string, { model: Record<string, unknown> }>; rollout: Record<string, unknown> };
    const doc = (await callStudio(service, 'getPreset', ['qwen-lora'])) as Record<string, Record<string, unknown>>;
    const policies = doc.policies as Record<string, { model: Record<string, unknown>; optimizer: Record<string, unknown> }>;
    expect(Object.keys(policies)).toEqual(Object.keys(raw.policies));
    for (const [id, p] of Object.entries(policies)) {
      expect(p.model, id).toEqual(raw.policies[id].model);
      expect(p.model.path, id).toBeUndefined();
      // The preset's learning rate, the default Adam betas beside it.
      expect(p.optimizer, id).toMatchObject({ lr: 2e-5, beta1: 0.9, beta2: 0.999 });
    }
    expect(doc.rollout.max_response_tokens).toBe(raw.rollout.max_response_tokens);
    // A section the preset leaves out carries the defaults.
    expect(doc.runtime).toEqual(resolveConfig({}).runtime);

    const checked = (await callStudio(service, 'validateConfig', [doc])) as ConfigValidation;
    expect(!checked.ok && checked.issues.map((i) => i.path).sort()).toEqual(Object.keys(raw.policies).map((id) => `policies.${id}.model.path`).sort());

    // Given a folder, the preset is checked against that model: the tiny one is far smaller than a
    // Qwen the preset is sized for (k_proj 8 × 16 < rank 16; 512-token context < 768-token responses).
    const folder = path.join(studio.dir, 'qwen');
    writeTinyQwen3Model(folder);
    for (const p of Object.values(policies)) p.model.path = folder;
    const withFolder = (await callStudio(service, 'validateConfig', [doc])) as ConfigValidation;
    expect(!withFolder.ok && [...new Set(withFolder.issues.map((i) => i.path.replace(/^policies\.[^.]+\./, '')))]).toEqual(['model.lora.rank', 'rollout.max_response_tokens']);
  });
});

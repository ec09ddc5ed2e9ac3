/**
 * The API's engine area (issue 38): the command an engine run config would submit, with every
 * refusal on its field, before anything runs; the Ray jobs of a run; and over HTTP, no local
 * interpreter the operator did not allow.
 */
import { describe, expect, it } from 'vitest';
import { createStudioService } from '../../src-main/api/service';
import { presetDocument } from '../../src-main/engine/config/load';
import { deepMerge } from '../../src-main/engine/config/load';
import type { StartRunRequest } from '#shared/contract';
import { storeInTemp } from '../helpers/runs-db';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { resolveLaunchConfig } from '../../src-main/runner/manager';

const db = storeInTemp('engine-api.db', 'marsrl-engine-api-');

const verl = (over: Record<string, unknown> = {}) =>
  deepMerge(presetDocument('verl-grpo'), deepMerge({ engine: { address: 'http://10.0.0.5:8265', python: '/opt/verl/bin/python', model: '/models/Qwen3-4B' } }, over));

describe('previewEngineRun', () => {
  const service = () => createStudioService({ store: db.store, databasePath: db.databasePath, transport: 'direct' });

  it('shows the exact command veRL will run, planned for the newest release known unless engine.version says', async () => {
    const preview = await service().previewEngineRun(verl());
    expect(preview.ok).toBe(true);
    if (!preview.ok) return;
    expect(preview).toMatchObject({ engine: 'verl', engineVersion: '0.9.0', versionFrom: 'assumed' });
    expect(preview.entrypoint).toMatch(/^'?\/opt\/verl\/bin\/python'? -m verl\.trainer\.main_ppo /);
    expect(preview.overrides).toContain('actor_rollout_ref.model.path=/models/Qwen3-4B');
    expect(preview.overrides).toContain('trainer.total_training_steps=100');
    expect(preview.env.VERL_FILE_LOGGER_PATH).toMatch(/attempt-1\/metrics\.jsonl$/);
    const pinned = await service().previewEngineRun(verl({ engine: { version: '0.7.1' } }));
    expect(pinned).toMatchObject({ ok: true, engineVersion: '0.7.1', versionFrom: 'engine.version' });
    // veRL 0.7.1 moved the reward function's keys under reward.*, 0.7.0 did not.
    if (pinned.ok) expect(pinned.overrides.some((o) => o.startsWith('reward.custom_reward_function.path='))).toBe(true);
    const older = await service().previewEngineRun(verl({ engine: { version: '0.7.0' } }));
    if (older.ok) expect(older.overrides.some((o) => o.startsWith('custom_reward_function.path='))).toBe(true);
    expect(older.ok).toBe(true);
  });

  it('places each setting the engine would refuse on its field', async () => {
    const refused = await service().previewEngineRun(verl({ rollout: { rounds: 1 }, engine: { tensor_parallel: 3 } }));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.issues.map((i) => i.path).sort()).toEqual(['engine.tensor_parallel', 'rollout.rounds']);
    expect(refused.issues.find((i) => i.path === 'rollout.rounds')?.message).toMatch(/set rollout\.rounds=0, or engine\.kind=drmas/);
  });

  it('reports schema problems by field, and says a Studio run submits nothing', async () => {
    const bad = await service().previewEngineRun(verl({ engine: { address: 'ftp://x', python: '' } }));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues.map((i) => i.path).sort()).toEqual(['engine.address', 'engine.python']);
    const studio = await service().previewEngineRun(presetDocument('quick'));
    expect(studio).toMatchObject({ ok: false, issues: [{ path: 'engine.kind' }] });
  });

  it('lists no Ray job for a Studio run', async () => {
    const runId = db.store.runs.create({ name: 'studio', preset: 'quick', config: presetDocument('quick'), codeVersion: 't', seed: 1 });
    expect(await service().getEngineJobs(runId)).toEqual([]);
    await expect(service().getEngineJobs(runId + 1000)).rejects.toThrow(/does not exist/);
  });
});

describe('startRun over HTTP', () => {
  const started: StartRunRequest[] = [];
  // As the run manager does: the request resolved once, the caller's check on it, then recorded.
  const controller = {
    start: async (r: StartRunRequest, check?: (config: RunConfig) => void) => {
      check?.(resolveLaunchConfig(r).config);
      started.push(r);
      return { runId: 1 };
    },
    stop: async () => {},
    resume: async () => {},
    isActive: () => false,
  };
  const http = () => createStudioService({ store: db.store, databasePath: db.databasePath, transport: 'http', runs: controller });

  it('runs no local interpreter the operator did not list, naming engine.python and the fix', async () => {
    const local = { preset: 'verl-grpo', config: { engine: { address: 'local', python: '/tmp/anything', model: '/models/m' } } };
    await expect(http().startRun(local)).rejects.toThrow(/engine\.python: over the HTTP API .*MARSRL_ENGINE_PYTHONS=\/tmp\/anything/);
    expect(started).toEqual([]);
    process.env.MARSRL_ENGINE_PYTHONS = '/usr/bin/python3:/tmp/anything';
    try {
      await http().startRun(local);
    } finally {
      delete process.env.MARSRL_ENGINE_PYTHONS;
    }
    // A cluster's interpreter runs on the cluster, as its job.
    await http().startRun({ preset: 'verl-grpo', config: { engine: { address: 'http://10.0.0.5:8265', python: '/tmp/anything', model: '/models/m' } } });
    expect(started).toHaveLength(2);
  });
});

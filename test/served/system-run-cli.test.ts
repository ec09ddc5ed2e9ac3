/**
 * A reasoning-system run as a user starts it (issue #16): `marsrl run --config sys.yaml` (a
 * config with a `system:` block) in a child process, its worker calling `marsrl serve-model`'s
 * API (here in the test's process), and `marsrl resume` of a stopped one, which has no checkpoint.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { loadRunConfig } from '../../src-main/engine/preflight';
import { initBackend } from '../../src-main/engine/model/backend';
import { systemRun } from '../../src-main/engine/system/system-run';
import { openStore } from '../../src-main/engine/store';
import { loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer, type ModelServer } from '../../src-main/server/openai/server';
import { MARSRL_BIN, REPO_ROOT } from '../helpers/cli';
import { approvals, approvedHome } from '../helpers/key-approvals';
import { tempDir } from '../helpers/tmp';
import { QUICK_CHECKPOINTS } from '../helpers/model-server';

const KEY = 'system-cli-secret-key-0a1b2c3d4e5f6789';

let tmp: ReturnType<typeof tempDir>;
let server: ModelServer;
let configFile: string;
// Issue #36: the data folder the spawned `marsrl` reads, with SYSTEM_CLI_KEY approved for the loopback server.
let home: ReturnType<typeof approvedHome>;

/** `marsrl ARGS` in a child process, without blocking this process (it serves the model). */
function marsrlAsync(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MARSRL_BIN, ...args], { cwd: REPO_ROOT, env: { ...process.env, MARSRL_DB: undefined, MARSRL_HOME: home.dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

beforeAll(async () => {
  await initBackend('wasm');
  tmp = tempDir('marsrl-system-cli-');
  home = approvedHome({ SYSTEM_CLI_KEY: ['127.0.0.1'] });
  server = await createModelServer({ policies: ['solver', 'verifier', 'corrector'].map((r) => loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, r))), token: KEY, log: () => {} });
  const endpoint = (model: string) => ({ base_url: server.baseUrl, model, api_key_env: 'SYSTEM_CLI_KEY', concurrency: 4 });
  configFile = path.join(tmp.dir, 'sys.yaml');
  fs.writeFileSync(
    configFile,
    YAML.stringify({
      preset: 'quick',
      pipeline: { mode: 'pipeline' },
      eval: { problems: 4, k: 2 },
      system: { mode: 'loop', max_iterations: 2, approvals: 2 },
      endpoints: { solver: endpoint('solver'), verifier: endpoint('verifier'), corrector: endpoint('corrector') },
      policies: { solver: { endpoint: 'solver' }, verifier: { endpoint: 'verifier' }, corrector: { endpoint: 'corrector' } },
    }),
  );
}, 60_000);

afterAll(async () => {
  await server?.close();
  tmp?.cleanup();
  home?.cleanup();
});

describe('marsrl run / resume of a reasoning-system run', () => {
  it('runs it in a worker (one, even for a pipeline-mode config) and reports the system metrics', async () => {
    const db = path.join(tmp.dir, 'cli.db');
    const missing = await marsrlAsync(['run', '--config', configFile, '--db', db], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/endpoints\.solver\.api_key_env: the environment variable SYSTEM_CLI_KEY is not set/);
    expect(fs.existsSync(db)).toBe(false);

    const r = await marsrlAsync(['run', '--config', configFile, '--db', db, '--json'], { SYSTEM_CLI_KEY: KEY });
    expect(r.stderr).not.toContain(KEY);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { runId: number; status: string; metrics: Record<string, number> };
    expect(out.status).toBe('done');
    expect(out.metrics['eval/system/accuracy']).toBeGreaterThanOrEqual(0);
    expect(out.metrics['system/calls']).toBeGreaterThanOrEqual(4 * 3 + 4 * 2);
    const store = openStore(db);
    try {
      const calls = store.db.prepare("SELECT COUNT(*) AS n FROM turns WHERE run_id = ? AND policy_id != 'oracle' AND superseded_by IS NULL").get(out.runId) as { n: number };
      expect(calls.n).toBe(out.metrics['system/calls']);
      expect(store.events.latestCheckpoint(out.runId)).toBeNull();
    } finally {
      store.close();
    }
  }, 120_000);

  it('config validate --probe asks serve-model with one of the run\'s prompts (a Studio GPT cannot encode "Say hi.")', async () => {
    const r = await marsrlAsync(['config', 'validate', configFile, '--probe'], { SYSTEM_CLI_KEY: KEY });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/endpoint verifier: serves solver, verifier, corrector/);
    expect(r.stdout).toMatch(/valid/);
  }, 60_000);

  it('resumes a stopped one from its stored turns', async () => {
    const db = path.join(tmp.dir, 'resume.db');
    const { config } = loadRunConfig({ file: configFile });
    const store = openStore(db);
    const runId = store.runs.create({ name: 'stopped', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
    const controller = new AbortController();
    const first = await systemRun({ store, runId, config, env: { SYSTEM_CLI_KEY: KEY }, pool: { keyApprovals: approvals({ SYSTEM_CLI_KEY: ['127.0.0.1'] }) }, signal: controller.signal, onProgress: (p) => (p.phase === 'pretrain' && p.step >= 3 ? controller.abort('stopped by the test') : undefined) });
    expect(first.status).toBe('interrupted');
    store.runs.setStatus(runId, 'interrupted', first.status === 'interrupted' ? first.reason : null);
    store.close();

    const r = await marsrlAsync(['resume', String(runId), '--db', db], { SYSTEM_CLI_KEY: KEY });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`Run ${runId} done`));
    const after = openStore(db);
    try {
      expect(after.events.latestOfKind(runId, 'resumed')?.message).toMatch(/finished calls are kept and not repeated/);
      expect(after.metrics.latest(runId, ['system/calls'])['system/calls']).toBeGreaterThan(0);
    } finally {
      after.close();
    }
  }, 120_000);
});

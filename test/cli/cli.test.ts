import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src-main/engine/store';
import { resolveConfig } from '../../src-main/engine/preflight';
import { marsrl, marsrlMain } from '../helpers/cli';
import { seededDatabase } from '../helpers/runs-db';

const db = seededDatabase('cli.db', (store) => {
  const config = resolveConfig({ seed: 4, reward: { scheme: 'shared' } });
  const id = store.runs.create({ name: 'cli-run', preset: 'quick', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: 4 });
  store.runs.setStatus(id, 'running');
  store.runs.setStatus(id, 'interrupted', 'worker killed (SIGKILL)');
  const writer = store.writer({ flushIntervalMs: 0 });
  writer.metric({ runId: id, step: 0, wallTime: 0, key: 'eval/system/accuracy', value: 0.5 });
  writer.metric({ runId: id, step: 3, wallTime: 1, key: 'eval/system/accuracy', value: 0.625 });
  writer.metric({ runId: id, step: 0, wallTime: 0, key: 'eval/verifier/recall', value: 0.25 });
  writer.close();
  store.events.log(id, 'warning', 'interrupted', 'rollout worker exited with SIGKILL', null, 3);
});

// The bin as a user runs it for the overview, an unknown command, JSON on stdout and the default
// data folder; the other commands through the CLI's main in this process (same code and output,
// without two CPU seconds of start-up each).
describe('marsrl CLI', () => {
  it('prints an overview and fails on an unknown command', () => {
    const help = marsrl(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Commands:[\s\S]*presets[\s\S]*config[\s\S]*runs[\s\S]*show/);
    const bad = marsrl(['frobnicate']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown command "frobnicate"/);
  });

  it('lists presets as a table and as JSON', async () => {
    const text = await marsrlMain(['presets']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/quick\s+Sorting/);
    const json = JSON.parse((await marsrlMain(['presets', '--json'])).stdout) as { name: string }[];
    expect(json.map((p) => p.name)).toEqual(expect.arrayContaining(['quick', 'marsrl-paper', 'drmas-paper']));
  });

  it('validates a good file and rejects a bad one with every field path, writing nothing', async () => {
    const good = path.join(db.dir, 'good.yaml');
    fs.writeFileSync(good, 'seed: 3\nrollout:\n  solver_group: 4\n');
    const ok = await marsrlMain(['config', 'validate', good], { MARSRL_DB: path.join(db.dir, 'never.db') });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/valid/);

    const bad = path.join(db.dir, 'bad.yaml');
    fs.writeFileSync(bad, 'seed: -1\nrollout:\n  solver_group: 0\n  colour: blue\npolicies:\n  solver:\n    optimizer:\n      lr: -0.1\n');
    const result = await marsrlMain(['config', 'validate', bad], { MARSRL_DB: path.join(db.dir, 'never.db') });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/seed: must be at least 0 \(got -1\)/);
    expect(result.stderr).toMatch(/rollout\.solver_group: must be at least 1 \(got 0\)/);
    expect(result.stderr).toMatch(/rollout\.colour: unknown key/);
    expect(result.stderr).toMatch(/policies\.solver\.optimizer\.lr: must be greater than 0 \(got -0\.1\)/);
    expect(fs.existsSync(path.join(db.dir, 'never.db'))).toBe(false);

    const missing = await marsrlMain(['config', 'validate', path.join(db.dir, 'nope.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/nope\.yaml.*no such file/s);
  });

  it('prints a resolved preset with overrides, as YAML and JSON', async () => {
    const yaml = await marsrlMain(['config', 'print', '--preset', 'quick', '--set', 'rollout.solver_group=4', '--set', 'reward.scheme=shared']);
    expect(yaml.code).toBe(0);
    expect(yaml.stdout).toMatch(/solver_group: 4/);
    const json = JSON.parse((await marsrlMain(['config', 'print', '--preset', 'quick', '--set', 'seed=9', '--json'])).stdout);
    expect(json.seed).toBe(9);
    expect(json.reward.scheme).toBe('decoupled');
    const badSet = await marsrlMain(['config', 'print', '--set', 'advantage.mode=fancy']);
    expect(badSet.code).toBe(2);
    expect(badSet.stderr).toMatch(/advantage\.mode: must be one of "agentwise"/);
    const badFlag = await marsrlMain(['config', 'print', '--colour']);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/Unknown option '--colour'/);
  });

  it('lists and shows runs from --db or MARSRL_DB', async () => {
    const list = await marsrlMain(['runs', '--db', db.path]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/cli-run\s+interrupted\s+quick\s+sort\s+shared\s+agentwise\s+4\s+3\s+0\.625/);
    const json = JSON.parse(marsrl(['runs', '--json'], { MARSRL_DB: db.path }).stdout);
    expect(json.items[0]).toMatchObject({ name: 'cli-run', status: 'interrupted', statusReason: 'worker killed (SIGKILL)', lastStep: 3 });

    const show = await marsrlMain(['show', 'cli-run', '--db', db.path]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/status\s+interrupted \(worker killed \(SIGKILL\)\)/);
    expect(show.stdout).toMatch(/eval\/system\/accuracy\s+0\.6250/);
    expect(show.stdout).toMatch(/rollout worker exited with SIGKILL/);
    expect(show.stdout).toMatch(/scheme: shared/);
    // Every evaluation, one column per step; a metric missing at a step shows a dash.
    expect(show.stdout).toMatch(/Held-out evaluations \(by step\):\s+metric\s+@0\s+@3/);
    expect(show.stdout).toMatch(/system\/accuracy\s+0\.500\s+0\.625/);
    expect(show.stdout).toMatch(/verifier\/recall\s+0\.250\s+—/);
    const showJson = JSON.parse((await marsrlMain(['show', '1', '--json', '--db', db.path])).stdout);
    expect(showJson.config.seed).toBe(4);
    expect(showJson.evaluations['eval/system/accuracy']).toEqual({ 0: 0.5, 3: 0.625 });

    const none = await marsrlMain(['show', '999', '--db', db.path]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/No run "999"/);
    const badStatus = await marsrlMain(['runs', '--status', 'paused', '--db', db.path]);
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toMatch(/--status must be one of queued, running, done, failed, interrupted/);
  });

  it('uses the per-user data folder by default, the same one the app uses', () => {
    const home = path.join(db.dir, 'home');
    const result = marsrl(['runs'], { MARSRL_HOME: home });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(path.join(home, 'marsrl.db'));
    expect(fs.existsSync(path.join(home, 'marsrl.db'))).toBe(true);
  });

  it('refuses a database from a newer schema with a clear message', async () => {
    const future = path.join(db.dir, 'future.db');
    const store = openStore(future);
    store.db.pragma('user_version = 99');
    store.close();
    const result = await marsrlMain(['runs', '--db', future]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/schema version 99.*upgrade MarsRL Studio/s);
  });
});

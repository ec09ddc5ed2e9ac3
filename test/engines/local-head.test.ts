/**
 * A local Ray head started and stopped only by the Studio (issue 38), the engine probe, the
 * dataset the engines read, and the attempt folders. The stand-in interpreter answers
 * `python -m ray.scripts.scripts start --head --block` by serving the fake Jobs API until SIGTERM.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import { attemptLayout, createAttemptFolder, existingAttempts, localPath, submissionIdOf } from '../../src-main/engine/engines/attempt';
import { writeDataset } from '../../src-main/engine/engines/dataset';
import { RayJobsClient } from '../../src-main/engine/engines/ray/client';
import { ensureLocalHead, readHeadRecord, stopLocalHead } from '../../src-main/engine/engines/ray/local-head';
import { parseProbe, probeLocal, probeOnCluster } from '../../src-main/engine/engines/ray/probe';
import { parseEngineRun } from '../../src-main/engine/engines/run-config';
import { FakeRay } from '../helpers/fake-ray';
import { STANDIN_PYTHON, presetDoc, smallRun } from '../helpers/engines';
import { closedPortUrl } from '../helpers/env';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-engine-local-');
afterAll(tmp.cleanup);

describe('a local head', () => {
  it('is started by the Studio, found again after a restart, and stopped by its own process group only', async () => {
    const dataDir = path.join(tmp.dir, 'studio-data');
    const port = Number(new URL(await closedPortUrl()).port);
    const head = await ensureLocalHead({ python: STANDIN_PYTHON, dataDir, dashboardPort: port, timeoutMs: 30_000 });
    expect(head).toMatchObject({ address: `http://127.0.0.1:${port}`, startedByStudio: true });
    const record = readHeadRecord(dataDir)!;
    expect(record.sessionName).toBe(head.sessionName);
    // A restarted Studio finds the same head, still its own.
    expect(await ensureLocalHead({ python: STANDIN_PYTHON, dataDir, dashboardPort: port })).toMatchObject({ startedByStudio: true, sessionName: head.sessionName });
    expect(await stopLocalHead(dataDir, 10_000)).toBe('stopped');
    expect((await new RayJobsClient({ address: head.address }).version().catch((e) => e)).code).toBe('unreachable');
    expect(readHeadRecord(dataDir)).toBeNull();
    expect(await stopLocalHead(dataDir)).toBe('not_ours');
  });

  it('uses a head the user started, and never stops it', async () => {
    const users = await new FakeRay().start();
    try {
      const dataDir = path.join(tmp.dir, 'studio-data-2');
      const port = Number(new URL(users.address).port);
      const head = await ensureLocalHead({ python: STANDIN_PYTHON, dataDir, dashboardPort: port });
      expect(head.startedByStudio).toBe(false);
      expect(await stopLocalHead(dataDir)).toBe('not_ours');
      expect((await new RayJobsClient({ address: users.address }).version()).ray_version).toBe('2.58.0');
    } finally {
      await users.close();
    }
  });
});

describe('the engine probe', () => {
  it('asks the interpreter directly, or as a Ray job on the cluster', async () => {
    const direct = await probeLocal(STANDIN_PYTHON);
    expect(direct).toMatchObject({ verl: '0.7.1', drmas: false, ray: '2.58.0', tensorboard: '2.20.0' });
    const fake = await new FakeRay({ pendingMs: 10, env: { STANDIN_PROBE: JSON.stringify({ verl: '0.3.1.dev', drmas: true, drmas_root: '/opt/DrMAS' }) } }).start();
    try {
      const remote = await probeOnCluster(new RayJobsClient({ address: fake.address }), STANDIN_PYTHON, { pollMs: 50 });
      expect(remote).toMatchObject({ verl: '0.3.1.dev', drmas: true, drmasRoot: '/opt/DrMAS' });
    } finally {
      await fake.close();
    }
    await expect(probeLocal(path.join(tmp.dir, 'no-such-python'))).rejects.toThrow(/engine.python: .*no such interpreter/);
  });

  it('reads the real probe script\'s answer from this machine\'s python3 (no veRL here)', async () => {
    const probe = await probeLocal('python3');
    expect(probe.python).toMatch(/python/);
    expect([probe.verl, probe.drmas]).toEqual([null, false]);
    expect(parseProbe('noise\nMARSRL_PROBE {"python": "/p", "verl": "0.9.0", "drmas": false}\n')).toMatchObject({ python: '/p', verl: '0.9.0', ray: null });
    expect(parseProbe('MARSRL_PROBE {broken')).toBeNull();
  });
});

describe('the dataset and the attempt folders', () => {
  const { config } = parseEngineRun(presetDoc('verl-grpo', smallRun({ engine: { model: '/m/x', python: '/p' } })));

  it('writes the task as veRL parquet (the export\'s columns, the Solver\'s chat prompt) and DrMAS parquet (env_kwargs)', async () => {
    const file = path.join(tmp.dir, 'ds', 'test.parquet');
    const written = writeDataset(config, { format: 'verl', split: 'test', rows: 4, runId: 7 }, file);
    expect([written.rows, written.reused]).toEqual([4, false]);
    const buf = fs.readFileSync(file);
    const rows = (await parquetReadObjects({ file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) })) as Record<string, unknown>[];
    expect(rows).toHaveLength(4);
    const row = rows[0] as { data_source: string; prompt: { role: string; content: string }[]; reward_model: { style: string; ground_truth: string }; extra_info: { run_id: bigint; question: string; split: string } };
    expect(row.data_source).toBe('marsrl/math');
    expect(row.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(row.prompt[0].content).toMatch(/\\boxed\{answer\}/);
    expect(row.prompt[1].content).toBe(row.extra_info.question);
    expect([row.reward_model.style, Number(row.extra_info.run_id), row.extra_info.split]).toEqual(['rule', 7, 'test']);
    const drmasFile = path.join(tmp.dir, 'ds-drmas', 'train.parquet');
    writeDataset(config, { format: 'drmas', split: 'train', rows: 3, runId: 7 }, drmasFile);
    const d = fs.readFileSync(drmasFile);
    const drows = (await parquetReadObjects({ file: d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength) })) as { prompt: { role: string; content: string }[]; env_kwargs: { question: string; ground_truth: string; data_source: string }; reward_model: { ground_truth: string } }[];
    expect(drows[0].prompt).toEqual([{ role: 'user', content: drows[0].env_kwargs.question }]);
    expect([drows[0].env_kwargs.ground_truth, drows[0].env_kwargs.data_source]).toEqual([drows[0].reward_model.ground_truth, 'marsrl/math']);
  });

  it('keeps a run\'s dataset for later attempts and refuses one made from other problems', () => {
    const file = path.join(tmp.dir, 'ds2', 'train.parquet');
    const first = writeDataset(config, { format: 'verl', split: 'train', rows: 10, runId: 1 }, file);
    const mtime = fs.statSync(file).mtimeMs;
    expect(writeDataset(config, { format: 'verl', split: 'train', rows: 10, runId: 1 }, file)).toEqual({ ...first, reused: true });
    expect(fs.statSync(file).mtimeMs).toBe(mtime);
    expect(() => writeDataset({ ...config, seed: config.seed + 1 }, { format: 'verl', split: 'train', rows: 10, runId: 1 }, file)).toThrow(/written for an earlier attempt from other problems/);
  });

  it('never writes into an earlier attempt\'s folder', () => {
    const runDir = path.join(tmp.dir, 'run-1-aaaa');
    const a1 = attemptLayout(runDir, runDir, 1);
    expect(createAttemptFolder(a1, submissionIdOf(1, 'aaaa', 1))).toEqual({ created: true });
    fs.writeFileSync(localPath(a1, a1.submissionFile), JSON.stringify({ submission_id: submissionIdOf(1, 'aaaa', 1) }));
    // The same submission again (a Studio restarted before Ray answered): allowed, nothing rewritten.
    expect(createAttemptFolder(a1, submissionIdOf(1, 'aaaa', 1))).toEqual({ created: false });
    // Another submission into that attempt: refused.
    expect(() => createAttemptFolder(a1, 'marsrl-1-aaaa-a9')).toThrow(/already holds submission marsrl-1-aaaa-a1; an attempt's files are never overwritten/);
    expect(createAttemptFolder(attemptLayout(runDir, runDir, 2), submissionIdOf(1, 'aaaa', 2))).toEqual({ created: true });
    expect(existingAttempts(runDir)).toEqual([1, 2]);
    expect(() => attemptLayout('relative/run', runDir, 1)).toThrow(/absolute/);
  });
});

/**
 * `marsrl serve-model` as a user starts it: a child process, driven by the official openai client.
 * The refusals (bad flags, folders, steps: nothing is served) run through the CLI's `main` in this
 * process, the same code and exit code without a Node start-up each.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src-main/engine/store';
import { marsrlMain, REPO_ROOT } from '../helpers/cli';
import { startListening } from '../helpers/serve-process';
import { tempDir } from '../helpers/tmp';
import { openAiClient } from '../helpers/model-server';

const startServeModel = (args: string[], env: NodeJS.ProcessEnv = {}) => startListening('serve-model', args, /Serving on (\S+)/, env);

describe('marsrl serve-model (child process)', () => {
  it('serves the shipped quick checkpoints on loopback and stops on Ctrl-C', async () => {
    const served = startServeModel(['resources/checkpoints/quick/solver', 'resources/checkpoints/quick/corrector=fixer', '--port', '0', '--backend', 'wasm']);
    try {
      const baseURL = await served.ready;
      expect(baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(served.stdout()).toMatch(/Only this machine can connect/);
      const client = openAiClient(baseURL);
      expect((await client.models.list()).data.map((m) => m.id)).toEqual(['solver', 'fixer']);
      const r = await client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: 'sort 53819072' }], temperature: 0, max_tokens: 64 });
      expect(r.choices[0].message.content).toMatch(/ A:\d+$/);
    } finally {
      expect(await served.stop()).toBe(0);
    }
    expect(served.stderr()).toMatch(/Stopped\./);
  });

  it('decodes in a thread of its own or in the HTTP thread (--engine) with the same answers, and stops cleanly', async () => {
    const args = ['resources/checkpoints/quick/solver', '--port', '0', '--backend', 'wasm'];
    const request = { model: 'solver', messages: [{ role: 'user' as const, content: 'sort 53819072' }], temperature: 1, seed: 11, n: 2, max_tokens: 64 };
    const answers: string[][] = [];
    // auto picks the thread from two cores up (these machines have two or more).
    const modes: Array<[string[], RegExp]> = [
      [['--engine', 'inline'], /decoding in the HTTP thread/],
      [['--engine', 'thread'], /decoding in its own thread/],
      [['--engine-thread'], /decoding in its own thread/],
      [[], os.availableParallelism() >= 2 ? /decoding in its own thread/ : /decoding in the HTTP thread/],
    ];
    for (const [extra, where] of modes) {
      const served = startServeModel([...args, ...extra]);
      try {
        const client = openAiClient(await served.ready);
        expect(served.stdout()).toMatch(where);
        expect(served.stdout()).toMatch(/solver .*\(context 128 tokens\)/);
        answers.push((await client.chat.completions.create(request)).choices.map((c) => c.message.content ?? ''));
      } finally {
        expect(await served.stop()).toBe(0);
      }
    }
    for (const a of answers.slice(1)) expect(a).toEqual(answers[0]);
    expect(answers[0][0]).toMatch(/ A:/);
    const bad = await marsrlMain(['serve-model', 'resources/checkpoints/quick/solver', '--engine', 'gpu']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--engine must be one of auto, thread, inline \(got "gpu"\)/);
    const both = await marsrlMain(['serve-model', 'resources/checkpoints/quick/solver', '--engine-thread', '--engine', 'inline']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--engine-thread is --engine thread; it contradicts --engine inline/);
  });

  it('off loopback generates a key and requires it', async () => {
    const served = startServeModel(['resources/checkpoints/quick/solver', '--host', '0.0.0.0', '--port', '0', '--backend', 'wasm']);
    try {
      const baseURL = await served.ready;
      const key = /API key: (\S+) \(generated/.exec(served.stdout())![1];
      expect(key.length).toBeGreaterThanOrEqual(32);
      const without = await openAiClient(baseURL, 'not-the-key-at-all').models.list().catch((e: unknown) => e);
      expect((without as { status?: number }).status).toBe(401);
      expect((await openAiClient(baseURL, key).models.list()).data[0].id).toBe('solver');
    } finally {
      await served.stop();
    }
  });

  it('names the flag or folder that is wrong', async () => {
    const none = await marsrlMain(['serve-model']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/nothing to serve: give a checkpoint folder or --run RUN/);
    const missing = await marsrlMain(['serve-model', 'no/such/folder', '--backend', 'cpu']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no\/such\/folder: no such folder/);
    const role = await marsrlMain(['serve-model', 'resources/checkpoints/quick/solver', '--role', 'judge']);
    expect(role.stderr).toMatch(/--role must be one of solver, verifier, corrector/);
    const notCkpt = await marsrlMain(['serve-model', 'resources/checkpoints', '--backend', 'cpu']);
    expect(notCkpt.code).toBe(1);
    expect(notCkpt.stderr).toMatch(/not a Studio checkpoint folder \(no checkpoint\.json\)/);
  });

  it('--run serves the policies of a run\'s latest checkpoint, and names a checkpoint that is gone', async () => {
    const tmp = tempDir();
    try {
      const db = path.join(tmp.dir, 'runs.db');
      const store = openStore(db);
      const runId = store.runs.create({ name: 'served-run', config: {}, codeVersion: 't', seed: 1 });
      for (const step of [10, 20]) {
        for (const role of ['solver', 'verifier']) {
          const dir = path.join(tmp.dir, 'checkpoints', `step-0000${step}`, role);
          if (step === 20) fs.cpSync(path.join(REPO_ROOT, 'resources/checkpoints/quick', role), dir, { recursive: true });
          store.events.addCheckpoint({ runId, step, policyId: role, path: dir, createdAt: Date.now(), metrics: null });
        }
      }
      store.close();
      const served = startServeModel(['--run', 'served-run', '--db', db, '--port', '0', '--backend', 'wasm']);
      try {
        const baseURL = await served.ready;
        const client = openAiClient(baseURL);
        expect((await client.models.list()).data.map((m) => m.id)).toEqual(['solver', 'verifier']);
        expect(served.stdout()).toContain(path.join('step-000020', 'solver'));
      } finally {
        await served.stop();
      }
      const gone = await marsrlMain(['serve-model', '--run', 'served-run', '--step', '10', '--db', db]);
      expect(gone.code).toBe(2);
      expect(gone.stderr).toMatch(/step-000010.solver is gone \(a run keeps its two newest checkpoints\); pick another --step/);
      const wrong = await marsrlMain(['serve-model', '--run', 'served-run', '--step', '15', '--db', db]);
      expect(wrong.stderr).toMatch(/--step 15: run served-run has checkpoints at steps 10, 20/);
    } finally {
      tmp.cleanup();
    }
  });
});


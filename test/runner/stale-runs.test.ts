/**
 * Stale runs (issue #17): every process of a run SIGKILLed at once (power loss, the OOM killer)
 * leaves it recorded `running` with nobody to mark it. `marsrl runs`, `marsrl show` and the API
 * read it as interrupted, with why, and `marsrl serve` marks it so when it starts.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStudioService } from '../../src-main/api/service';
import { openStore } from '../../src-main/engine/store';
import { isProcessAlive, staleRunReason } from '../../src-main/engine/store/liveness';
import { startServe } from '../helpers/serve-process';
import { marsrl, marsrlMain } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';
import { tinyConfig } from '../training/tiny';

describe('staleRunReason', () => {
  const now = 10_000_000;
  const run = { status: 'running' as const, workerPid: 42, heartbeatAt: now - 1000, startedAt: now - 5000 };
  it('a live, reporting worker is not stale; a run that is not running never is', () => {
    expect(staleRunReason(run, { now, staleAfterMs: 60_000, isAlive: () => true })).toBeNull();
    expect(staleRunReason({ ...run, status: 'interrupted' }, { now, staleAfterMs: 60_000, isAlive: () => false })).toBeNull();
  });
  it('a dead pid is stale at once, and says which', () => {
    expect(staleRunReason(run, { now, staleAfterMs: 60_000, isAlive: (pid) => pid !== 42 })).toBe('its worker process (pid 42) is gone');
  });
  it('a heartbeat older than the bound is stale even if the pid exists (reused after a reboot)', () => {
    const reason = staleRunReason({ ...run, heartbeatAt: now - 120_000 }, { now, staleAfterMs: 60_000, isAlive: () => true });
    expect(reason).toMatch(/pid 42\) has not reported for 2 min \(last at /);
    expect(staleRunReason({ ...run, heartbeatAt: now - 59_000 }, { now, staleAfterMs: 60_000, isAlive: () => true })).toBeNull();
  });
  it('no pid recorded: stale once the last report (or the start) is older than the bound', () => {
    expect(staleRunReason({ ...run, workerPid: null }, { now, staleAfterMs: 60_000 })).toBeNull();
    expect(staleRunReason({ ...run, workerPid: null, heartbeatAt: null, startedAt: now - 120_000 }, { now, staleAfterMs: 60_000 })).toMatch(/no worker process has reported for over 2 min/);
  });
});

describe('a run whose every process was SIGKILLed at once', () => {
  let tmp: ReturnType<typeof tempDir>;
  let databasePath: string;
  let runId = -1;

  beforeAll(async () => {
    tmp = tempDir('marsrl-stale-');
    databasePath = path.join(tmp.dir, 'runs.db');
    openStore(databasePath).close();
    const config = tinyConfig({ optimization: { steps: 8, checkpoint_every: 1 } });
    // Its own process group, so one kill(-pgid) takes the manager and its worker together, as
    // power loss or the OOM killer would: nothing gets to mark the run.
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, '..', 'pipeline', 'fixtures', 'managed-run.ts'), databasePath, JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    const lines = readline.createInterface({ input: child.stdout! });
    await new Promise<void>((resolve, reject) => {
      child.once('exit', () => reject(new Error('the managing process ended early')));
      lines.on('line', (line) => {
        let m: { type: string; runId?: number; step?: number };
        try {
          m = JSON.parse(line) as typeof m;
        } catch {
          return;
        }
        if (m.type === 'started') runId = m.runId!;
        if (m.type === 'step' && m.step! >= 2) {
          child.removeAllListeners('exit');
          process.kill(-child.pid!, 'SIGKILL');
          child.once('exit', () => resolve());
        }
      });
    });
    // The worker was in the group too; give the kernel a moment to reap it.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }, 120_000);
  afterAll(() => tmp.cleanup());

  it('is still recorded running, with a dead pid', () => {
    const store = openStore(databasePath, { readonly: true });
    const run = store.runs.get(runId)!;
    store.close();
    expect(run.status).toBe('running');
    expect(run.workerPid).not.toBeNull();
    expect(isProcessAlive(run.workerPid)).toBe(false);
  });

  it('reads as interrupted, with why, in marsrl runs, marsrl show and the API', async () => {
    const runs = marsrl(['runs', '--db', databasePath, '--json']);
    expect(runs.code, runs.stderr).toBe(0);
    const listed = (JSON.parse(runs.stdout) as { items: { id: number; status: string; statusReason: string; actions: { kind: string; command: string }[] }[] }).items.find((r) => r.id === runId)!;
    expect(listed.status).toBe('interrupted');
    // The reason says what happened; what to do about it is `actions` (issue 35), which knows a checkpoint exists.
    expect(listed.statusReason).toMatch(/^its worker process \(pid \d+\) is gone$/);
    expect(listed.actions).toEqual([expect.objectContaining({ kind: 'resume', command: `marsrl resume ${runId}` })]);

    // The --json listings run as marsrl processes; the table and `show` through the CLI's `main` in
    // this process (the same output, without a Node start-up each).
    const table = await marsrlMain(['runs', '--db', databasePath]);
    expect(table.stdout).toMatch(new RegExp(`^\\s*${runId}\\b.*interrupted`, 'm'));
    expect(table.stdout).not.toMatch(/running/);
    const running = marsrl(['runs', '--status', 'running', '--db', databasePath, '--json']);
    expect(running.code, running.stderr).toBe(0);
    expect((JSON.parse(running.stdout) as { items: { id: number }[] }).items.map((r) => r.id)).not.toContain(runId);

    const show = await marsrlMain(['show', String(runId), '--db', databasePath]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/status\s+interrupted \(its worker process \(pid \d+\) is gone\)/);
    expect(show.stdout).toMatch(new RegExp(`next\\s+resume from its checkpoint of step \\d+ \\(the steps after it are redone\\): marsrl resume ${runId}`));

    const store = openStore(databasePath, { readonly: true });
    const service = createStudioService({ store, databasePath, transport: 'http' });
    expect((await service.getRun(runId)).status).toBe('interrupted');
    expect((await service.listRuns()).items.find((r) => r.id === runId)!.statusReason).toMatch(/is gone/);
    store.close();
  });

  it('marsrl serve marks it interrupted when it starts, and it resumes', async () => {
    const rendererDir = path.join(tmp.dir, 'renderer');
    fs.mkdirSync(rendererDir, { recursive: true });
    fs.writeFileSync(path.join(rendererDir, 'index.html'), '<!doctype html><title>served</title>');
    const served = await startServe(['--db', databasePath, '--port', '0', '--renderer', rendererDir]);
    try {
      expect(served.stderr()).toMatch(new RegExp(`Marked 1 run\\(s\\) interrupted.*${runId}`));
    } finally {
      await served.stop();
    }
    const store = openStore(databasePath);
    const run = store.runs.get(runId)!;
    expect(run.status).toBe('interrupted');
    expect(run.statusReason).toMatch(/worker process \(pid \d+\) is gone/);
    expect(store.events.events(runId, 0, 1000).items.some((e) => e.kind === 'stale_run')).toBe(true);
    expect(store.integrityCheck()).toEqual(['ok']);
    store.close();
    const resumed = marsrl(['resume', String(runId), '--db', databasePath]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const after = openStore(databasePath, { readonly: true });
    expect(after.runs.get(runId)!.status).toBe('done');
    after.close();
  }, 120_000);
});

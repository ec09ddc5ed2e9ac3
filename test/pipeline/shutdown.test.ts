import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src-main/engine/store';
import { createRunManager } from '../../src-main/runner/manager';
import { runsDatabase } from '../helpers/runs-db';
import { until } from '../helpers/until';
import { tinyConfig } from '../training/tiny';

let store: Store;
let databasePath: string;
const database = runsDatabase();
beforeAll(() => {
  ({ store, databasePath } = database);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the managing process (CLI or app) closes while a run is going', () => {
  it.each(['pipeline', 'sync'] as const)('SIGKILLed manager (%s): the workers stop cleanly, the trainer marks the run, and it resumes to done', async (mode) => {
    const config = tinyConfig({ optimization: { steps: 12, checkpoint_every: 1 }, pipeline: { mode, segment_tokens: 16, max_segments: 2, max_staleness: 1 } });
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures', 'managed-run.ts'), databasePath, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pids: Record<string, number> = {};
    let runId = -1;
    const lines = readline.createInterface({ input: child.stdout! });
    await new Promise<void>((resolve, reject) => {
      child.once('exit', () => reject(new Error('the managing process ended early')));
      // The workers share this stdout; only the fixture's JSON lines matter.
      lines.on('line', (line) => {
        let m: { type: string; role?: string; pid?: number; runId?: number; step?: number };
        try {
          m = JSON.parse(line) as typeof m;
        } catch {
          return;
        }
        if (m.type === 'started') {
          pids[m.role!] = m.pid!;
          runId = m.runId!;
        }
        if (m.type === 'step' && m.step! >= 2 && pids.trainer && (mode === 'sync' || pids.rollout)) {
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    // No one is left to mark the run: the workers notice the closed channel and stop.
    await until(() => Object.values(pids).every((pid) => !alive(pid)), 30_000);
    const run = store.runs.get(runId)!;
    expect(run.status).toBe('interrupted');
    expect(run.statusReason).toBe('the managing process exited');
    expect(store.events.events(runId).items.some((e) => e.kind === 'interrupted')).toBe(true);
    const check = new Database(databasePath, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();

    const manager = createRunManager({ store, databasePath });
    await manager.resume(runId);
    await manager.waitForExit(runId);
    expect(store.runs.get(runId)!.status).toBe('done');
    expect(store.metrics.series(runId, 'solver/reward/mean').items.map((p) => p.step).at(-1)).toBe(11);
  });
});

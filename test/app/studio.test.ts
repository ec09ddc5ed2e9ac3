/**
 * The composition root (issue 37): `openStudio` assembles what the desktop app, `marsrl serve`
 * and the benchmarks each used to assemble by hand — store, event hub, run manager, service and,
 * for `marsrl serve`, the watcher of other processes' writes — and closes it in one order: the
 * watcher, then the edges that serve it, then this process's runs, then the database.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openStudio } from '../../src-main/app/studio';
import { openStore, type Store } from '../../src-main/engine/store';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let databasePath: string;
let staleRun: number;
let other: Store;

/** A run recorded `running` whose worker is gone: what a SIGKILL of every process leaves. */
function recordStaleRun(store: Store): number {
  const id = store.runs.create({ name: 'killed', config: {}, codeVersion: 'test', seed: 1, status: 'running' });
  const gone = spawnSync(process.execPath, ['-e', '']).pid!;
  store.runs.heartbeat(id, gone);
  return id;
}

beforeEach(() => {
  tmp = tempDir('marsrl-studio-');
  databasePath = path.join(tmp.dir, 'studio.db');
  // A second connection stands for another process (`marsrl run` in another terminal).
  other = openStore(databasePath);
  staleRun = recordStaleRun(other);
});

afterEach(() => {
  other.close();
  tmp.cleanup();
});

describe('openStudio', () => {
  it('with an origin: a run manager over the store, the runs a dead process left marked interrupted, the service on the given transport', async () => {
    const studio = openStudio({ databasePath, transport: 'http', origin: 'marsrl serve' });
    expect(studio.manager).not.toBeNull();
    expect(studio.recovered).toEqual([staleRun]);
    expect(studio.store.runs.get(staleRun)).toMatchObject({ status: 'interrupted' });
    expect(await studio.service.appInfo()).toMatchObject({ databasePath, transport: 'http' });
    await studio.close();
    expect(studio.store.db.open).toBe(false);
  });

  it('without an origin: no manager, nothing recovered, and the service refuses to launch a run', async () => {
    const studio = openStudio({ databasePath, transport: 'direct' });
    expect(studio.manager).toBeNull();
    expect(studio.recovered).toEqual([]);
    expect(studio.store.runs.get(staleRun)).toMatchObject({ status: 'running' });
    await expect(studio.service.startRun({ preset: 'quick' })).rejects.toThrow(/cannot launch runs/);
    await studio.close();
  });

  it('serves a store the caller opened, and closes it', async () => {
    const store = openStore(databasePath);
    const studio = openStudio({ databasePath, store, transport: 'electron', origin: 'the app' });
    expect(studio.store).toBe(store);
    expect(studio.recovered).toEqual([staleRun]);
    await studio.close({ reason: 'the app was closed' });
    expect(store.db.open).toBe(false);
  });

  it('with watch: what another process commits is published on the hub, until the Studio closes', async () => {
    const studio = openStudio({ databasePath, transport: 'http', watch: { intervalMs: 20 } });
    const seen: unknown[] = [];
    studio.hub.subscribe((event) => seen.push(event));
    const created = other.runs.create({ name: 'from-the-cli', config: {}, codeVersion: 'test', seed: 2 });
    await vi.waitFor(() => expect(seen).toContainEqual({ type: 'run-created', runId: created }), { timeout: 5000 });
    await studio.close();
    const after = seen.length;
    other.runs.create({ name: 'after-close', config: {}, codeVersion: 'test', seed: 3 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toHaveLength(after);
  });

  it('closes in order: the watcher, then each edge while the database is still open, then the database', async () => {
    const studio = openStudio({ databasePath, transport: 'http', origin: 'marsrl serve', watch: { intervalMs: 20 } });
    const seen: unknown[] = [];
    studio.hub.subscribe((event) => seen.push(event));
    const order: string[] = [];
    const edge = (name: string) => ({
      close: async () => {
        // Written while the edge closes: a watcher still polling would publish it.
        other.runs.create({ name, config: {}, codeVersion: 'test', seed: 4 });
        await new Promise((resolve) => setTimeout(resolve, 80));
        order.push(`${name}: database ${studio.store.db.open ? 'open' : 'closed'}`);
      },
    });
    await studio.close({ edges: [edge('http'), edge('ws')] });
    expect(order).toEqual(['http: database open', 'ws: database open']);
    expect(studio.store.db.open).toBe(false);
    expect(seen).toEqual([]);
  });
});

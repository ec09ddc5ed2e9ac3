import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StudioEvent } from '#shared/contract';
import { EventHub } from '../../src-main/api/hub';
import { openStore, type Store } from '../../src-main/engine/store';
import { Rng } from '../../src-main/engine/util/rng';
import { watchStore, type StoreWatcher } from '../../src-main/app/watch';
import { seedStudio, writeSteps, type Seeded } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let serverStore: Store;
let otherProcess: Store;
let seeded: Seeded;
let hub: EventHub;
let watcher: StoreWatcher;
const events: StudioEvent[] = [];

beforeAll(() => {
  tmp = tempDir('marsrl-watch-');
  const databasePath = path.join(tmp.dir, 'watch.db');
  serverStore = openStore(databasePath);
  seeded = seedStudio(serverStore);
  // A second connection stands for `marsrl run` in another terminal.
  otherProcess = openStore(databasePath);
  hub = new EventHub();
  hub.subscribe((event) => events.push(event));
  watcher = watchStore(serverStore, hub, { intervalMs: 60_000 });
});

afterAll(() => {
  watcher.stop();
  otherProcess.close();
  serverStore.close();
  tmp.cleanup();
});

describe('store watcher: changes by other processes become pushed events', () => {
  it('stays quiet while nobody else writes', () => {
    watcher.poll();
    watcher.poll();
    expect(events).toEqual([]);
  });

  it('pushes progress of a running run, with its latest headline metrics', () => {
    const writer = otherProcess.writer({ flushIntervalMs: 0 });
    writeSteps(otherProcess, writer, seeded.running, 24, 27, new Rng(5, 'watch'));
    writer.close();
    watcher.poll();
    const progress = events.filter((e) => e.type === 'run-progress');
    expect(progress).toHaveLength(1);
    expect(progress[0]).toMatchObject({ runId: seeded.running.id, step: 26, totalSteps: 60 });
    const metrics = (progress[0] as Extract<StudioEvent, { type: 'run-progress' }>).metrics;
    expect(metrics['system/accuracy']).toBe(otherProcess.metrics.latest(seeded.running.id, ['system/accuracy'])['system/accuracy']);
    events.length = 0;
  });

  it('pushes new event rows, status changes, edits, new and deleted runs', () => {
    otherProcess.events.log(seeded.running.id, 'warning', 'grad_spike', 'solver/grad_norm spiked', null, 26);
    otherProcess.runs.setStatus(seeded.running.id, 'done');
    otherProcess.runs.setNotes(seeded.done.id, 'edited elsewhere');
    const created = otherProcess.runs.create({ name: 'from the CLI', config: {}, codeVersion: 't', seed: 9 });
    otherProcess.runs.delete(seeded.failed.id);
    watcher.poll();
    expect(events).toContainEqual({ type: 'run-status', runId: seeded.running.id, status: 'done', reason: null });
    expect(events).toContainEqual({ type: 'run-updated', runId: seeded.done.id });
    expect(events).toContainEqual({ type: 'run-created', runId: created });
    expect(events).toContainEqual({ type: 'run-deleted', runId: seeded.failed.id });
    const logged = events.find((e) => e.type === 'event');
    expect(logged).toMatchObject({ type: 'event', runId: seeded.running.id, event: { kind: 'grad_spike', level: 'warning', step: 26 } });
    events.length = 0;
    watcher.poll();
    expect(events).toEqual([]);
  });
});

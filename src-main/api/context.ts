/**
 * What every area of the StudioApi service shares (service.ts composes the areas): the store, the
 * event hub, the run manager when this surface has one, the worker thread for untrusted files, and
 * the rules every area applies alike (a run must exist; writes over HTTP stay in the Studio's
 * folders).
 */
import type { AppInfo } from '#shared/contract';
import { StudioError } from '#shared/errors';
import type { RunRow, Store } from '../engine/store';
import type { RunController } from '../runner/manager';
import type { EventHub } from './hub';
import { OffThread } from './off-thread';
import { confinedOutput, writableRoots } from './write-paths';

export interface StudioServiceOptions {
  store: Store;
  databasePath: string;
  transport: AppInfo['transport'];
  runs?: RunController;
  hub?: EventHub;
  /**
   * Where model folders are inspected and configs checked against this machine (issue #36): a
   * worker thread by default, so a hostile folder or task file never holds the caller's thread.
   */
  offThread?: OffThread;
}

export interface ServiceContext {
  readonly store: Store;
  readonly databasePath: string;
  readonly transport: AppInfo['transport'];
  readonly runs: RunController | undefined;
  readonly hub: EventHub | undefined;
  /** The worker thread for model folders and configs (the caller's, or one made on first use). */
  thread(): OffThread;
  /** The path to write for a caller's `given` path (relative: under the exports folder), checked as write-paths.ts says. */
  outputPath(given: string, field: string): string;
  /** The run, or `not_found`. */
  requireRun(runId: number): RunRow;
  /** The run manager, or `conflict` on a surface that cannot launch runs. */
  controller(): RunController;
}

export function createServiceContext({ store, databasePath, transport, runs, hub, offThread }: StudioServiceOptions): ServiceContext {
  let ownThread: OffThread | null = null;
  // Over the HTTP API (anyone holding the token) writes stay inside the Studio's folders; the
  // desktop app's dialog and the CLI write where their user says (issue #36).
  const writeRoots = transport === 'http' ? writableRoots(databasePath) : null;
  return {
    store,
    databasePath,
    transport,
    runs,
    hub,
    thread: () => offThread ?? (ownThread ??= new OffThread()),
    outputPath: (given, field) => confinedOutput(given, field, writeRoots),
    requireRun(runId) {
      const run = store.runs.get(runId);
      if (!run) throw new StudioError('not_found', `run ${runId} does not exist`);
      return run;
    },
    controller() {
      if (!runs) throw new StudioError('conflict', 'this surface cannot launch runs (no run manager); use `marsrl run` or the desktop app');
      return runs;
    },
  };
}

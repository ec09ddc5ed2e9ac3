/**
 * The composition root (issue 37): one Studio is its database, the event hub every surface
 * listens to, the run manager that launches runs as worker processes, the StudioApi service over
 * them and, where asked, the watcher that publishes what other processes commit. The desktop
 * app, `marsrl serve` and the benchmarks assemble it here, once, in the same order, and close it
 * in the one order that loses nothing. The edges keep only what is theirs: the app its windows,
 * IPC and worker spawner; `marsrl serve` its HTTP server.
 */
import { EventHub } from '../api/hub';
import { createStudioService, type StudioServiceOptions } from '../api/service';
import { openStore, type Store } from '../engine/store';
import { createRunManager, type RunManager } from '../runner/manager';
import { watchStore, type StoreWatcher } from './watch';

export interface StudioOptions {
  databasePath: string;
  /**
   * The store of `databasePath`, already open: the app opens its own to explain a failure in a
   * dialog, a benchmark fills one before it serves it. Opened here when absent. Either way the
   * Studio owns it from now on and `close` closes it.
   */
  store?: Store;
  /** How the service is reached ('electron', 'http', 'direct'); over 'http' writes stay inside the Studio's folders. */
  transport: StudioServiceOptions['transport'];
  /**
   * Who launches runs here ('the app', 'marsrl serve'), named in the stop reasons of runs it
   * stops for another owner. Without it there is no run manager: the service refuses to launch
   * runs and nothing is recovered.
   */
  origin?: string;
  /** Publish what other processes commit to the database (`marsrl serve`): true, or the poll interval. */
  watch?: boolean | { intervalMs: number };
}

/** What shuts down with the Studio besides its own parts: the servers and windows that reach it. */
export interface StudioEdge {
  close(): Promise<void>;
}

export interface Studio {
  store: Store;
  /** Every event the Studio publishes; the app forwards them to its windows, `marsrl serve` to its WebSockets. */
  hub: EventHub;
  /** Launches, stops and resumes runs (null without an `origin`). */
  manager: RunManager | null;
  service: ReturnType<typeof createStudioService>;
  /** Runs left `running` by a process that is gone, marked interrupted as the Studio opened. */
  recovered: number[];
  /**
   * Shut down: stop publishing other processes' writes, close the edges (their clients get no
   * half-sent event), stop this process's runs at their next safe point (they stay resumable),
   * then close the database, which those runs' last rows needed open.
   */
  close(options?: { reason?: string; edges?: readonly StudioEdge[] }): Promise<void>;
}

export function openStudio(options: StudioOptions & { origin: string }): Studio & { manager: RunManager };
export function openStudio(options: StudioOptions): Studio;
export function openStudio(options: StudioOptions): Studio {
  const { databasePath, transport, origin } = options;
  const store = options.store ?? openStore(databasePath);
  const hub = new EventHub();
  // The manager publishes on the hub; its workers write to the same database file.
  const manager = origin === undefined ? null : createRunManager({ store, databasePath, hub, origin });
  const recovered = manager ? manager.recoverStaleRuns() : [];
  const service = createStudioService({ store, databasePath, transport, hub, ...(manager ? { runs: manager } : {}) });
  const watcher: StoreWatcher | null = options.watch ? watchStore(store, hub, options.watch === true ? {} : options.watch) : null;

  return {
    store,
    hub,
    manager,
    service,
    recovered,
    async close({ reason = `${origin ?? 'the Studio'} was stopped`, edges = [] } = {}) {
      watcher?.stop();
      for (const edge of edges) await edge.close();
      await manager?.stopAll(reason);
      store.close();
    },
  };
}

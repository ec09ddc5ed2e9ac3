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
  /**
   * Follow again the Ray jobs of engine runs that were still running when the Studio last closed
   * (issue 38): the app and `marsrl serve` do; a benchmark does not.
   */
  reattachEngineRuns?: boolean;
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
  /** Engine runs whose Ray jobs this Studio follows again as it opened. */
  reattached: number[];
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
  const reattached = manager && options.reattachEngineRuns ? reattachEngineRuns(store, manager) : [];
  const service = createStudioService({ store, databasePath, transport, hub, ...(manager ? { runs: manager } : {}) });
  const watcher: StoreWatcher | null = options.watch ? watchStore(store, hub, options.watch === true ? {} : options.watch) : null;

  return {
    store,
    hub,
    manager,
    service,
    recovered,
    reattached,
    async close({ reason = `${origin ?? 'the Studio'} was stopped`, edges = [] } = {}) {
      watcher?.stop();
      for (const edge of edges) await edge.close();
      await manager?.stopAll(reason);
      store.close();
    },
  };
}

/**
 * Engine runs whose latest Ray job had not ended when last seen, and which no process follows now
 * (marked interrupted: detached as the Studio closed, or found stale): each is resumed, which
 * re-attaches to its job (engines/engine-run.ts) and submits nothing. A run another live process
 * follows is left to it.
 */
function reattachEngineRuns(store: Store, manager: RunManager): number[] {
  const runIds: number[] = [];
  for (const job of store.engineJobs.unfinished()) {
    const run = store.runs.get(job.runId);
    if (!run || run.status !== 'interrupted' || manager.isActive(run.id)) continue;
    store.events.log(run.id, 'info', 'engine_reattach', `the Studio opened while Ray job ${job.submissionId} was ${job.status ?? 'submitted'}: following it again`);
    void manager.resume(run.id).catch((error: unknown) => store.events.log(run.id, 'warning', 'engine_reattach_failed', `could not follow Ray job ${job.submissionId} again: ${error instanceof Error ? error.message : String(error)}`));
    runIds.push(run.id);
  }
  return runIds;
}

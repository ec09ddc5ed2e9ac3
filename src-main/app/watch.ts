/**
 * Changes made by other processes, turned into pushed events. A run started with `marsrl run`
 * in another terminal (or by workers with their own database connections) writes to the same
 * SQLite file; nothing in this process hears about it. The watcher asks SQLite cheaply whether
 * anyone else committed (`PRAGMA data_version` changes only then) and, when so, diffs the runs
 * table, the latest step of active runs and new event rows, publishing what changed on the hub.
 * Browsers still get pushes, never poll; the one polling loop is here, next to the database.
 *
 * The in-process service and run manager publish their own events; a change seen both ways is
 * pushed twice, which every subscriber tolerates (events carry ids; progress is idempotent).
 */
import type { RunStatus } from '#shared/contract';
import type { EventHub } from '../api/hub';
import { KEY_METRICS } from '../api/views';
import type { Store } from '../engine/store';

interface RunState {
  status: RunStatus;
  reason: string | null;
  name: string;
  notes: string;
  tags: string;
  lastStep: number | null;
  totalSteps: number;
}

export interface StoreWatcher {
  /** One check now (the timer calls it; tests call it directly). */
  poll(): void;
  stop(): void;
}

export interface WatchOptions {
  intervalMs?: number;
}

const MAX_EVENTS_PER_POLL = 500;

function totalStepsOf(configJson: string): number {
  try {
    const steps = (JSON.parse(configJson) as { optimization?: { steps?: unknown } }).optimization?.steps;
    return typeof steps === 'number' ? steps : 0;
  } catch {
    return 0;
  }
}

/** A runs row as the watcher compares it (tags as their JSON text). */
interface WatchedRun {
  id: number;
  status: RunStatus;
  reason: string | null;
  name: string;
  notes: string;
  tags: string;
  configJson: string;
}

export function watchStore(store: Store, hub: EventHub, { intervalMs = 500 }: WatchOptions = {}): StoreWatcher {
  const db = store.db;
  const selectRuns = db.prepare('SELECT id, status, status_reason AS reason, name, notes, tags_json AS tags, config_json AS configJson FROM runs');
  const selectKeyIds = db.prepare('SELECT id FROM metric_keys');
  // Per key, MAX(step) is one probe of the (run_id, key_id, step) primary key; a MAX over the
  // whole run would scan every point it has.
  const maxStepOfKey = db.prepare('SELECT MAX(step) AS step FROM metrics WHERE run_id = ? AND key_id = ?');
  const maxEventId = db.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM events');

  const dataVersion = (): number => db.pragma('data_version', { simple: true }) as number;
  const readRuns = (): Map<number, WatchedRun> => new Map((selectRuns.all() as WatchedRun[]).map((r) => [r.id, r]));

  const lastStepOf = (runId: number): number | null => {
    let best: number | null = null;
    for (const { id } of selectKeyIds.all() as { id: number }[]) {
      const step = (maxStepOfKey.get(runId, id) as { step: number | null }).step;
      if (step !== null && (best === null || step > best)) best = step;
    }
    return best;
  };

  let version = dataVersion();
  let lastEventId = (maxEventId.get() as { id: number }).id;
  const known = new Map<number, RunState>();
  for (const [id, run] of readRuns()) {
    known.set(id, { ...run, totalSteps: totalStepsOf(run.configJson), lastStep: run.status === 'running' ? lastStepOf(id) : null });
  }

  /** Push what changed in one run since the last look: created, status, name/notes/tags, a new step. */
  function diffRun(run: WatchedRun): void {
    const { id } = run;
    const before = known.get(id);
    const state: RunState = {
      status: run.status,
      reason: run.reason,
      name: run.name,
      notes: run.notes,
      tags: run.tags,
      lastStep: before?.lastStep ?? null,
      totalSteps: before?.totalSteps ?? totalStepsOf(run.configJson),
    };
    if (!before) hub.publish({ type: 'run-created', runId: id });
    else {
      if (before.status !== run.status || before.reason !== run.reason) hub.publish({ type: 'run-status', runId: id, status: run.status, reason: run.reason });
      if (before.name !== run.name || before.notes !== run.notes || before.tags !== run.tags) hub.publish({ type: 'run-updated', runId: id });
    }
    // Steps only move while a run trains, and once more as it finishes.
    if (run.status === 'running' || (before && before.status === 'running') || !before) {
      const step = lastStepOf(id);
      if (step !== null && (state.lastStep === null || step > state.lastStep)) {
        state.lastStep = step;
        hub.publish({ type: 'run-progress', runId: id, step, totalSteps: state.totalSteps, metrics: store.metrics.latest(id, KEY_METRICS) });
      }
    }
    known.set(id, state);
  }

  function poll(): void {
    if (!db.open) return;
    const current = dataVersion();
    if (current === version) return;
    version = current;

    const runs = readRuns();
    for (const run of runs.values()) diffRun(run);
    for (const id of [...known.keys()]) {
      if (!runs.has(id)) {
        known.delete(id);
        hub.publish({ type: 'run-deleted', runId: id });
      }
    }
    for (;;) {
      const events = store.events.since(lastEventId, MAX_EVENTS_PER_POLL);
      for (const event of events) {
        lastEventId = event.id;
        hub.publish({ type: 'event', runId: event.runId, event });
      }
      if (events.length < MAX_EVENTS_PER_POLL) break;
    }
  }

  const timer = setInterval(() => {
    try {
      poll();
    } catch (error) {
      // A busy or briefly locked database is retried on the next tick.
      process.stderr.write(`[serve] store watcher: ${(error as Error).message}\n`);
    }
  }, intervalMs);
  timer.unref();

  return { poll, stop: () => clearInterval(timer) };
}

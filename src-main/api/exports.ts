/**
 * The StudioApi's dataset export area (issue 7): an export runs in the background, reports its
 * progress and end as pushed events, and can be cancelled; what the engine refuses before it
 * writes is answered to the caller at once, in the form's words.
 */
import type { StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import fs from 'node:fs';
import path from 'node:path';
import { exportsDir } from '../engine/paths';
import type { ServiceContext } from './context';
import type { EventHub } from './hub';

type ExportsApi = Pick<StudioApi, 'startExport' | 'cancelExport'>;

/** How long an export may run before its caller is answered; an error found sooner is the answer. */
const EARLY_ERROR_MS = 50;
/** Progress is pushed at most this often (ten times a second); the last one always goes out. */
const PROGRESS_INTERVAL_MS = 100;

export function createExportsApi(context: ServiceContext): ExportsApi {
  const { store, hub, requireRun } = context;
  const running = new Map<string, AbortController>();
  let exportCounter = 0;
  return {
    async startExport(request) {
      // Loaded on first use: the Parquet writer is not needed to browse runs.
      const { runExport, ExportError } = await import('../engine/export');
      for (const id of request.runs) requireRun(id);
      const out = exportOutput(context, request.out);
      const exportId = `export-${++exportCounter}`;
      const controller = new AbortController();
      running.set(exportId, controller);
      const exporting = runExport(store, { ...request, out }, { signal: controller.signal, onProgress: progressPusher(hub, exportId) });
      // Usage errors (unknown agent, existing file, empty result) are answered to the caller at
      // once when they are found before any row is written.
      const early = await Promise.race([exporting.then(() => null, (error: unknown) => error), new Promise((resolve) => setTimeout(() => resolve(null), EARLY_ERROR_MS))]);
      if (early instanceof ExportError) {
        running.delete(exportId);
        const message = inFormWords(early.message);
        throw new StudioError('invalid_request', message, early.field ? [{ path: early.field, message }] : undefined);
      }
      exporting.then(
        (result) => hub?.publish({ type: 'export-finished', exportId, status: 'done', error: null, result: { out: result.out, card: result.card, rows: result.rows, bytes: result.bytes, seconds: result.seconds, duplicatesDropped: result.duplicatesDropped } }),
        (error: unknown) =>
          hub?.publish({ type: 'export-finished', exportId, status: controller.signal.aborted ? 'cancelled' : 'failed', result: null, error: inFormWords(error instanceof Error ? error.message : String(error)) }),
      ).finally(() => running.delete(exportId));
      return { exportId, out: path.resolve(out) };
    },

    async cancelExport(exportId) {
      const controller = running.get(exportId);
      if (!controller) throw new StudioError('not_found', `no export ${exportId} is running`);
      controller.abort('cancelled by the user');
    },
  };
}

/**
 * Where an export the caller named is written. A relative path means the exports folder, never
 * this process's working directory; the folder itself is the app's and is made on first use (a
 * folder the user names must exist).
 */
export function exportOutput({ outputPath }: ServiceContext, given: string): string {
  const out = outputPath(given, 'out');
  if (out !== given) fs.mkdirSync(exportsDir(), { recursive: true });
  return out;
}

function progressPusher(hub: EventHub | undefined, exportId: string): (done: number, total: number) => void {
  let lastPush = 0;
  return (done, total) => {
    if (Date.now() - lastPush > PROGRESS_INTERVAL_MS || done === total) {
      lastPush = Date.now();
      hub?.publish({ type: 'export-progress', exportId, done, total });
    }
  };
}

/**
 * The export engine words its errors for the CLI (`pass --force`); the app's callers fill in a
 * form, so the same advice names the form's controls (issue 18).
 */
export function inFormWords(message: string): string {
  return message
    .replace(/pass --force \(force: true\) to replace it/g, 'press "Replace it (force)" to overwrite it')
    .replace(/ \(e\.g\. --out ([^)]+)\)/g, ' (e.g. $1)')
    .replace(/--correct any/g, 'Correctness: any')
    .replace(/--format-valid any/g, 'Format: any')
    .replace(/list runs with `marsrl runs` or in the runs table/g, 'choose runs in the runs table');
}

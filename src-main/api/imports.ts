/**
 * The StudioApi's import area (issue 39): what a path holds before anything is written, an
 * import in the background with progress and cancel, pushed as events like an export's
 * (exports.ts). A request the importer refuses before it stores anything (no such path, an
 * empty folder, no format recognizes it, an unknown format or source run) is answered to the
 * caller at once, naming the field.
 */
import type { ImportSummary, StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import type { ImportOutcome, ImportProgress } from '../engine/imports/importer';
import { ImportRequestError, ImportSourceError } from '../engine/imports/types';
import type { ServiceContext } from './context';
import type { EventHub } from './hub';

type ImportsApi = Pick<StudioApi, 'previewImport' | 'startImport' | 'cancelImport'>;

/** How long an import may run before its caller is answered; a refusal found sooner is the answer. */
const EARLY_ERROR_MS = 50;
/** Progress is pushed at most ten times a second; the last one always goes out. */
const PROGRESS_INTERVAL_MS = 100;

/** Loaded on first use, like the dataset export: the format readers are not needed to browse runs. */
const importer = () => import('../engine/imports/importer');

export function createImportsApi(context: ServiceContext): ImportsApi {
  const { store, hub } = context;
  const running = new Map<string, AbortController>();
  let importCounter = 0;
  return {
    async previewImport(request) {
      const { previewImport } = await importer();
      try {
        return await previewImport(store, request);
      } catch (error) {
        throw asRequestError(error);
      }
    },

    async startImport(request) {
      const { chooseFormat, runImport, sourcePath } = await importer();
      try {
        chooseFormat(sourcePath(request.path), request.format);
      } catch (error) {
        throw asRequestError(error);
      }
      const importId = `import-${++importCounter}`;
      const controller = new AbortController();
      running.set(importId, controller);
      const progress = progressPusher(hub, importId);
      const importing = runImport(store, request, {
        signal: controller.signal,
        onProgress: progress.push,
        onRun: (runId, created) => hub?.publish({ type: created ? 'run-created' : 'run-updated', runId }),
      });
      // The scan finds a bad source (or an unknown source run) before anything is stored.
      const early = await Promise.race([importing.then(() => null, (error: unknown) => error), new Promise((resolve) => setTimeout(() => resolve(null), EARLY_ERROR_MS))]);
      if (early instanceof ImportRequestError || early instanceof ImportSourceError) {
        running.delete(importId);
        throw asRequestError(early);
      }
      importing
        .then(
          (outcome) => {
            progress.flush();
            // Their counts and last step changed: lists and open run pages read them again.
            for (const run of outcome.runs) hub?.publish({ type: 'run-updated', runId: run.runId });
            hub?.publish({ type: 'import-finished', importId, status: outcome.cancelled ? 'cancelled' : 'done', result: summaryOf(outcome), error: null });
          },
          (error: unknown) =>
            hub?.publish({ type: 'import-finished', importId, status: controller.signal.aborted ? 'cancelled' : 'failed', result: null, error: error instanceof Error ? error.message : String(error) }),
        )
        .finally(() => running.delete(importId));
      return { importId };
    },

    async cancelImport(importId) {
      const controller = running.get(importId);
      if (!controller) throw new StudioError('not_found', `no import ${importId} is running`);
      controller.abort('cancelled by the user');
    },
  };
}

function summaryOf({ cancelled: _cancelled, ...summary }: ImportOutcome): ImportSummary {
  return summary;
}

function asRequestError(error: unknown): unknown {
  if (error instanceof ImportRequestError) return new StudioError('invalid_request', error.message, [{ path: error.field, message: error.message }]);
  if (error instanceof ImportSourceError) return new StudioError('invalid_request', error.message, [{ path: 'path', message: error.message }]);
  return error;
}

function progressPusher(hub: EventHub | undefined, importId: string): { push: (p: ImportProgress) => void; flush: () => void } {
  let lastPush = 0;
  let pending: ImportProgress | null = null;
  const send = (p: ImportProgress) => {
    lastPush = Date.now();
    pending = null;
    hub?.publish({ type: 'import-progress', importId, done: p.done, total: p.total, records: p.records });
  };
  return {
    push: (p) => {
      if (Date.now() - lastPush >= PROGRESS_INTERVAL_MS) send(p);
      else pending = p;
    },
    flush: () => {
      if (pending !== null) send(pending);
    },
  };
}

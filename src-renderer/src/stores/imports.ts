/**
 * The import dialog and the import it started (issue 39). One dialog for the window, opened from
 * the runs list: a path and a format, Preview (what the engine found there, before anything is
 * written), the source runs to import with a name and tags, then the import in the engine
 * (`startImport`), its progress and end arriving as pushed events. Closing the dialog hides it
 * without stopping the import; opening it again shows the same import.
 *
 * A small import can finish before `startImport`'s answer arrives (events travel on the
 * WebSocket, the answer on HTTP), so events for an id not yet known are kept and replayed, as the
 * exports store does.
 */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef } from 'vue';
import type { ImportFormatId, ImportPreview, ImportSummary } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { bannerText, buildImportRequest, emptyImportForm, fieldOfImportError, type ImportField, type ImportForm } from '../util/importView';
import { percentDone } from '../util/backgroundJob';
import { jobLife, jobState, type JobPhase } from './common/jobLife';

export type ImportPhase = JobPhase | 'previewing';

export interface ImportProblem {
  field: ImportField | null;
  /** As the banner shows it: the field named first. */
  message: string;
}

/** A refused call as the dialog shows it: at the field it names, else at `fallback`. */
function problemOf(caught: unknown, fallback: ImportField | null): ImportProblem {
  const message = errorMessage(caught);
  const given = (caught as { issues?: unknown }).issues;
  const paths = Array.isArray(given) ? (given as { path?: unknown }[]).map((i) => String(i.path ?? '')) : [];
  const field = fieldOfImportError(message, paths) ?? fallback;
  return { field, message: bannerText(field, message) };
}

function importState() {
  return {
    ...jobState<ImportSummary, { done: number; total: number; records: number }, 'previewing'>(),
    form: ref<ImportForm>(emptyImportForm()),
    preview: shallowRef<ImportPreview | null>(null),
    /** Source run keys ticked for import. */
    picked: ref<ReadonlySet<string>>(new Set()),
    problem: ref<ImportProblem | null>(null),
  };
}
type ImportState = ReturnType<typeof importState>;

/** Editing the source: a changed path or format makes the preview stale, so it is dropped. */
function sourceEditing(s: ImportState) {
  function clearProblemAt(...fields: ImportField[]): void {
    if (s.problem.value && (s.problem.value.field === null || fields.includes(s.problem.value.field))) s.problem.value = null;
  }
  function setPath(path: string): void {
    if (s.form.value.path === path) return;
    s.form.value.path = path;
    s.preview.value = null;
    clearProblemAt('path');
  }
  function setFormat(format: ImportFormatId | ''): void {
    if (s.form.value.format === format) return;
    s.form.value.format = format;
    s.preview.value = null;
    clearProblemAt('format', 'path');
  }
  function toggleRun(key: string): void {
    const next = new Set(s.picked.value);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    s.picked.value = next;
    clearProblemAt('runs');
  }
  function pickAll(on: boolean): void {
    s.picked.value = new Set(on ? (s.preview.value?.runs ?? []).map((r) => r.key) : []);
    clearProblemAt('runs');
  }
  return { clearProblemAt, setPath, setFormat, toggleRun, pickAll };
}

/** Preview: what the path holds, every source run ticked at first. */
function previewing(s: ImportState) {
  /** Answers to an older preview are dropped (the path changed meanwhile). */
  let asked = 0;
  async function runPreview(): Promise<void> {
    const path = s.form.value.path.trim();
    s.notice.value = null;
    if (path === '') {
      s.problem.value = { field: 'path', message: 'Path: give the folder or file to import' };
      return;
    }
    const mine = ++asked;
    s.phase.value = 'previewing';
    s.problem.value = null;
    s.preview.value = null;
    try {
      const format = s.form.value.format;
      const found = await studioClient().previewImport(format === '' ? { path } : { path, format });
      if (mine !== asked) return;
      s.preview.value = markRaw(found);
      s.picked.value = new Set(found.runs.map((r) => r.key));
    } catch (caught) {
      // A preview is of the path: a message naming no other field is about it.
      if (mine === asked) s.problem.value = problemOf(caught, 'path');
    } finally {
      if (mine === asked) s.phase.value = 'editing';
    }
  }
  return { runPreview };
}

/** The import's life: started in the engine, followed by its pushed progress and end, cancelled on request. */
function importRunning(s: ImportState) {
  const job = jobLife(s, {
    read: (event) => {
      if (event.type === 'import-progress') return { id: event.importId, progress: { done: event.done, total: event.total, records: event.records } };
      return event.type === 'import-finished' ? { id: event.importId, end: event } : null;
    },
    cancelled: 'Import cancelled: the records of whole batches already written stay, and importing again continues after them.',
    failed: (error) => {
      s.problem.value = problemOf(new Error(error ?? 'the import failed'), null);
      return s.problem.value.message;
    },
    cancel: (id) => studioClient().cancelImport(id),
    // Finished meanwhile ('not found'): its import-finished event says how.
    gone: (caught) => (caught as { code?: unknown }).code === 'not_found',
  });

  async function start(): Promise<void> {
    const preview = s.preview.value;
    if (s.phase.value !== 'editing' || !preview) return;
    if (s.picked.value.size === 0) {
      s.problem.value = { field: 'runs', message: 'Runs: tick at least one source run to import' };
      return;
    }
    const request = buildImportRequest(s.form.value, preview.runs.map((r) => r.key), s.picked.value);
    s.problem.value = null;
    await job.start(
      async () => (await studioClient().startImport(request)).importId,
      (caught) => (s.problem.value = problemOf(caught, null)),
    );
  }

  return { ...job, start };
}

export const useImportsStore = defineStore('imports', () => {
  const s = importState();
  const editing = sourceEditing(s);
  const preview = previewing(s);
  const running = importRunning(s);
  const percent = computed(() => percentDone(s.progress.value));
  /** The preview's name of each source run, for the result's links. */
  const nameOfKey = computed(() => new Map((s.preview.value?.runs ?? []).map((r) => [r.key, r.name])));

  /** Opens the dialog: a fresh form, or the import still running or ended unseen. */
  function open(): void {
    running.follow();
    if (running.show()) return;
    if (s.phase.value === 'done') again();
  }

  /** Back to the form after a finished import (the same path previewed again shows it imported). */
  function again(): void {
    running.reset();
    s.problem.value = null;
    s.preview.value = null;
  }

  const { id: importId, ...state } = s;
  return {
    ...state,
    importId,
    busy: running.busy,
    percent,
    nameOfKey,
    open,
    close: running.close,
    again,
    setPath: editing.setPath,
    setFormat: editing.setFormat,
    toggleRun: editing.toggleRun,
    pickAll: editing.pickAll,
    clearProblemAt: editing.clearProblemAt,
    runPreview: preview.runPreview,
    start: running.start,
    cancel: running.cancel,
    applyEvent: running.applyEvent,
  };
});

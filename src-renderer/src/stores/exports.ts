/**
 * The export dialog and the export it started. One dialog for the whole window, opened from the
 * runs table or the trajectory browser with the runs and filters prefilled; the export runs in
 * the engine (`startExport`), its progress and end arrive as pushed events, and closing the
 * dialog hides it without stopping the export (opening it again shows the same export).
 *
 * A fast export can finish before `startExport`'s answer arrives (the events travel on the
 * WebSocket, the answer on HTTP), so export events for an id not yet known are kept and replayed.
 *
 * Read top to bottom: the pure pieces (a run not read yet, the form a prefill gives, where a start
 * failure's messages go), the dialog's state, then each concern over it (what the dialog derives,
 * editing the form, the runs, the export's life from start to its last event) and the store.
 */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef, type ComputedRef } from 'vue';
import type { ExportSummary, RunDetail } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { agentChain, compareAgents } from '#shared/agents';
import {
  buildExportRequest,
  containerFromPath,
  effectiveContainer,
  emptyForm,
  fieldOfIssuePath,
  fieldOfMessage,
  folderOf,
  formatInfo,
  suggestedOutPath,
  withContainerExtension,
  type Correctness,
  type ExportContainerName,
  type ExportForm,
  type FieldIssue,
} from '../util/exportForm';
import type { ExportFormatName } from '#shared/contract';
import { useAppInfoStore } from './appInfo';
import { messagesByPath } from './common/issues';
import { jobLife, jobState, type JobPhase } from './common/jobLife';

/** What the opener knows: the runs, and the filters it was showing. */
export interface ExportPrefill {
  runs: { id: number; name: string }[];
  format?: ExportFormatName;
  agents?: string[];
  stepFrom?: number | null;
  stepTo?: number | null;
  correct?: boolean | null;
  minReward?: number | null;
  maxReward?: number | null;
}

/** A run as the dialog shows it: its name, size and agents (from its configuration). */
export interface ExportRunInfo {
  id: number;
  name: string;
  turns: number | null;
  lastStep: number | null;
  agents: string[];
}

export type ExportPhase = JobPhase;

function agentsOf(detail: RunDetail): string[] {
  const rounds = (detail.config.rollout as { rounds?: unknown } | undefined)?.rounds;
  return agentChain(typeof rounds === 'number' && Number.isInteger(rounds) && rounds >= 0 ? rounds : 1);
}

/** A run whose details have not arrived (or could not be read): its name only. */
function unreadRun(id: number, name: string): ExportRunInfo {
  return { id, name, turns: null, lastStep: null, agents: [] };
}

/** The form an opener's prefill gives: its runs (once each), format and filters as typed text. */
function formOf(prefill: ExportPrefill): ExportForm {
  const next = emptyForm();
  next.format = prefill.format ?? 'trajectories';
  next.runs = [...new Set(prefill.runs.map((r) => r.id))];
  next.agents = [...(prefill.agents ?? [])];
  if (prefill.stepFrom != null) next.stepFrom = String(prefill.stepFrom);
  if (prefill.stepTo != null) next.stepTo = String(prefill.stepTo);
  if (prefill.correct != null) next.correctness = prefill.correct ? 'correct' : 'incorrect';
  if (prefill.minReward != null) next.minReward = String(prefill.minReward);
  if (prefill.maxReward != null) next.maxReward = String(prefill.maxReward);
  return next;
}

/**
 * Where a refused start's messages go: each at the field it names, else one general notice.
 * Over HTTP the error keeps its field issues; across Electron's bridge only the message
 * survives, and the engine starts it with the field it is about.
 */
function placedIssues(caught: unknown): { issues: FieldIssue[]; notice: string | null } {
  const given = (caught as { issues?: unknown }).issues;
  const placed: FieldIssue[] = Array.isArray(given)
    ? (given as { path: string; message: string }[]).map((i) => ({ path: fieldOfIssuePath(i.path), message: i.message }))
    : [];
  if (placed.length > 0) return { issues: placed, notice: null };
  const message = errorMessage(caught);
  const field = fieldOfMessage(message);
  return field ? { issues: [{ path: field, message }], notice: null } : { issues: [], notice: message };
}

function exportState() {
  return {
    ...jobState<ExportSummary, { done: number; total: number }>(),
    form: ref<ExportForm>(emptyForm()),
    /** Whether the user typed the path (else it follows the runs and the format). */
    outEdited: ref(false),
    runInfo: ref<Record<number, ExportRunInfo>>({}),
    /** Runs that can be added (the newest ones), for the dialog's run picker. */
    runChoices: shallowRef<readonly { id: number; name: string }[]>([]),
    /** Problems with the form, by engine field name (a message may also be general: path ''). */
    issues: ref<FieldIssue[]>([]),
    /** Which format the running export writes, for the progress unit. */
    runningFormat: ref<ExportFormatName>('trajectories'),
  };
}
type ExportState = ReturnType<typeof exportState>;

/** What the dialog shows derived from its state. */
function exportViews(s: ExportState) {
  const selectedRuns = computed(() => s.form.value.runs.map((id) => s.runInfo.value[id] ?? unreadRun(id, `#${id}`)));
  const availableAgents = computed(() => {
    const all = new Set<string>();
    for (const run of selectedRuns.value) for (const agent of run.agents) all.add(agent);
    // Agents the prefill asked for stay listed even before the run's details arrive.
    for (const agent of s.form.value.agents) all.add(agent);
    return [...all].sort(compareAgents);
  });
  const container = computed(() => effectiveContainer(s.form.value));
  const issuesByPath = computed(() => messagesByPath(s.issues.value));
  const progressUnit = computed(() => formatInfo(s.runningFormat.value).unit);
  return { selectedRuns, availableAgents, container, issuesByPath, progressUnit };
}

/** Editing the form: each change clears the issues at its field, and the path follows the runs and format until typed. */
function formEditing(s: ExportState) {
  /** The folder of the last export started, suggested for the next one. */
  let lastFolder = '';
  function defaultFolder(): string {
    return lastFolder || folderOf(useAppInfoStore().info?.databasePath ?? '');
  }
  function rememberFolder(out: string): void {
    lastFolder = folderOf(out);
  }

  function refreshSuggestedOut(): void {
    if (s.outEdited.value) return;
    const form = s.form.value;
    const runs = form.runs.map((id) => ({ id, name: s.runInfo.value[id]?.name ?? 'run' }));
    form.out = suggestedOutPath(defaultFolder(), runs, form.format, form.container ?? effectiveContainer({ ...form, out: '' }));
  }

  function clearIssue(path: string): void {
    if (s.issues.value.some((i) => i.path === path)) s.issues.value = s.issues.value.filter((i) => i.path !== path);
  }

  function setFormat(format: ExportFormatName): void {
    const form = s.form.value;
    form.format = format;
    clearIssue('format');
    if (form.container === null) {
      // The container follows the format: the suggested path's extension changes with it.
      const next = effectiveContainer({ container: null, out: '', format });
      if (s.outEdited.value) form.out = withContainerExtension(form.out, next);
    }
    refreshSuggestedOut();
  }

  function setContainer(next: ExportContainerName): void {
    const form = s.form.value;
    form.container = next;
    clearIssue('container');
    if (containerFromPath(form.out) !== null) form.out = withContainerExtension(form.out, next);
    refreshSuggestedOut();
  }

  function setOut(text: string): void {
    s.form.value.out = text;
    s.outEdited.value = true;
    clearIssue('out');
  }

  function setCorrectness(next: Correctness): void {
    s.form.value.correctness = next;
    clearIssue('filters.correct');
    clearIssue('filters');
  }

  function toggleAgent(agent: string): void {
    const agents = s.form.value.agents;
    s.form.value.agents = agents.includes(agent) ? agents.filter((a) => a !== agent) : [...agents, agent].sort(compareAgents);
    clearIssue('filters.agents');
    clearIssue('filters');
  }

  return { rememberFolder, refreshSuggestedOut, clearIssue, setFormat, setContainer, setOut, setCorrectness, toggleAgent };
}
type FormEditing = ReturnType<typeof formEditing>;

/** The runs exported: read for their names, sizes and agents; added from the picker, removed. */
function exportRuns(s: ExportState, editing: FormEditing, availableAgents: ComputedRef<string[]>) {
  async function loadRun(id: number): Promise<void> {
    if (s.runInfo.value[id]?.turns != null) return;
    try {
      const detail = await studioClient().getRun(id);
      s.runInfo.value = { ...s.runInfo.value, [id]: { id, name: detail.name, turns: detail.counts.turns, lastStep: detail.lastStep, agents: agentsOf(detail) } };
      editing.refreshSuggestedOut();
    } catch (caught) {
      s.issues.value = [...s.issues.value, { path: 'runs', message: `runs: cannot read run ${id}: ${errorMessage(caught)}` }];
    }
  }

  async function loadRunChoices(): Promise<void> {
    try {
      const page = await studioClient().listRuns({ limit: 200 });
      s.runChoices.value = markRaw(page.items.map((r) => ({ id: r.id, name: r.name })));
    } catch {
      // The picker only offers runs to add; the dialog works without it.
    }
  }

  /** Runs the opener named, known by name until their details arrive. */
  function know(runs: readonly { id: number; name: string }[]): void {
    const known = { ...s.runInfo.value };
    for (const run of runs) known[run.id] ??= unreadRun(run.id, run.name);
    s.runInfo.value = known;
  }

  function addRun(id: number, name?: string): void {
    if (s.form.value.runs.includes(id)) return;
    if (name && !s.runInfo.value[id]) s.runInfo.value = { ...s.runInfo.value, [id]: unreadRun(id, name) };
    s.form.value.runs = [...s.form.value.runs, id];
    editing.clearIssue('runs');
    editing.refreshSuggestedOut();
    void loadRun(id);
  }

  function removeRun(id: number): void {
    s.form.value.runs = s.form.value.runs.filter((r) => r !== id);
    const still = new Set(availableAgents.value);
    s.form.value.agents = s.form.value.agents.filter((a) => still.has(a));
    editing.refreshSuggestedOut();
  }

  return { loadRun, loadRunChoices, know, addRun, removeRun };
}

/** The export's life: started in the engine, followed by its pushed progress and end, cancelled on request. */
function exportRunning(s: ExportState, editing: FormEditing) {
  const job = jobLife(s, {
    read: (event) => {
      if (event.type === 'export-progress') return { id: event.exportId, progress: { done: event.done, total: event.total } };
      return event.type === 'export-finished' ? { id: event.exportId, end: event } : null;
    },
    cancelled: 'Export cancelled, nothing written.',
    failed: (error) => {
      const message = error ?? 'the export failed';
      const field = fieldOfMessage(message);
      s.issues.value = field ? [{ path: field, message }] : [];
      return field ? 'The export failed; see the message at the field it names.' : message;
    },
    cancel: (id) => studioClient().cancelExport(id),
    // Finished meanwhile ('not found'): its export-finished event says how.
    gone: (caught) => (caught as { code?: unknown }).code === 'not_found' || /^no export \S+ is running/.test(errorMessage(caught)),
  });

  async function start(): Promise<void> {
    if (job.busy.value) return;
    const { request, issues: problems } = buildExportRequest(s.form.value);
    s.notice.value = null;
    if (!request) {
      s.issues.value = problems;
      return;
    }
    s.issues.value = [];
    s.runningFormat.value = request.format;
    await job.start(
      async () => {
        const started = await studioClient().startExport(request);
        editing.rememberFolder(started.out);
        return started.exportId;
      },
      (caught) => {
        const placed = placedIssues(caught);
        if (placed.notice !== null) s.notice.value = { kind: 'failed', message: placed.notice };
        s.issues.value = placed.issues;
      },
    );
  }

  return { ...job, start };
}

export const useExportsStore = defineStore('exports', () => {
  const s = exportState();
  const views = exportViews(s);
  const editing = formEditing(s);
  const runs = exportRuns(s, editing, views.availableAgents);
  const running = exportRunning(s, editing);

  /** Shows the dialog as it was (the export running or just ended), without a new prefill. */
  function reopen(): void {
    running.show();
  }

  /** Opens the dialog for `prefill`, or shows the export still running or ended unseen. */
  function open(prefill: ExportPrefill): void {
    running.follow();
    void runs.loadRunChoices();
    if (running.show()) return;
    const next = formOf(prefill);
    runs.know(prefill.runs);
    s.form.value = next;
    s.outEdited.value = false;
    again();
    editing.refreshSuggestedOut();
    for (const id of next.runs) void runs.loadRun(id);
  }

  /** Back to the form after a finished export, keeping what was filled in. */
  function again(): void {
    running.reset();
    s.issues.value = [];
  }

  return {
    isOpen: s.isOpen,
    form: s.form,
    outEdited: s.outEdited,
    runInfo: s.runInfo,
    runChoices: s.runChoices,
    selectedRuns: views.selectedRuns,
    availableAgents: views.availableAgents,
    container: views.container,
    phase: s.phase,
    busy: running.busy,
    endedUnseen: s.endedUnseen,
    exportId: s.id,
    progress: s.progress,
    progressUnit: views.progressUnit,
    cancelling: s.cancelling,
    result: s.result,
    issues: s.issues,
    issuesByPath: views.issuesByPath,
    notice: s.notice,
    open,
    reopen,
    close: running.close,
    again,
    start: running.start,
    cancel: running.cancel,
    addRun: runs.addRun,
    removeRun: runs.removeRun,
    setFormat: editing.setFormat,
    setContainer: editing.setContainer,
    setOut: editing.setOut,
    setCorrectness: editing.setCorrectness,
    toggleAgent: editing.toggleAgent,
    clearIssue: editing.clearIssue,
    applyEvent: running.applyEvent,
  };
});

/**
 * The export dialog and the export it started. One dialog for the whole window, opened from the
 * runs table or the trajectory browser with the runs and filters prefilled; the export runs in
 * the engine (`startExport`), its progress and end arrive as pushed events, and closing the
 * dialog hides it without stopping the export (opening it again shows the same export).
 *
 * A fast export can finish before `startExport`'s answer arrives (the events travel on the
 * WebSocket, the answer on HTTP), so export events for an id not yet known are kept and replayed.
 */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef } from 'vue';
import type { ExportSummary, RunDetail, StudioEvent } from '#shared/contract';
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

export type ExportPhase = 'editing' | 'starting' | 'running' | 'done';

type ExportEvent = Extract<StudioEvent, { type: 'export-progress' | 'export-finished' }>;

function agentsOf(detail: RunDetail): string[] {
  const rounds = (detail.config.rollout as { rounds?: unknown } | undefined)?.rounds;
  return agentChain(typeof rounds === 'number' && Number.isInteger(rounds) && rounds >= 0 ? rounds : 1);
}

export const useExportsStore = defineStore('exports', () => {
  const isOpen = ref(false);
  const form = ref<ExportForm>(emptyForm());
  /** Whether the user typed the path (else it follows the runs and the format). */
  const outEdited = ref(false);

  const runInfo = ref<Record<number, ExportRunInfo>>({});
  /** Runs that can be added (the newest ones), for the dialog's run picker. */
  const runChoices = shallowRef<readonly { id: number; name: string }[]>([]);

  const phase = ref<ExportPhase>('editing');
  const exportId = ref<string | null>(null);
  const progress = ref<{ done: number; total: number } | null>(null);
  const cancelling = ref(false);
  const result = shallowRef<ExportSummary | null>(null);
  /** Problems with the form, by engine field name (a message may also be general: path ''). */
  const issues = ref<FieldIssue[]>([]);
  /** The end of the last export when it did not succeed. */
  const notice = ref<{ kind: 'cancelled' | 'failed'; message: string } | null>(null);
  /** An export ended while the dialog was hidden: the next open shows how, not a fresh form. */
  const endedUnseen = ref(false);
  /** Which format the running export writes, for the progress unit. */
  const runningFormat = ref<ExportFormatName>('trajectories');

  const busy = computed(() => phase.value === 'starting' || phase.value === 'running');
  const selectedRuns = computed(() => form.value.runs.map((id) => runInfo.value[id] ?? { id, name: `#${id}`, turns: null, lastStep: null, agents: [] }));
  const availableAgents = computed(() => {
    const all = new Set<string>();
    for (const run of selectedRuns.value) for (const agent of run.agents) all.add(agent);
    // Agents the prefill asked for stay listed even before the run's details arrive.
    for (const agent of form.value.agents) all.add(agent);
    return [...all].sort(compareAgents);
  });
  const container = computed(() => effectiveContainer(form.value));
  const issuesByPath = computed(() => {
    const map = new Map<string, string[]>();
    for (const issue of issues.value) map.set(issue.path, [...(map.get(issue.path) ?? []), issue.message]);
    return map;
  });

  // --- events ---------------------------------------------------------------------------------
  const unclaimed = new Map<string, ExportEvent[]>();
  let stopFollowing: (() => void) | null = null;

  function follow(): void {
    stopFollowing ??= studioClient().onEvent((event) => {
      if (event.type === 'export-progress' || event.type === 'export-finished') applyEvent(event);
    });
  }

  function applyEvent(event: ExportEvent): void {
    if (event.exportId !== exportId.value) {
      // Perhaps ours, arriving before startExport's answer; a few are kept for the replay.
      if (phase.value === 'starting') {
        unclaimed.set(event.exportId, [...(unclaimed.get(event.exportId) ?? []), event]);
        if (unclaimed.size > 20) unclaimed.delete(unclaimed.keys().next().value as string);
      }
      return;
    }
    if (event.type === 'export-progress') {
      if (phase.value === 'running') progress.value = { done: event.done, total: event.total };
      return;
    }
    exportId.value = null;
    cancelling.value = false;
    if (!isOpen.value) endedUnseen.value = true;
    if (event.status === 'done' && event.result) {
      result.value = markRaw(event.result);
      if (progress.value) progress.value = { done: progress.value.total, total: progress.value.total };
      phase.value = 'done';
      return;
    }
    phase.value = 'editing';
    progress.value = null;
    if (event.status === 'cancelled') {
      notice.value = { kind: 'cancelled', message: 'Export cancelled, nothing written.' };
      return;
    }
    const message = event.error ?? 'the export failed';
    const field = fieldOfMessage(message);
    issues.value = field ? [{ path: field, message }] : [];
    notice.value = { kind: 'failed', message: field ? 'The export failed; see the message at the field it names.' : message };
  }

  // --- runs -----------------------------------------------------------------------------------
  async function loadRun(id: number): Promise<void> {
    if (runInfo.value[id]?.turns != null) return;
    try {
      const detail = await studioClient().getRun(id);
      runInfo.value = { ...runInfo.value, [id]: { id, name: detail.name, turns: detail.counts.turns, lastStep: detail.lastStep, agents: agentsOf(detail) } };
      refreshSuggestedOut();
    } catch (caught) {
      issues.value = [...issues.value, { path: 'runs', message: `runs: cannot read run ${id}: ${errorMessage(caught)}` }];
    }
  }

  async function loadRunChoices(): Promise<void> {
    try {
      const page = await studioClient().listRuns({ limit: 200 });
      runChoices.value = markRaw(page.items.map((r) => ({ id: r.id, name: r.name })));
    } catch {
      // The picker only offers runs to add; the dialog works without it.
    }
  }

  function addRun(id: number, name?: string): void {
    if (form.value.runs.includes(id)) return;
    if (name && !runInfo.value[id]) runInfo.value = { ...runInfo.value, [id]: { id, name, turns: null, lastStep: null, agents: [] } };
    form.value.runs = [...form.value.runs, id];
    clearIssue('runs');
    refreshSuggestedOut();
    void loadRun(id);
  }

  function removeRun(id: number): void {
    form.value.runs = form.value.runs.filter((r) => r !== id);
    const still = new Set(availableAgents.value);
    form.value.agents = form.value.agents.filter((a) => still.has(a));
    refreshSuggestedOut();
  }

  // --- the form -------------------------------------------------------------------------------
  /** The folder of the last export started, suggested for the next one. */
  let lastFolder = '';
  function defaultFolder(): string {
    return lastFolder || folderOf(useAppInfoStore().info?.databasePath ?? '');
  }

  function refreshSuggestedOut(): void {
    if (outEdited.value) return;
    const runs = form.value.runs.map((id) => ({ id, name: runInfo.value[id]?.name ?? 'run' }));
    const chosen = form.value.container;
    form.value.out = suggestedOutPath(defaultFolder(), runs, form.value.format, chosen ?? effectiveContainer({ ...form.value, out: '' }));
  }

  function setFormat(format: ExportFormatName): void {
    form.value.format = format;
    clearIssue('format');
    if (form.value.container === null) {
      // The container follows the format: the suggested path's extension changes with it.
      const next = effectiveContainer({ container: null, out: '', format });
      if (outEdited.value) form.value.out = withContainerExtension(form.value.out, next);
    }
    refreshSuggestedOut();
  }

  function setContainer(next: ExportContainerName): void {
    form.value.container = next;
    clearIssue('container');
    if (containerFromPath(form.value.out) !== null) form.value.out = withContainerExtension(form.value.out, next);
    refreshSuggestedOut();
  }

  function setOut(text: string): void {
    form.value.out = text;
    outEdited.value = true;
    clearIssue('out');
  }

  function setCorrectness(next: Correctness): void {
    form.value.correctness = next;
    clearIssue('filters.correct');
    clearIssue('filters');
  }

  function toggleAgent(agent: string): void {
    const agents = form.value.agents;
    form.value.agents = agents.includes(agent) ? agents.filter((a) => a !== agent) : [...agents, agent].sort(compareAgents);
    clearIssue('filters.agents');
    clearIssue('filters');
  }

  function clearIssue(path: string): void {
    if (issues.value.some((i) => i.path === path)) issues.value = issues.value.filter((i) => i.path !== path);
  }

  /** Shows the dialog as it was (the export running or just ended), without a new prefill. */
  function reopen(): void {
    isOpen.value = true;
    endedUnseen.value = false;
  }

  /** Opens the dialog for `prefill`, or shows the export still running or ended unseen. */
  function open(prefill: ExportPrefill): void {
    follow();
    void loadRunChoices();
    if (busy.value || endedUnseen.value) {
      reopen();
      return;
    }
    isOpen.value = true;
    const next = emptyForm();
    next.format = prefill.format ?? 'trajectories';
    next.runs = [...new Set(prefill.runs.map((r) => r.id))];
    next.agents = [...(prefill.agents ?? [])];
    if (prefill.stepFrom != null) next.stepFrom = String(prefill.stepFrom);
    if (prefill.stepTo != null) next.stepTo = String(prefill.stepTo);
    if (prefill.correct != null) next.correctness = prefill.correct ? 'correct' : 'incorrect';
    if (prefill.minReward != null) next.minReward = String(prefill.minReward);
    if (prefill.maxReward != null) next.maxReward = String(prefill.maxReward);
    const known = { ...runInfo.value };
    for (const run of prefill.runs) known[run.id] ??= { id: run.id, name: run.name, turns: null, lastStep: null, agents: [] };
    runInfo.value = known;
    form.value = next;
    outEdited.value = false;
    phase.value = 'editing';
    issues.value = [];
    notice.value = null;
    result.value = null;
    progress.value = null;
    refreshSuggestedOut();
    for (const id of next.runs) void loadRun(id);
  }

  function close(): void {
    isOpen.value = false;
  }

  /** Back to the form after a finished export, keeping what was filled in. */
  function again(): void {
    phase.value = 'editing';
    result.value = null;
    progress.value = null;
    notice.value = null;
    issues.value = [];
  }

  async function start(): Promise<void> {
    if (busy.value) return;
    const { request, issues: problems } = buildExportRequest(form.value);
    notice.value = null;
    if (!request) {
      issues.value = problems;
      return;
    }
    issues.value = [];
    follow();
    phase.value = 'starting';
    progress.value = null;
    result.value = null;
    runningFormat.value = request.format;
    unclaimed.clear();
    try {
      const started = await studioClient().startExport(request);
      exportId.value = started.exportId;
      phase.value = 'running';
      lastFolder = folderOf(started.out);
      const early = unclaimed.get(started.exportId) ?? [];
      unclaimed.clear();
      for (const event of early) applyEvent(event);
    } catch (caught) {
      phase.value = 'editing';
      // Over HTTP the error keeps its field issues; across Electron's bridge only the message
      // survives, and the engine starts it with the field it is about.
      const given = (caught as { issues?: unknown }).issues;
      const placed: FieldIssue[] = Array.isArray(given)
        ? (given as { path: string; message: string }[]).map((i) => ({ path: fieldOfIssuePath(i.path), message: i.message }))
        : [];
      if (placed.length === 0) {
        const message = errorMessage(caught);
        const field = fieldOfMessage(message);
        if (field) placed.push({ path: field, message });
        else notice.value = { kind: 'failed', message };
      }
      issues.value = placed;
    }
  }

  async function cancel(): Promise<void> {
    const id = exportId.value;
    if (id === null || cancelling.value) return;
    cancelling.value = true;
    try {
      await studioClient().cancelExport(id);
    } catch (caught) {
      // Finished meanwhile: its export-finished event says how.
      const gone = (caught as { code?: unknown }).code === 'not_found' || /^no export \S+ is running/.test(errorMessage(caught));
      if (!gone) {
        cancelling.value = false;
        notice.value = { kind: 'failed', message: `Could not cancel: ${errorMessage(caught)}` };
      }
    }
  }

  const progressUnit = computed(() => formatInfo(runningFormat.value).unit);

  return {
    isOpen,
    form,
    outEdited,
    runInfo,
    runChoices,
    selectedRuns,
    availableAgents,
    container,
    phase,
    busy,
    endedUnseen,
    exportId,
    progress,
    progressUnit,
    cancelling,
    result,
    issues,
    issuesByPath,
    notice,
    open,
    reopen,
    close,
    again,
    start,
    cancel,
    addRun,
    removeRun,
    setFormat,
    setContainer,
    setOut,
    setCorrectness,
    toggleAgent,
    clearIssue,
    applyEvent,
  };
});

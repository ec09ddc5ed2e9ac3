/** Store rows → the shapes the StudioApi promises (shared by the service and the CLI). */
import type { ModelInspection, ResumeReport, RunDetail, RunStudyCell, RunSummary } from '#shared/contract';
import type { HfInspectReport } from '../engine/checkpoint/inspect';
import { loraModuleShapes } from '../engine/hf/lora-settings';
import type { RunRow, Store } from '../engine/store';
import { staleRunReason } from '../engine/store/liveness';
import { collapseFlags } from '../engine/compare/collapse';
import { runActions } from '../engine/training/advice';
import { answerCheckerVersion } from '../engine/tasks/registry';

/** The headline metrics shown next to every run in lists. */
export const KEY_METRICS = [
  'eval/system/accuracy',
  'eval/solver/accuracy',
  'system/accuracy',
  'solver/reward/mean',
  'perf/tokens_per_s',
] as const;

function configValue(config: Record<string, unknown>, dotted: string): string {
  let node: unknown = config;
  for (const key of dotted.split('.')) {
    if (node === null || typeof node !== 'object') return '';
    node = (node as Record<string, unknown>)[key];
  }
  return node === undefined || node === null ? '' : String(node);
}

const studyCellQueries = new WeakMap<Store, (runId: number) => RunStudyCell | null>();

/** The study cell a run was launched for (the last one, should a run ever be linked twice). */
function studyCellOf(store: Store, runId: number): RunStudyCell | null {
  let query = studyCellQueries.get(store);
  if (!query) {
    const statement = store.db.prepare(
      `SELECT c.study_id AS studyId, s.name AS studyName, c.label AS label, c.values_json AS valuesJson
         FROM study_cells c JOIN studies s ON s.id = c.study_id
        WHERE c.run_id = ? ORDER BY c.study_id DESC LIMIT 1`,
    );
    query = (id) => {
      const row = statement.get(id) as { studyId: number; studyName: string; label: string; valuesJson: string } | undefined;
      return row ? { studyId: row.studyId, studyName: row.studyName, label: row.label, values: JSON.parse(row.valuesJson) as RunStudyCell['values'] } : null;
    };
    studyCellQueries.set(store, query);
  }
  return query(runId);
}

export function toRunSummary(store: Store, run: RunRow, configPaths: readonly string[] = []): RunSummary {
  // A run recorded `running` with no live process (every process SIGKILLed at once) reads as
  // interrupted, with why, until the app or `marsrl serve` marks it so (issue #17).
  const stale = staleRunReason(run);
  return {
    id: run.id,
    name: run.name,
    status: stale === null ? run.status : 'interrupted',
    // What to do about it is in `actions`, which knows whether a checkpoint exists (issue 35).
    statusReason: stale === null ? run.statusReason : stale,
    preset: run.preset,
    // An imported run (issue 39) has no Studio task: the format it came from stands in its column.
    task: run.imported ? run.imported.format : configValue(run.config, 'task.family'),
    rewardScheme: configValue(run.config, 'reward.scheme'),
    advantageMode: configValue(run.config, 'advantage.mode'),
    pipelineMode: configValue(run.config, 'pipeline.mode'),
    seed: run.seed,
    backend: run.backend,
    tags: run.tags,
    notes: run.notes,
    createdAt: run.createdAt,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    lastStep: store.metrics.lastStep(run.id),
    keyMetrics: store.metrics.latest(run.id, KEY_METRICS),
    study: studyCellOf(store, run.id),
    configValues: Object.fromEntries(configPaths.map((p) => [p, configValue(run.config, p)])),
    stopRequest: stale === null && (run.status === 'running' || run.status === 'queued') ? run.stopRequest : null,
    actions: runActions(store, run),
    imported: run.imported,
  };
}

/** The run's last `resumed` event as the page reports it (older events lack the step and the skips). */
export function lastResume(store: Store, runId: number): ResumeReport | null {
  const event = store.events.latestOfKind(runId, 'resumed');
  if (!event || event.step === null) return null;
  const data = (event.data ?? {}) as { path?: string; attempt?: number; superseded?: Partial<ResumeReport['superseded']>; skippedCheckpoints?: { step?: number; dir?: string; error?: string }[] };
  return {
    at: event.time,
    attempt: data.attempt ?? 0,
    checkpointStep: event.step,
    checkpointDir: data.path ?? '',
    skipped: (data.skippedCheckpoints ?? []).map((s) => ({ step: typeof s.step === 'number' ? s.step : null, dir: s.dir ?? '', error: s.error ?? '' })),
    superseded: { turns: data.superseded?.turns ?? 0, episodes: data.superseded?.episodes ?? 0, metrics: data.superseded?.metrics ?? 0 },
  };
}

/** Events that end a running span: the trainer's stop, and the errors a run fails with. */
const SPAN_ENDS = ['interrupted', 'training_error', 'non_finite_stop'];
const spanEventQueries = new WeakMap<Store, (runId: number) => { kind: string; time: number }[]>();

/**
 * The spans a run was running: from its first start and from each `resumed` event to the next
 * stopping event, the last one to the run's end (or still open while it runs). A process killed
 * without a stopping event leaves its span open until the next resume, the best the events tell.
 */
export function runningSpans(store: Store, run: RunRow): RunDetail['runningSpans'] {
  if (run.startedAt === null) return [];
  let query = spanEventQueries.get(store);
  if (!query) {
    const statement = store.db.prepare(
      `SELECT kind, time FROM events WHERE run_id = ? AND kind IN ('resumed', ${SPAN_ENDS.map(() => '?').join(', ')}) ORDER BY time, id`,
    );
    query = (id) => statement.all(id, ...SPAN_ENDS) as { kind: string; time: number }[];
    spanEventQueries.set(store, query);
  }
  const spans: RunDetail['runningSpans'] = [];
  let open: number | null = run.startedAt;
  for (const event of query(run.id)) {
    if (event.kind === 'resumed') {
      if (open !== null) spans.push({ start: open, end: Math.max(open, event.time) });
      open = event.time;
    } else if (open !== null) {
      spans.push({ start: open, end: Math.max(open, event.time) });
      open = null;
    }
  }
  if (open !== null) spans.push({ start: open, end: run.status === 'running' || run.status === 'queued' ? null : (run.endedAt ?? null) });
  return spans;
}

export function toRunDetail(store: Store, run: RunRow): RunDetail {
  return {
    ...toRunSummary(store, run),
    config: run.config,
    codeVersion: run.codeVersion,
    backendInfo: run.backendInfo,
    counts: store.runs.counts(run.id),
    lastCheckpointStep: store.events.latestCheckpoint(run.id)?.step ?? null,
    lastResume: lastResume(store, run.id),
    collapse: collapseFlags(store, run.id),
    runningSpans: runningSpans(store, run),
    checker: runChecker(store, run),
  };
}

/** Which answer checker judged the run (issue #34), for the run page and `marsrl show`. */
function runChecker(store: Store, run: RunRow): RunDetail['checker'] {
  const today = answerCheckerVersion(String((run.config.task as { family?: unknown } | undefined)?.family ?? ''));
  if (today === null) return null;
  const latest = store.rejudges.list(run.id)[0];
  return {
    versions: store.runs.attempts(run.id).map((a) => a.checkerVersion),
    today,
    latestRejudge: latest ? { id: latest.id, checkerVersion: latest.checkerVersion, createdAt: latest.createdAt, turnsChecked: latest.turnsChecked, changed: latest.changed } : null,
  };
}

/** `marsrl model inspect`'s report → the plain summary the new-run form shows. */
export function toModelInspection(r: HfInspectReport): ModelInspection {
  const c = r.config;
  return {
    path: r.path,
    supported: r.supported,
    problems: [...r.problems],
    architecture: r.architecture,
    modelType: r.modelType,
    parameters: r.parameters,
    context: r.context,
    shape: c ? { layers: c.numLayers, hidden: c.hiddenSize, heads: c.numHeads, kvHeads: c.numKvHeads, headDim: c.headDim, vocabSize: c.vocabSize, tiedEmbeddings: c.tieWordEmbeddings } : null,
    weights: r.weights ? { files: [...r.weights.files], tensors: r.weights.tensors, bytes: r.weights.bytes, dtypes: { ...r.weights.dtypes } } : null,
    tokenizer: r.tokenizer
      ? {
          vocabSize: r.tokenizer.vocabSize,
          stopTokens: r.tokenizer.stopTokens.map((t) => t.text),
          chatTemplate: r.tokenizer.chatTemplate ? { source: r.tokenizer.chatTemplate.source, renders: r.tokenizer.chatTemplate.renders } : null,
        }
      : null,
    linearModules: c ? Object.entries(loraModuleShapes(c)).map(([name, m]) => ({ name, inDim: m.inDim, outDim: m.outDim, parent: m.parent })) : [],
  };
}

/** Store rows → the shapes the StudioApi promises (shared by the service and the CLI). */
import type { RunDetail, RunStudyCell, RunSummary } from '../../src-preload/api';
import type { RunRow, Store } from '../engine/store';

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
  return {
    id: run.id,
    name: run.name,
    status: run.status,
    statusReason: run.statusReason,
    preset: run.preset,
    task: configValue(run.config, 'task.family'),
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
  };
}

export function toRunDetail(store: Store, run: RunRow): RunDetail {
  return {
    ...toRunSummary(store, run),
    config: run.config,
    codeVersion: run.codeVersion,
    backendInfo: run.backendInfo,
    counts: store.runs.counts(run.id),
    lastCheckpointStep: store.events.latestCheckpoint(run.id)?.step ?? null,
  };
}

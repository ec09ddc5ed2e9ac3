/** Store rows → the shapes the StudioApi promises (shared by the service and the CLI). */
import type { ModelInspection, RunDetail, RunSummary } from '../../src-preload/api';
import type { HfInspectReport } from '../engine/hf/inspect';
import type { RunRow, Store } from '../engine/store';
import { staleRunReason } from '../engine/store/liveness';

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

export function toRunSummary(store: Store, run: RunRow): RunSummary {
  // A run recorded `running` with no live process (every process SIGKILLed at once) reads as
  // interrupted, with why, until the app or `marsrl serve` marks it so (issue #17).
  const stale = staleRunReason(run);
  return {
    id: run.id,
    name: run.name,
    status: stale === null ? run.status : 'interrupted',
    statusReason: stale === null ? run.statusReason : `${stale}; resume it with \`marsrl resume ${run.id}\``,
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
  };
}

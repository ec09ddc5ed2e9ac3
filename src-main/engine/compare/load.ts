/**
 * Loading runs for a comparison through the store's public repositories (no SQL here: the
 * store folder owns it). Only the series the summary reads are loaded unless asked for more,
 * so comparing 20 long runs does not read 20 × every metric.
 */
import type { Store } from '../store';
import type { RunData, SeriesPoint } from './summary';
import { pushAll } from '../util/arrays';

/** Keys the summary table reads (held-out metrics, grad norms, inflation, samples, throughput). */
export function isSummaryKey(key: string): boolean {
  return key.startsWith('eval/') || /^[^/]+\/(grad_norm|inflation|samples)$/.test(key) || key === 'perf/tokens_per_s';
}

export class UnknownRunError extends Error {
  constructor(readonly ref: string) {
    super(`no run ${JSON.stringify(ref)} in the store (list runs with \`marsrl runs\`)`);
    this.name = 'UnknownRunError';
  }
}

function readSeries(store: Store, runId: number, key: string): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  let cursor = -Infinity;
  for (;;) {
    const page = store.metrics.series(runId, key, cursor, 100_000);
    pushAll(out, page.items);
    if (page.nextCursor === null) return out;
    cursor = page.nextCursor;
  }
}

/**
 * The config with the models each policy started from (the trainer's `model_identity` event,
 * issue #13) under `models.<policy>.{family, path, config_digest, weights_digest}`, so the config
 * diff shows two runs that started from different models even when their configs read the same.
 */
function withModelIdentities(config: Record<string, unknown>, event: unknown): Record<string, unknown> {
  const policies = (event as { policies?: Record<string, { family?: string; path?: string | null; configDigest?: string; weightsDigest?: string | null }> } | null | undefined)?.policies;
  if (!policies) return config;
  const models: Record<string, unknown> = {};
  for (const [id, m] of Object.entries(policies)) {
    models[id] = { family: m.family ?? null, path: m.path ?? null, config_digest: m.configDigest ?? null, weights_digest: m.weightsDigest ?? null };
  }
  return { ...config, models };
}

/**
 * Runs by id or name, with their summary series (unless `summary` is false; then only the
 * `<agent>/samples` series a samples-seen x-axis needs) plus `extraKeys`. Unknown refs throw
 * UnknownRunError.
 */
export function loadRuns(store: Store, refs: readonly (number | string)[], extraKeys: readonly string[] = [], summary = true): RunData[] {
  return refs.map((ref) => {
    const run = typeof ref === 'number' ? store.runs.get(ref) : store.runs.find(ref);
    if (!run) throw new UnknownRunError(String(ref));
    const keys = store.metrics.keys(run.id).filter((k) => (summary ? isSummaryKey(k) : /^[^/]+\/samples$/.test(k)) || extraKeys.includes(k));
    return {
      runId: run.id,
      name: run.name,
      status: run.status,
      seed: run.seed,
      config: withModelIdentities(run.config, store.events.latestOfKind(run.id, 'model_identity')?.data),
      startedAt: run.startedAt,
      endedAt: run.endedAt,
      series: Object.fromEntries(keys.map((k) => [k, readSeries(store, run.id, k)])),
    };
  });
}

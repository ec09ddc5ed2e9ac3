/**
 * The comparison of runs: one summary row per run, one per group of runs (same config values,
 * different seeds), and deltas against a chosen baseline. Pure: the caller loads the runs
 * (see load.ts) and everything here is arithmetic, so it is tested against hand-made tables.
 *
 * Rules (what each column means):
 * - "Final" held-out metrics are read at the run's last held-out evaluation (the last step that
 *   has `eval/system/accuracy`), never an older value of a key the last evaluation lacked.
 *   Verifier precision and Corrector fix rate are undefined on the greedy evaluation when the
 *   Verifier rejected nothing; then the temperature-sampled evaluation of the same step
 *   (`eval/sampled/…`) is used and the source key recorded, else the value stays missing.
 * - Spikes per agent: max / median of `<agent>/grad_norm` over the run, and the number of steps
 *   above threshold × median (spikes.ts).
 * - Inflation per agent: mean over steps of `<agent>/inflation` (Dr. MAS's factor; 1 = none).
 * - tokens/s: mean of `perf/tokens_per_s` over steps. Wall time: ended − started (seconds), or
 *   the last metric's wall time for a run still going.
 * - Group rows: mean, std, min, max and 95% CI over the group's runs (stats.ts); the delta of a
 *   group is its mean minus the baseline group's mean, with the spread rule of stats.ts.
 * - Run deltas: the run's value minus the baseline run's value.
 */
import { compareAgents } from '#shared/agents';
import type { CompareGroupRow, CompareMetric, CompareRunRow } from '#shared/contract';
import { configValue, DERIVED_KEYS, diffConfigs, flattenConfig, type ConfigDiff } from './config-diff';
import { DEFAULT_SPIKE_THRESHOLD, spikeStats } from './spikes';
import { exceedsSeedSpread, stats } from './stats';
import { maxNumber } from '../util/arrays';

export interface SeriesPoint {
  step: number;
  wallTime: number;
  value: number;
}

/** What the comparison needs of one run. */
export interface RunData {
  runId: number;
  name: string;
  status: string;
  seed: number;
  config: Record<string, unknown>;
  startedAt: number | null;
  endedAt: number | null;
  /** Metric series by key, in step order (only the keys the summary reads are needed). */
  series: Record<string, SeriesPoint[]>;
}

/** A compared metric, as the StudioApi sends it: `better` is null where neither direction is an improvement (wall time is reported, not judged). */
export type SummaryMetric = CompareMetric;

/** A run's row of the summary: the StudioApi's row without the collapse flags the API adds. */
export type RunSummary = Omit<CompareRunRow, 'collapse'>;

/** A group's row of the summary (the spread rule against the baseline group has null fields for the baseline itself). */
export type GroupSummary = CompareGroupRow;

export interface CompareOptions {
  /** Config paths (or derived keys such as `sharing`) to group runs by; empty: no groups. */
  groupBy?: readonly string[];
  /** Baseline run for run deltas (default: the first run). */
  baselineRunId?: number;
  /** Baseline group label for group deltas (default: the first group). */
  baselineGroup?: string;
  spikeThreshold?: number;
}

export interface Comparison {
  metrics: SummaryMetric[];
  runs: RunSummary[];
  groups: GroupSummary[];
  groupBy: string[];
  baselineRunId: number | null;
  baselineGroup: string | null;
  spikeThreshold: number;
  configDiff: ConfigDiff;
}

const FINAL_EVAL_KEY = 'eval/system/accuracy';

/** Agents of a run: the prefixes of its `<agent>/grad_norm` series. */
export function agentsOf(run: RunData): string[] {
  return Object.keys(run.series)
    .map((k) => /^([^/]+)\/grad_norm$/.exec(k)?.[1])
    .filter((a): a is string => a !== undefined && a !== 'eval' && a !== 'perf')
    .sort(compareAgents);
}

/** The k of `eval/system/avg@k` in a run (the largest if several). */
function evalK(run: RunData): number | null {
  const ks = Object.keys(run.series)
    .map((k) => /^eval\/system\/(?:avg|pass)@(\d+)$/.exec(k)?.[1])
    .filter((k): k is string => k !== undefined)
    .map(Number);
  return ks.length ? maxNumber(ks) : null;
}

/** The value of the first present key at `step` (exact step), with the key used. */
function valueAtStep(run: RunData, keys: readonly string[], step: number): { value: number; key: string } | null {
  for (const key of keys) {
    const point = run.series[key]?.find((p) => p.step === step);
    if (point && Number.isFinite(point.value)) return { value: point.value, key };
  }
  return null;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

/** The summary metrics for a set of runs: fixed held-out columns, then per-agent columns for every agent seen. */
export function summaryMetrics(runs: readonly RunData[]): SummaryMetric[] {
  const ks = new Set(runs.map(evalK).filter((k): k is number => k !== null));
  const k = ks.size === 1 ? String([...ks][0]) : 'k';
  const agents = [...new Set(runs.flatMap(agentsOf))].sort(compareAgents);
  return [
    { id: 'eval/system/accuracy', label: 'system acc', better: 'higher', unit: 'fraction' },
    { id: 'eval/solver/accuracy', label: 'solver acc', better: 'higher', unit: 'fraction' },
    { id: 'eval/system/avg@k', label: `avg@${k}`, better: 'higher', unit: 'fraction' },
    { id: 'eval/system/pass@k', label: `pass@${k}`, better: 'higher', unit: 'fraction' },
    { id: 'eval/verifier/precision', label: 'verifier precision', better: 'higher', unit: 'fraction' },
    { id: 'eval/verifier/recall', label: 'verifier recall', better: 'higher', unit: 'fraction' },
    { id: 'eval/corrector/fix_rate', label: 'corrector fix rate', better: 'higher', unit: 'fraction' },
    ...agents.flatMap((a): SummaryMetric[] => [
      { id: `spike/${a}/max_over_median`, label: `${a} grad max/median`, better: 'lower', unit: 'ratio' },
      { id: `spike/${a}/count`, label: `${a} grad spikes`, better: 'lower', unit: 'count' },
    ]),
    ...agents.map((a): SummaryMetric => ({ id: `inflation/${a}`, label: `${a} inflation`, better: null, unit: 'ratio' })),
    { id: 'perf/tokens_per_s', label: 'tokens/s', better: 'higher', unit: 'per_s' },
    { id: 'wall_time_s', label: 'wall time', better: 'lower', unit: 'seconds' },
  ];
}

/** One run's values for the given metrics (no deltas yet). */
export function summarizeRun(run: RunData, metrics: readonly SummaryMetric[], spikeThreshold = DEFAULT_SPIKE_THRESHOLD): Pick<RunSummary, 'values' | 'sources'> {
  const values: Record<string, number | null> = {};
  const sources: Record<string, string> = {};
  const evalSeries = run.series[FINAL_EVAL_KEY] ?? [];
  const finalStep = evalSeries.length ? evalSeries[evalSeries.length - 1].step : null;
  const k = evalK(run);
  const finalCandidates: Record<string, string[]> = {
    'eval/system/accuracy': ['eval/system/accuracy'],
    'eval/solver/accuracy': ['eval/solver/accuracy'],
    'eval/system/avg@k': k === null ? [] : [`eval/system/avg@${k}`],
    'eval/system/pass@k': k === null ? [] : [`eval/system/pass@${k}`],
    'eval/verifier/precision': ['eval/verifier/precision', 'eval/sampled/verifier/precision'],
    'eval/verifier/recall': ['eval/verifier/recall', 'eval/sampled/verifier/recall'],
    'eval/corrector/fix_rate': ['eval/corrector/fix_rate', 'eval/sampled/corrector/fix_rate'],
  };
  for (const metric of metrics) {
    const id = metric.id;
    let value: number | null = null;
    if (id in finalCandidates) {
      const found = finalStep === null ? null : valueAtStep(run, finalCandidates[id], finalStep);
      if (found) {
        value = found.value;
        sources[id] = found.key;
      }
    } else if (id.startsWith('spike/')) {
      const [, agent, what] = id.split('/');
      const s = spikeStats((run.series[`${agent}/grad_norm`] ?? []).map((p) => p.value), spikeThreshold);
      value = run.series[`${agent}/grad_norm`]?.length ? (what === 'count' ? s.count : s.maxOverMedian) : null;
    } else if (id.startsWith('inflation/')) {
      value = mean((run.series[`${id.slice('inflation/'.length)}/inflation`] ?? []).map((p) => p.value).filter(Number.isFinite));
    } else if (id === 'perf/tokens_per_s') {
      value = mean((run.series['perf/tokens_per_s'] ?? []).map((p) => p.value).filter(Number.isFinite));
    } else if (id === 'wall_time_s') {
      if (run.startedAt !== null && run.endedAt !== null) value = (run.endedAt - run.startedAt) / 1000;
      else {
        const last = Object.values(run.series).flatMap((s) => (s.length ? [s[s.length - 1].wallTime] : []));
        value = last.length ? maxNumber(last) : null;
      }
    }
    values[id] = value;
  }
  return { values, sources };
}

const deltaOf = (a: number | null | undefined, b: number | null | undefined) => (a === null || a === undefined || b === null || b === undefined ? null : a - b);

export function groupLabel(config: Record<string, unknown>, groupBy: readonly string[]): string {
  return groupBy.map((k) => configValue(config, k)).join(' / ');
}

/**
 * A group-by key must be a derived key or a config path some compared run has: an unknown path
 * would silently put every run under "—" (issue 18). The error lists the nearest real paths.
 */
export function checkGroupKeys(runs: readonly { config: Record<string, unknown> }[], groupBy: readonly string[]): void {
  if (groupBy.length === 0 || runs.length === 0) return;
  const paths = new Set(runs.flatMap((r) => Object.keys(flattenConfig(r.config))));
  for (const key of groupBy) {
    if ((DERIVED_KEYS as readonly string[]).includes(key) || paths.has(key)) continue;
    const head = key.split('.')[0];
    const last = key.split('.').pop()!;
    const near = [...paths].filter((p) => p.startsWith(`${head}.`) || p.endsWith(`.${last}`)).slice(0, 8);
    const hint = near.length ? `paths near it: ${near.join(', ')}` : `config sections: ${[...new Set([...paths].map((p) => p.split('.')[0]))].join(', ')}; derived: ${DERIVED_KEYS.join(', ')}`;
    throw new RangeError(`group-by key "${key}" is not a config path of the compared runs (${hint})`);
  }
}

/** Summaries, groups and deltas for a set of runs (in the order given). */
export function compareRuns(runs: readonly RunData[], options: CompareOptions = {}): Comparison {
  const groupBy = [...(options.groupBy ?? [])];
  checkGroupKeys(runs, groupBy);
  const spikeThreshold = options.spikeThreshold ?? DEFAULT_SPIKE_THRESHOLD;
  const metrics = summaryMetrics(runs);
  const baselineRunId = options.baselineRunId ?? runs[0]?.runId ?? null;
  if (baselineRunId !== null && runs.length && !runs.some((r) => r.runId === baselineRunId)) {
    throw new RangeError(`baseline run ${baselineRunId} is not among the compared runs (${runs.map((r) => r.runId).join(', ')})`);
  }
  const base = runs.map((run) => ({ run, ...summarizeRun(run, metrics, spikeThreshold), group: groupBy.length ? groupLabel(run.config, groupBy) : null }));
  const baselineValues = base.find((b) => b.run.runId === baselineRunId)?.values ?? {};
  const summaries: RunSummary[] = base.map((b) => ({
    runId: b.run.runId,
    name: b.run.name,
    status: b.run.status,
    seed: b.run.seed,
    group: b.group,
    values: b.values,
    sources: b.sources,
    delta: Object.fromEntries(metrics.map((m) => [m.id, deltaOf(b.values[m.id], baselineValues[m.id])])),
  }));

  const groups: GroupSummary[] = [];
  if (groupBy.length) {
    const byLabel = new Map<string, RunSummary[]>();
    for (const s of summaries) byLabel.set(s.group!, [...(byLabel.get(s.group!) ?? []), s]);
    const labels = [...byLabel.keys()];
    const baselineGroup = options.baselineGroup ?? labels[0];
    if (!byLabel.has(baselineGroup)) throw new RangeError(`baseline group "${baselineGroup}" is not one of: ${labels.join(', ')}`);
    const column = (members: RunSummary[], id: string) => members.map((m) => m.values[id]).filter((v): v is number => v !== null && Number.isFinite(v));
    const baseMembers = byLabel.get(baselineGroup)!;
    for (const [label, members] of byLabel) {
      const first = runs.find((r) => r.runId === members[0].runId)!;
      const groupStats = Object.fromEntries(metrics.map((m) => [m.id, stats(column(members, m.id))]));
      const baseStats = Object.fromEntries(metrics.map((m) => [m.id, stats(column(baseMembers, m.id))]));
      groups.push({
        label,
        values: Object.fromEntries(groupBy.map((k) => [k, configValue(first.config, k)])),
        runIds: members.map((m) => m.runId),
        seeds: members.map((m) => m.seed),
        stats: groupStats,
        delta: Object.fromEntries(metrics.map((m) => [m.id, deltaOf(groupStats[m.id]?.mean, baseStats[m.id]?.mean)])),
        spread: Object.fromEntries(
          metrics.map((m) => [m.id, label === baselineGroup ? { exceeds: null, chance: null } : exceedsSeedSpread(column(members, m.id), column(baseMembers, m.id))]),
        ),
      });
    }
    return { metrics, runs: summaries, groups, groupBy, baselineRunId, baselineGroup, spikeThreshold, configDiff: diffConfigs(runs.map((r) => ({ runId: r.runId, config: r.config }))) };
  }
  return { metrics, runs: summaries, groups, groupBy, baselineRunId, baselineGroup: null, spikeThreshold, configDiff: diffConfigs(runs.map((r) => ({ runId: r.runId, config: r.config }))) };
}

/**
 * The study report: the group summary table with deltas against the baseline group, the spread
 * across seeds and which differences exceed it, the key charts, and the per-run table — as
 * Markdown with PNG (and SVG) charts, and as CSV (long format, one row per run × metric and
 * per group × metric) for spreadsheets and pandas.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Store } from '../store';
import {
  agentsOf,
  comparisonCsv,
  compareRuns,
  diffConfigs,
  EXCEEDS_MARK,
  groupBand,
  groupLabel,
  groupTable,
  loadRuns,
  markdownTable,
  runTable,
  type BandKind,
  type Comparison,
  type RunData,
} from '../compare';
import { collapseFlags, NEARLY_ALL, WINDOW_STEPS } from '../compare/collapse';
import { formatDeltaValue, formatMetric } from '#shared/format';
import { describeMetric, unitLabel } from '#shared/metric-catalog';
import { bandChartOption, seedDotsOption } from './charts';
import { renderChart } from './render';
import { studyProgress } from './runner';

export interface ReportChart {
  /** File name without extension (`eval-system-accuracy`). */
  name: string;
  title: string;
  option: Record<string, unknown>;
  /** The metric key a band chart draws (the glossary describes it). */
  key?: string;
}

export interface StudyReport {
  markdown: string;
  /** The group table alone (what the CLI prints). */
  markdownTable: string;
  csv: { runs: string; groups: string };
  charts: ReportChart[];
  summary: Comparison;
}

const BAND: BandKind = 'minmax';
const BAND_LABEL = 'min–max over seeds';

const slug = (key: string) => key.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '').toLowerCase();

/** The charts a study report draws, from loaded runs grouped by the study's axes. */
export function studyCharts(runs: readonly RunData[], groupBy: readonly string[], comparison: Comparison): ReportChart[] {
  const groups = new Map<string, RunData[]>();
  for (const run of runs) {
    const label = groupLabel(run.config, groupBy);
    groups.set(label, [...(groups.get(label) ?? []), run]);
  }
  const bandChart = (key: string, title: string, yLabel: string): ReportChart | null => {
    if (!runs.some((r) => r.series[key]?.length)) return null;
    const bands = [...groups].map(([label, members]) => groupBand(members, key, 'step', BAND, label));
    return { name: slug(key), title, key, option: bandChartOption(bands, { title, xLabel: 'RL step', yLabel, bandLabel: BAND_LABEL }) };
  };
  const charts: (ReportChart | null)[] = [
    bandChart('eval/system/accuracy', 'Held-out system accuracy', 'accuracy'),
    bandChart('eval/solver/accuracy', 'Held-out Solver accuracy', 'accuracy'),
    bandChart('system/accuracy', 'Training-batch system accuracy', 'accuracy'),
  ];
  const acc = comparison.metrics.find((m) => m.id === 'eval/system/accuracy');
  if (acc && comparison.groups.length) {
    const title = 'Final held-out system accuracy per seed';
    charts.push({
      name: 'final-system-accuracy-seeds',
      title,
      option: seedDotsOption(
        comparison.groups.map((g) => ({
          label: g.label,
          values: comparison.runs.filter((r) => r.group === g.label && r.values[acc.id] !== null).map((r) => ({ seed: r.seed, value: r.values[acc.id]! })),
        })),
        { title, xLabel: groupBy.join(' / '), yLabel: 'accuracy' },
      ),
    });
  }
  const agents = [...new Set(runs.flatMap(agentsOf))];
  for (const agent of agents) charts.push(bandChart(`${agent}/grad_norm`, `${agent} gradient norm`, 'grad norm'));
  for (const agent of agents) charts.push(bandChart(`${agent}/inflation`, `${agent} inflation factor (Dr. MAS)`, 'inflation'));
  return charts.filter((c): c is ReportChart => c !== null);
}

/**
 * The logged key a summary metric is read from: the group table's ids are mostly keys, with k
 * filled in for avg@k/pass@k and the per-agent spike and inflation summaries pointing at
 * `<agent>/grad_norm` and `<agent>/inflation`.
 */
function catalogKeyOf(id: string, k: number | null): string | null {
  if (id.includes('@k')) return k === null ? null : id.replace('@k', `@${k}`);
  const spike = /^spike\/([^/]+)\//.exec(id);
  if (spike) return `${spike[1]}/grad_norm`;
  const inflation = /^inflation\/(.+)$/.exec(id);
  if (inflation) return `${inflation[1]}/inflation`;
  if (id === 'wall_time_s') return null;
  return id;
}

/** One line per metric of the report, from the metric catalog (issue 18: every term explained). */
function metricGlossary(comparison: Comparison, charts: readonly ReportChart[]): string[] {
  const k = Number(/@(\d+)/.exec(comparison.metrics.find((m) => m.id === 'eval/system/avg@k')?.label ?? '')?.[1] ?? NaN);
  const keys = new Set<string>();
  for (const m of comparison.metrics) {
    const key = catalogKeyOf(m.id, Number.isFinite(k) ? k : null);
    if (key) keys.add(key);
  }
  for (const chart of charts) if (chart.key) keys.add(chart.key);
  return [...keys].map((key) => {
    const info = describeMetric(key);
    return `- **${info.title}** (\`${key}\`, ${unitLabel(info.unit)}): ${info.what}${info.source ? ` Source: ${info.source}.` : ''}`;
  });
}

export function buildStudyReport(store: Store, studyId: number): StudyReport {
  const study = store.studies.get(studyId);
  if (!study) throw new Error(`study ${studyId} does not exist`);
  const cells = store.studies.cells(studyId);
  const launched = cells.filter((c) => c.runId !== null && store.runs.get(c.runId) !== null);
  if (launched.length === 0) throw new Error(`study ${studyId} has no runs to report yet`);
  const runs = loadRuns(store, launched.map((c) => c.runId!), ['system/accuracy']);
  const axes = (study.matrix.axes ?? {}) as Record<string, unknown[]>;
  const groupBy = Object.keys(axes);
  const baseline = (study.matrix.baseline ?? {}) as Record<string, string>;
  // Group labels come from the cells' axis values, so fragment axes (`sharing: {label, set}`) group by their labels.
  const labelled = runs.map((r) => {
    const cell = launched.find((c) => c.runId === r.runId)!;
    return { ...r, config: { ...r.config, ...Object.fromEntries(groupBy.filter((k) => !k.includes('.')).map((k) => [k, cell.values[k]])) } };
  });
  const baselineGroup = groupBy.every((k) => k in baseline) ? groupBy.map((k) => baseline[k]).join(' / ') : undefined;
  const present = new Set(labelled.map((r) => groupLabel(r.config, groupBy)));
  const comparison = compareRuns(labelled, { groupBy, baselineGroup: baselineGroup && present.has(baselineGroup) ? baselineGroup : undefined });
  const charts = studyCharts(labelled, groupBy, comparison);
  const progress = studyProgress(store, studyId)!;

  const gt = groupTable(comparison);
  const table = markdownTable(gt.headers, gt.rows);
  const lines: string[] = [];
  lines.push(`# Study ${study.id}: ${study.name}`, '');
  const glossary = metricGlossary(comparison, charts);
  const description = typeof study.matrix.description === 'string' ? study.matrix.description.trim() : '';
  if (description) lines.push(description, '');
  const elapsed = study.startedAt && study.endedAt ? ` in ${Math.round((study.endedAt - study.startedAt) / 60000)} min` : '';
  lines.push(
    `- Status: **${study.status}**${study.statusReason ? ` (${study.statusReason})` : ''}${elapsed}: ${progress.done} of ${progress.total} runs done, ${progress.failed} failed, ${progress.running} running, ${progress.pending} queued.`,
    `- Preset: ${typeof study.matrix.preset === 'string' ? `\`${study.matrix.preset}\`` : '(none)'}; ${groupBy.map((k) => `\`${k}\` ∈ {${(axes[k] ?? []).map((v) => (typeof v === 'object' && v !== null && 'label' in v ? String((v as { label: unknown }).label) : String(v))).join(', ')}}`).join(' × ')}; seeds ${(study.matrix.seeds as number[] | undefined)?.join(', ') ?? '?'}; ${study.concurrency} run(s) at a time.`,
    `- Baseline group: **${comparison.baselineGroup}**. Runs: ${comparison.runs.map((r) => `#${r.runId}`).join(', ')}.`,
    '',
    '## Summary per group',
    '',
    `Mean ± std over seeds (unbiased std). Δ = group mean − baseline group mean. ${EXCEEDS_MARK} = the difference exceeds the seed spread: every seed of the group lies outside the baseline's range over seeds (min–max), in the same direction. This is descriptive, not a significance test: if the configuration made no difference, two groups of n seeds would separate this way by chance with probability 2 / C(2n, n) — 1/3 for 2 seeds, 1/10 for 3.`,
    '',
    table,
    '',
    '## Differences against the baseline and the spread across seeds',
    '',
  );
  const judged = comparison.metrics.filter((m) => m.better !== null);
  const exceeding: string[] = [];
  for (const group of comparison.groups) {
    if (group.label === comparison.baselineGroup) continue;
    const base = comparison.groups.find((g) => g.label === comparison.baselineGroup)!;
    lines.push(`### ${group.label} vs ${base.label}`, '');
    const rows = comparison.metrics
      .filter((m) => group.stats[m.id] && base.stats[m.id])
      .map((m) => {
        const gs = group.stats[m.id]!;
        const bs = base.stats[m.id]!;
        const spread = group.spread[m.id];
        const verdict = spread.exceeds === null ? 'n/a (< 2 seeds)' : spread.exceeds ? `**exceeds** (chance ${spread.chance!.toFixed(2)})` : 'within spread';
        if (spread.exceeds && judged.includes(m)) {
          const delta = group.delta[m.id]!;
          const direction = delta === 0 ? '' : (delta > 0) === (m.better === 'higher') ? 'better' : 'worse';
          exceeding.push(`- ${group.label}: ${m.label} ${formatDeltaValue(delta, m.unit)} (${direction}; seeds ${formatMetric(gs.min, m.unit)}–${formatMetric(gs.max, m.unit)} vs ${formatMetric(bs.min, m.unit)}–${formatMetric(bs.max, m.unit)})`);
        }
        return [m.label, `${formatMetric(bs.mean, m.unit)} [${formatMetric(bs.min, m.unit)}–${formatMetric(bs.max, m.unit)}]`, `${formatMetric(gs.mean, m.unit)} [${formatMetric(gs.min, m.unit)}–${formatMetric(gs.max, m.unit)}]`, formatDeltaValue(group.delta[m.id], m.unit), verdict];
      });
    lines.push(markdownTable(['metric', `${base.label} mean [seed range]`, `${group.label} mean [seed range]`, 'Δ', 'vs seed spread'], rows), '');
  }
  lines.push('### Differences that exceed the seed spread', '');
  lines.push(...(exceeding.length ? exceeding : ['- None: every measured difference lies within the spread across seeds.']), '');
  // An agent collapsed to one output earns its reward without doing its job (issue 35): said
  // beside the accuracies, with the numbers, per run.
  const collapsed = comparison.runs.flatMap((r) => collapseFlags(store, r.runId).map((f) => `- Run #${r.runId} (${r.group ?? r.name}, seed ${r.seed}): ${f.message}.`));
  lines.push(
    '## Agents collapsed to one output',
    '',
    `A Verifier that approves or rejects at least ${Math.round(NEARLY_ALL * 100)}% of what it judges, whatever it is shown, or a Corrector that returns its input in at least ${Math.round(NEARLY_ALL * 100)}% of its repairs, over each run's last ${WINDOW_STEPS} training steps.`,
    '',
    ...(collapsed.length ? collapsed : ['- None.']),
    '',
  );
  lines.push('## Charts', '');
  for (const chart of charts) lines.push(`![${chart.title}](charts/${chart.name}.png)`, '');
  const rt = runTable(comparison);
  lines.push('## Runs', '', `Δ against run #${comparison.baselineRunId}.`, '', markdownTable(rt.headers, rt.rows), '');
  const diff = diffConfigs(runs.map((r) => ({ runId: r.runId, config: r.config })));
  lines.push('## Configuration (fields that differ)', '', `${diff.keys.length} of ${diff.totalKeys} fields differ.`, '');
  if (diff.keys.length) lines.push(markdownTable(['run', ...diff.keys], diff.rows.map((r) => [`#${r.runId}`, ...diff.keys.map((k) => (r.values[k] === undefined ? '—' : String(r.values[k])))])), '');
  lines.push('## Metrics', '', 'What each metric in this report measures (the same descriptions as the app’s charts and compare view).', '', ...glossary, '');
  lines.push(
    '## Rules',
    '',
    '- Final held-out metrics are read at each run’s last evaluation step; Verifier precision/recall and Corrector fix rate fall back to the temperature-sampled evaluation of that step when the greedy one has no rejection (source keys in runs.csv).',
    `- Gradient spikes: max / median of \`<agent>/grad_norm\` over the run; spikes = steps above ${comparison.spikeThreshold} × median. Inflation: mean over steps of \`<agent>/inflation\`.`,
    `- Chart bands: ${BAND_LABEL}, per RL step over the runs that logged the metric at that step.`,
    '- Wall time depends on how many runs shared the machine (the study’s concurrency).',
    '',
  );
  return { markdown: lines.join('\n'), markdownTable: table, csv: comparisonCsv(comparison), charts, summary: comparison };
}

/** A report folder that cannot be written: the caller's path is wrong, not the study. */
export class ReportPathError extends Error {
  override name = 'ReportPathError';
}

/** Write report.md, runs.csv, groups.csv and charts/*.png|svg into `outDir`; returns the files written. */
export async function writeStudyReport(store: Store, studyId: number, outDir: string): Promise<StudyReport & { files: string[] }> {
  // The report's own folder is made; the folder it goes in must exist, as an export's must
  // (issue 18: a mistyped path created a tree of folders without a word).
  const parent = path.dirname(path.resolve(outDir));
  if (!fs.existsSync(parent)) throw new ReportPathError(`cannot write the report to ${path.resolve(outDir)}: the folder ${parent} does not exist; create it first or choose another path`);
  if (fs.existsSync(outDir) && !fs.statSync(outDir).isDirectory()) throw new ReportPathError(`cannot write the report to ${path.resolve(outDir)}: it is a file, not a folder`);
  const report = buildStudyReport(store, studyId);
  const chartsDir = path.join(outDir, 'charts');
  fs.mkdirSync(chartsDir, { recursive: true });
  const files: string[] = [];
  const write = (file: string, data: string | Buffer) => {
    fs.writeFileSync(file, data);
    files.push(file);
  };
  for (const chart of report.charts) {
    const rendered = await renderChart(chart.option);
    write(path.join(chartsDir, `${chart.name}.png`), rendered.png);
    write(path.join(chartsDir, `${chart.name}.svg`), rendered.svg);
  }
  write(path.join(outDir, 'report.md'), report.markdown);
  write(path.join(outDir, 'runs.csv'), report.csv.runs);
  write(path.join(outDir, 'groups.csv'), report.csv.groups);
  return { ...report, files };
}

/**
 * Summary tables (terminal, Markdown, the report). Each cell reads as in the compare view: the
 * formatting is src-shared/format.ts's (formatMetric, formatDeltaValue, formatGroupStats).
 */
import { formatDeltaValue, formatGroupStats, formatMetric } from '#shared/format';
import type { Comparison, SummaryMetric } from './summary';

/** Marker after a group delta that exceeds the seed spread (see stats.ts exceedsSeedSpread). */
export const EXCEEDS_MARK = '*';

/** Rows = metrics, one column per group: "mean ± std (Δ +x*)". */
export function groupTable(comparison: Comparison): { headers: string[]; rows: string[][] } {
  const headers = ['metric', ...comparison.groups.map((g) => `${g.label}${g.label === comparison.baselineGroup ? ' (baseline)' : ''} n=${g.runIds.length}`)];
  const rows = comparison.metrics.map((m: SummaryMetric) => [
    m.label,
    ...comparison.groups.map((g) => {
      const cell = formatGroupStats(g.stats[m.id], m.unit);
      if (g.label === comparison.baselineGroup || cell === '—') return cell;
      const mark = g.spread[m.id]?.exceeds ? EXCEEDS_MARK : '';
      return `${cell} (Δ ${formatDeltaValue(g.delta[m.id], m.unit)}${mark})`;
    }),
  ]);
  return { headers, rows };
}

/** Rows = metrics, one column per run: "value (Δ)" against the baseline run. */
export function runTable(comparison: Comparison): { headers: string[]; rows: string[][] } {
  const headers = ['metric', ...comparison.runs.map((r) => `#${r.runId}${r.group ? ` ${r.group}` : ''} s${r.seed}${r.runId === comparison.baselineRunId ? ' (baseline)' : ''}`)];
  const rows = comparison.metrics.map((m) => [
    m.label,
    ...comparison.runs.map((r) => {
      const cell = formatMetric(r.values[m.id], m.unit);
      if (r.runId === comparison.baselineRunId || cell === '—') return cell;
      return `${cell} (${formatDeltaValue(r.delta[m.id], m.unit)})`;
    }),
  ]);
  return { headers, rows };
}

/** A Markdown table; pipes in cells are escaped. */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|');
  return [`| ${headers.map(esc).join(' | ')} |`, `| ${headers.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`)].join('\n');
}

/** RFC 4180 CSV: cells with a comma, quote or newline are quoted, quotes doubled. */
export function csv(headers: readonly string[], rows: readonly (readonly (string | number | boolean | null | undefined)[])[]): string {
  const cell = (v: string | number | boolean | null | undefined) => {
    const text = v === null || v === undefined ? '' : String(v);
    return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return [headers, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}

/** Long-format CSV of a comparison: one row per (run, metric) and per (group, metric). */
export function comparisonCsv(comparison: Comparison): { runs: string; groups: string } {
  const runs = csv(
    ['run_id', 'name', 'group', 'seed', 'status', 'metric', 'label', 'value', 'delta_vs_baseline_run', 'source_key'],
    comparison.runs.flatMap((r) => comparison.metrics.map((m) => [r.runId, r.name, r.group, r.seed, r.status, m.id, m.label, r.values[m.id], r.delta[m.id], r.sources[m.id]])),
  );
  const groups = csv(
    ['group', 'n', 'run_ids', 'metric', 'label', 'mean', 'std', 'min', 'max', 'ci95_half_width', 'delta_vs_baseline_group', 'exceeds_seed_spread', 'chance_if_no_effect'],
    comparison.groups.flatMap((g) =>
      comparison.metrics.map((m) => {
        const s = g.stats[m.id];
        return [g.label, s?.n ?? 0, g.runIds.join(' '), m.id, m.label, s?.mean, s?.std, s?.min, s?.max, s?.ci95, g.delta[m.id], g.spread[m.id]?.exceeds, g.spread[m.id]?.chance];
      }),
    ),
  );
  return { runs, groups };
}

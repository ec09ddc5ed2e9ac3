import { collapseFlags, compareRuns, compareWarnings, groupTable, loadRuns, runTable, UnknownRunError, DEFAULT_SPIKE_THRESHOLD } from '../../engine/compare';
import { runRef, UsageError } from '../args';
import { openCliStudio, defineCommand } from '../context';
import { printJson, table } from '../format';

const compareUsage = `Usage: marsrl compare RUN… [--group-by KEY[,KEY…]] [--baseline RUN] [--baseline-group LABEL]
                      [--spike-threshold X] [--db PATH] [--json]
       marsrl compare --study STUDY [same options]

Compares runs (ids or names) side by side: the config fields that differ, then a summary per
run — final held-out system/solver accuracy, avg@k, pass@k, Verifier precision/recall,
Corrector fix rate, gradient-norm spikes per agent (max/median, steps above X × median,
default ${DEFAULT_SPIKE_THRESHOLD}), mean inflation per agent, tokens/s, wall time — each with
its delta against the baseline run (default: the first).
--group-by groups runs by config paths (e.g. reward.scheme,advantage.mode; \`sharing\` for
shared vs separate policies) and adds a table of group mean ± std over seeds with deltas
against the baseline group; * marks a difference whose seed ranges do not overlap.
--study STUDY compares every run of a study, grouped by its axes.`;

export const compareCommand = defineCommand({
  name: 'compare',
  summary: 'compare runs side by side: summary table, deltas against a baseline',
  usage: compareUsage,
  options: { 'group-by': { type: 'string' }, baseline: { type: 'string' }, 'baseline-group': { type: 'string' }, 'spike-threshold': { type: 'string' }, study: { type: 'string' } },
  async run({ values, positionals }, ctx) {
    if (values.study === undefined && positionals.length === 0) throw new UsageError('compare needs at least one RUN (id or name), or --study STUDY', compareUsage);
    if (values.study !== undefined && positionals.length > 0) throw new UsageError('give RUNs or --study, not both', compareUsage);
    for (const ref of positionals) runRef(ref, 'each RUN', compareUsage);
    let spikeThreshold: number | undefined;
    if (values['spike-threshold'] !== undefined) {
      spikeThreshold = Number(values['spike-threshold']);
      if (!Number.isFinite(spikeThreshold) || spikeThreshold <= 1) throw new UsageError(`--spike-threshold must be a number above 1 (a multiple of the median; got ${JSON.stringify(values['spike-threshold'])})`, compareUsage);
    }
    let groupBy = values['group-by']?.split(',').map((k) => k.trim()).filter(Boolean);
    if (values['group-by'] !== undefined && !groupBy?.length) throw new UsageError('--group-by needs config paths such as reward.scheme,advantage.mode', compareUsage);

    const { store, databasePath } = openCliStudio(values.db, ctx.env);
    try {
      let refs: (string | number)[] = positionals;
      let baselineGroup = values['baseline-group'];
      if (values.study !== undefined) {
        const study = /^\d+$/.test(values.study) ? store.studies.get(Number(values.study)) : (store.studies.list(10_000).find((s) => s.name === values.study) ?? null);
        if (!study) {
          ctx.err(`No study ${JSON.stringify(values.study)} in ${databasePath}. List studies with: marsrl study --list`);
          return 1;
        }
        const cells = store.studies.cells(study.id).filter((c) => c.runId !== null);
        if (cells.length === 0) {
          ctx.err(`Study ${study.id} has no launched runs yet.`);
          return 1;
        }
        refs = cells.map((c) => c.runId!);
        const axes = Object.keys((study.matrix.axes as Record<string, unknown>) ?? {});
        groupBy ??= axes;
        const baseline = study.matrix.baseline as Record<string, string> | undefined;
        if (baselineGroup === undefined && baseline && groupBy.every((k) => k in baseline)) baselineGroup = groupBy.map((k) => baseline[k]).join(' / ');
      }
      let runs;
      try {
        runs = loadRuns(store, refs.map((r) => (typeof r === 'string' && /^\d+$/.test(r) ? Number(r) : r)));
      } catch (error) {
        if (error instanceof UnknownRunError) {
          ctx.err(`No run ${JSON.stringify(error.ref)} in ${databasePath}. List runs with: marsrl runs`);
          return 1;
        }
        throw error;
      }
      // A run named twice (`compare 1 1`, or by id and by name) is compared once.
      const seen = new Set<number>();
      const unique = runs.filter((r) => !seen.has(r.runId) && seen.add(r.runId));
      if (unique.length < runs.length) ctx.err(`Note: ${runs.length - unique.length} run${runs.length - unique.length === 1 ? ' was' : 's were'} named more than once; each run is compared once.`);
      runs = unique;
      let baselineRunId: number | undefined;
      if (values.baseline !== undefined) {
        const run = store.runs.find(values.baseline);
        if (!run || !runs.some((r) => r.runId === run.id)) throw new UsageError(`--baseline ${values.baseline} must be one of the compared runs (${runs.map((r) => r.runId).join(', ')})`, compareUsage);
        baselineRunId = run.id;
      }
      let comparison;
      try {
        comparison = compareRuns(runs, { groupBy, baselineRunId, baselineGroup, spikeThreshold });
      } catch (error) {
        if (error instanceof RangeError) throw new UsageError(error.message, compareUsage);
        throw error;
      }
      // One seed per side, agents collapsed to one output (issue 35): said under the tables.
      const collapse = new Map(runs.map((r) => [r.runId, collapseFlags(store, r.runId)]));
      const warnings = compareWarnings(comparison, collapse);
      if (values.json) {
        printJson(ctx.out, { ...comparison, runs: comparison.runs.map((r) => ({ ...r, collapse: collapse.get(r.runId) ?? [] })), warnings });
        return 0;
      }
      const diff = comparison.configDiff;
      const lines: string[] = [];
      lines.push(`Config: ${diff.keys.length} of ${diff.totalKeys} fields differ${diff.keys.length ? '' : ' (the runs differ only in name)'}`);
      if (diff.keys.length) lines.push(table(['run', ...diff.keys], diff.rows.map((r) => [`#${r.runId}`, ...diff.keys.map((k) => (r.values[k] === undefined ? '—' : String(r.values[k])))])));
      const rt = runTable(comparison);
      lines.push('', `Runs (Δ against run #${comparison.baselineRunId}):`, table(rt.headers, rt.rows));
      if (comparison.groups.length) {
        const gt = groupTable(comparison);
        lines.push('', `Groups by ${comparison.groupBy.join(', ')} (mean ± std over seeds; Δ against ${comparison.baselineGroup}; * = seed ranges do not overlap):`, table(gt.headers, gt.rows));
      }
      if (warnings.length) lines.push('', 'Read with care:', ...warnings.map((w) => `  ! ${w.message}${w.command ? `\n      ${w.command}` : ''}`));
      ctx.out(lines.join('\n'));
      return 0;
    } finally {
      store.close();
    }
  },
});

import { describe, expect, it } from 'vitest';
import {
  bandOf,
  binomial,
  compareRuns,
  comparisonCsv,
  configValue,
  csv,
  diffConfigs,
  exceedsSeedSpread,
  flattenConfig,
  groupBand,
  groupTable,
  samplesSeen,
  spikeStats,
  stats,
  toXY,
  type RunData,
  type SeriesPoint,
} from '../../src-main/engine/compare';

const pts = (values: number[], wallStep = 10): SeriesPoint[] => values.map((value, step) => ({ step, wallTime: step * wallStep, value }));

function run(runId: number, seed: number, scheme: string, mode: string, series: Record<string, SeriesPoint[]>, times: [number, number] | null = [0, 100_000]): RunData {
  return {
    runId,
    name: `r${runId}`,
    status: 'done',
    seed,
    config: { seed, reward: { scheme }, advantage: { mode }, agents: { solver: 'solver', verifier: 'verifier', corrector: 'corrector' } },
    startedAt: times?.[0] ?? null,
    endedAt: times?.[1] ?? null,
    series,
  };
}

describe('stats over seeds', () => {
  it('matches hand-computed mean, unbiased std, median and 95% t interval', () => {
    // 2, 4, 6: mean 4, deviations 4+0+4 = 8, / (3−1) = 4 → std 2; ci = 4.303 × 2 / √3 = 4.9687.
    const s = stats([2, 4, 6])!;
    expect(s).toMatchObject({ n: 3, mean: 4, std: 2, min: 2, max: 6, median: 4 });
    expect(s.ci95).toBeCloseTo((4.303 * 2) / Math.sqrt(3), 10);
    expect(bandOf(s, 'minmax')).toEqual([2, 6]);
    expect(bandOf(s, 'std')).toEqual([2, 6]);
    expect(bandOf(s, 'ci95')[1]).toBeCloseTo(4 + 4.9687, 3);
  });

  it('ignores missing values and gives a group of one no interval', () => {
    expect(stats([null, undefined, Number.NaN])).toBeNull();
    const one = stats([0.5, null])!;
    expect(one).toMatchObject({ n: 1, mean: 0.5, std: 0, ci95: null });
    expect(stats([1, 2, 3, 10])!.median).toBe(2.5);
  });

  it('applies the spread rule: non-overlapping seed ranges, with the chance of that under no effect', () => {
    expect(binomial(4, 2)).toBe(6);
    expect(binomial(6, 3)).toBe(20);
    expect(exceedsSeedSpread([0.8, 0.82], [0.7, 0.75])).toEqual({ exceeds: true, chance: 2 / 6 });
    expect(exceedsSeedSpread([0.6, 0.65], [0.7, 0.75]).exceeds).toBe(true);
    // Overlap (0.74 lies inside 0.7–0.75) and touching ranges do not exceed.
    expect(exceedsSeedSpread([0.74, 0.9], [0.7, 0.75]).exceeds).toBe(false);
    expect(exceedsSeedSpread([0.75, 0.9], [0.7, 0.75]).exceeds).toBe(false);
    expect(exceedsSeedSpread([0.9], [0.7, 0.75])).toEqual({ exceeds: null, chance: null });
    expect(exceedsSeedSpread([1, 2, 3], [4, 5, 6]).chance).toBeCloseTo(0.1, 12);
  });
});

describe('gradient-norm spikes', () => {
  it('reports max over median and the count above threshold × median', () => {
    // median of [1, 1, 2, 1, 9, 1, 4] is 1; max 9 → ratio 9; above 3 × 1: 9 and 4 → 2.
    expect(spikeStats([1, 1, 2, 1, 9, 1, 4])).toEqual({ maxOverMedian: 9, count: 2, median: 1, max: 9 });
    expect(spikeStats([1, 1, 2, 1, 9, 1, 4], 5).count).toBe(1);
    // Exactly at the threshold is not a spike.
    expect(spikeStats([1, 1, 3]).count).toBe(0);
    expect(spikeStats([])).toEqual({ maxOverMedian: null, count: 0, median: null, max: null });
    expect(spikeStats([0, 0, 5]).maxOverMedian).toBeNull();
  });
});

describe('diff-only config', () => {
  it('flattens nested configs and keeps only paths that differ (missing counts as different)', () => {
    expect(flattenConfig({ a: { b: 1, c: [1, 2] }, d: null })).toEqual({ 'a.b': 1, 'a.c': '[1,2]', d: null });
    const diff = diffConfigs([
      { runId: 1, config: { name: 'x', seed: 1, reward: { scheme: 'decoupled' }, rollout: { k: 2 } } },
      { runId: 2, config: { name: 'y', seed: 2, reward: { scheme: 'decoupled' }, rollout: { k: 2 }, extra: true } },
      { runId: 3, config: { name: 'z', seed: 1, reward: { scheme: 'shared' }, rollout: { k: 2 } } },
    ]);
    expect(diff.keys).toEqual(['extra', 'reward.scheme', 'seed']);
    expect(diff.totalKeys).toBe(4);
    expect(diff.rows[0].values).toEqual({ extra: undefined, 'reward.scheme': 'decoupled', seed: 1 });
    expect(diff.rows[1].values.extra).toBe(true);
  });

  it('derives the sharing key from the agents map', () => {
    expect(configValue({ agents: { solver: 'p', verifier: 'p', corrector: 'p' } }, 'sharing')).toBe('shared');
    expect(configValue({ agents: { solver: 'solver', verifier: 'verifier', corrector: 'corrector' } }, 'sharing')).toBe('separate');
    expect(configValue({ agents: { solver: 'a', verifier: 'a', corrector: 'c' } }, 'sharing')).toBe('partial');
    expect(configValue({ reward: { scheme: 'shared' } }, 'reward.scheme')).toBe('shared');
    expect(configValue({}, 'reward.scheme')).toBe('—');
  });
});

/** Four runs: two seeds of decoupled/agentwise (baseline) and two of shared/global. */
function fixture(): RunData[] {
  const evalSeries = (finals: number[]) => finals.map((value, i) => ({ step: i * 10, wallTime: i * 100, value }));
  return [
    run(1, 1, 'decoupled', 'agentwise', {
      'eval/system/accuracy': evalSeries([0.5, 0.8]),
      'eval/solver/accuracy': evalSeries([0.5, 0.7]),
      'eval/system/avg@4': evalSeries([0.4, 0.6]),
      'eval/system/pass@4': evalSeries([0.7, 0.9]),
      // Greedy precision only at step 0: the final (step 10) value must come from the sampled eval.
      'eval/verifier/precision': evalSeries([0.9]),
      'eval/sampled/verifier/precision': evalSeries([0.5, 0.6]),
      'solver/grad_norm': pts([1, 1, 2, 1, 9, 1, 4]),
      'solver/inflation': pts([1, 2, 3]),
      'solver/samples': pts([64, 64, 64]),
      'perf/tokens_per_s': pts([100, 200]),
    }),
    run(2, 2, 'decoupled', 'agentwise', {
      'eval/system/accuracy': evalSeries([0.5, 0.84]),
      'eval/solver/accuracy': evalSeries([0.5, 0.7]),
      'solver/grad_norm': pts([2, 2, 2]),
      'solver/inflation': pts([1, 1]),
    }),
    run(3, 1, 'shared', 'global', {
      'eval/system/accuracy': evalSeries([0.5, 0.7]),
      'eval/solver/accuracy': evalSeries([0.5, 0.75]),
      'solver/grad_norm': pts([1, 10, 1]),
    }),
    run(4, 2, 'shared', 'global', {
      'eval/system/accuracy': evalSeries([0.5, 0.72]),
      'eval/solver/accuracy': evalSeries([0.5, 0.68]),
      'solver/grad_norm': pts([1, 1, 1]),
    }, null),
  ];
}

describe('compareRuns', () => {
  it('summarises each run with final held-out values, spikes, inflation, throughput and wall time', () => {
    const c = compareRuns(fixture());
    const r1 = c.runs[0];
    expect(r1.values['eval/system/accuracy']).toBe(0.8);
    expect(r1.values['eval/system/avg@k']).toBe(0.6);
    expect(r1.values['eval/system/pass@k']).toBe(0.9);
    expect(c.metrics.find((m) => m.id === 'eval/system/avg@k')?.label).toBe('avg@4');
    // The last evaluation (step 10) had no greedy precision → the sampled one, source recorded.
    expect(r1.values['eval/verifier/precision']).toBe(0.6);
    expect(r1.sources['eval/verifier/precision']).toBe('eval/sampled/verifier/precision');
    expect(r1.values['eval/corrector/fix_rate']).toBeNull();
    expect(r1.values['spike/solver/max_over_median']).toBe(9);
    expect(r1.values['spike/solver/count']).toBe(2);
    expect(r1.values['inflation/solver']).toBe(2);
    expect(r1.values['perf/tokens_per_s']).toBe(150);
    expect(r1.values.wall_time_s).toBe(100);
    // Run 4 has no start/end times: the last logged wall time (2 steps × 10 s) stands in.
    expect(c.runs[3].values.wall_time_s).toBe(100);
  });

  it('gives deltas against the baseline run (the first unless chosen)', () => {
    const c = compareRuns(fixture(), { baselineRunId: 2 });
    expect(c.baselineRunId).toBe(2);
    expect(c.runs[0].delta['eval/system/accuracy']).toBeCloseTo(0.8 - 0.84, 12);
    expect(c.runs[1].delta['eval/system/accuracy']).toBe(0);
    expect(c.runs[0].delta['perf/tokens_per_s']).toBeNull();
    expect(() => compareRuns(fixture(), { baselineRunId: 99 })).toThrow(/baseline run 99/);
  });

  it('groups runs by config keys with mean ± std, deltas against the baseline group and the spread rule', () => {
    const c = compareRuns(fixture(), { groupBy: ['reward.scheme', 'advantage.mode'] });
    expect(c.groups.map((g) => g.label)).toEqual(['decoupled / agentwise', 'shared / global']);
    expect(c.baselineGroup).toBe('decoupled / agentwise');
    const [base, other] = c.groups;
    expect(base.runIds).toEqual([1, 2]);
    expect(other.seeds).toEqual([1, 2]);
    // Baseline: 0.80, 0.84 → mean 0.82, std √((0.02² + 0.02²)/1) = 0.028284.
    expect(base.stats['eval/system/accuracy']!.mean).toBeCloseTo(0.82, 12);
    expect(base.stats['eval/system/accuracy']!.std).toBeCloseTo(Math.SQRT2 * 0.02, 12);
    // Shared/global: 0.70, 0.72 → mean 0.71; Δ = −0.11; ranges 0.70–0.72 vs 0.80–0.84 do not overlap.
    expect(other.delta['eval/system/accuracy']).toBeCloseTo(-0.11, 12);
    expect(other.spread['eval/system/accuracy']).toEqual({ exceeds: true, chance: 1 / 3 });
    // Solver accuracy: 0.75, 0.68 vs 0.70, 0.70 overlap → within the spread.
    expect(other.spread['eval/solver/accuracy'].exceeds).toBe(false);
    expect(base.spread['eval/system/accuracy'].exceeds).toBeNull();
    const table = groupTable(c);
    const accRow = table.rows.find((r) => r[0] === 'system acc')!;
    expect(accRow[1]).toBe('0.820 ± 0.028');
    expect(accRow[2]).toBe('0.710 ± 0.014 (Δ −0.110*)');
    expect(() => compareRuns(fixture(), { groupBy: ['reward.scheme'], baselineGroup: 'nope' })).toThrow(/not one of: decoupled, shared/);
    expect(compareRuns(fixture(), { groupBy: ['reward.scheme'], baselineGroup: 'shared' }).groups[0].delta['eval/system/accuracy']).toBeCloseTo(0.11, 12);
  });

  it('exports long-format CSV with quoting', () => {
    const c = compareRuns(fixture(), { groupBy: ['reward.scheme'] });
    const { runs, groups } = comparisonCsv(c);
    const runLines = runs.trim().split('\r\n');
    expect(runLines[0]).toBe('run_id,name,group,seed,status,metric,label,value,delta_vs_baseline_run,source_key');
    expect(runLines.length).toBe(1 + 4 * c.metrics.length);
    expect(runLines).toContain('1,r1,decoupled,1,done,eval/system/accuracy,system acc,0.8,0,eval/system/accuracy');
    expect(groups.split('\r\n')[0]).toContain('exceeds_seed_spread');
    expect(csv(['a'], [['x,"y"']])).toBe('a\r\n"x,""y"""\r\n');
  });
});

describe('series for charts', () => {
  it('maps x to step, wall time or samples seen', () => {
    const series = { 'solver/samples': pts([64, 64, 64]), 'verifier1/samples': pts([16, 16, 16]), 'solver/grad_norm': pts([1, 2, 3]) };
    const seen = samplesSeen(series);
    expect([...seen.entries()]).toEqual([[0, 80], [1, 160], [2, 240]]);
    expect(toXY(series['solver/grad_norm'], 'samples', seen)).toEqual([[80, 1], [160, 2], [240, 3]]);
    expect(toXY(series['solver/grad_norm'], 'wall')).toEqual([[0, 1], [10, 2], [20, 3]]);
    expect(toXY(series['solver/grad_norm'], 'step')).toEqual([[0, 1], [1, 2], [2, 3]]);
  });

  it('computes a group band per step over the runs that logged it', () => {
    const runs = fixture();
    const band = groupBand(runs.slice(0, 2), 'solver/grad_norm', 'step', 'minmax', 'g');
    // Step 0: run 1 → 1, run 2 → 2: mean 1.5, band 1–2. Step 3: only run 1 (→ 1, n = 1).
    expect(band.points[0]).toEqual({ x: 0, step: 0, mean: 1.5, lo: 1, hi: 2, n: 2 });
    expect(band.points[3]).toEqual({ x: 3, step: 3, mean: 1, lo: 1, hi: 1, n: 1 });
    const std = groupBand(runs.slice(0, 2), 'solver/grad_norm', 'wall', 'std', 'g');
    expect(std.points[0].x).toBe(0);
    expect(std.points[0].lo).toBeCloseTo(1.5 - Math.SQRT1_2, 12);
    expect(band.clippedTo).toBeNull();
  });

  it("clips a band to the metric's range: a 95% CI over two seeds of an accuracy stays in [0, 1] (issue 18)", () => {
    const accuracy = (values: number[]) => ({ 'eval/system/accuracy': pts(values) });
    const runs = [run(1, 1, 'decoupled', 'agentwise', accuracy([0.1, 0.5])), run(2, 2, 'decoupled', 'agentwise', accuracy([0.9, 0.5]))];
    const band = groupBand(runs, 'eval/system/accuracy', 'step', 'ci95', 'g');
    // Unclipped: 0.5 ± 12.706 · 0.5657 / √2 = 0.5 ± 5.08.
    expect(band.points[0]).toMatchObject({ mean: 0.5, lo: 0, hi: 1, n: 2 });
    expect(band.points[1]).toMatchObject({ mean: 0.5, lo: 0.5, hi: 0.5 });
    expect(band.clippedTo).toEqual([0, 1]);
    // A margin may be negative: its range is [−1, 1].
    const margin = groupBand([run(1, 1, 'd', 'a', { 'eval/system/margin': pts([-0.3]) }), run(2, 2, 'd', 'a', { 'eval/system/margin': pts([0.3]) })], 'eval/system/margin', 'step', 'ci95', 'g');
    expect(margin.points[0]).toMatchObject({ lo: -1, hi: 1 });
  });
});

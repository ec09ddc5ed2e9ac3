/**
 * The renderer's pure parts, without a browser: smoothing, metric grouping, chart options,
 * routes, the form's document handling, the episode tree, the HTTP client's wire format and the
 * export dialog's form (checked against the export engine's own option rules).
 */
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateOptions, type ExportOptions } from '../../src-main/engine/export/options';
import type { EpisodeDetail, StudioEvent } from '#shared/contract';
import { STUDIO_METHODS } from '#shared/contract';
import { ganttModel, initialWindow } from '../../src-renderer/src/charts/ganttOption';
import { describeMetric } from '#shared/metric-catalog';
import { bandNote, compareChartOption } from '../../src-renderer/src/charts/compareOption';
import { lineChartOption, MIN_SMOOTHED_POINTS } from '../../src-renderer/src/charts/lineOption';
import { metricSections } from '../../src-renderer/src/charts/metricPanels';
import { debiasedEma } from '../../src-renderer/src/charts/smoothing';
import { changedPaths, getPath, setPath, valueFromText } from '../../src-renderer/src/util/configDoc';
import { hfPoliciesOf } from '../../src-renderer/src/stores/modelExport';
import { branchMarks, describeParsed, episodeTreeRows, finalTurnId, type EpisodeTurn } from '../../src-renderer/src/util/episodeTree';
import { agentChain as chainAgents } from '#shared/agents';
import { filtersFromUrl, urlFromFilters } from '../../src-renderer/src/util/trajectoryUrl';
import { boundedAxisEnd } from '../../src-renderer/src/charts/lineOption';
import {
  buildExportRequest,
  containerReason,
  effectiveContainer,
  emptyForm,
  fieldOfIssuePath,
  fieldOfMessage,
  folderOf,
  formatBytes,
  joinPath,
  suggestedOutPath,
  withContainerExtension,
  type ExportForm,
} from '../../src-renderer/src/util/exportForm';

describe('debiased EMA (TensorBoard smoothing)', () => {
  it('matches a plain loop of the definition, and leaves weight 0 alone', () => {
    const points: [number, number][] = [[0, 1], [1, 3], [2, 2], [3, 8], [4, 4]];
    const w = 0.6;
    let last = 0;
    const expected = points.map(([x, y], i) => {
      last = last * w + (1 - w) * y;
      return [x, last / (1 - w ** (i + 1))];
    });
    const got = debiasedEma(points, w);
    got.forEach(([x, y], i) => {
      expect(x).toBe(expected[i][0]);
      expect(y).toBeCloseTo(expected[i][1], 12);
    });
    // Debiasing: the first point is the first value, not (1 - w) of it.
    expect(got[0][1]).toBeCloseTo(1, 12);
    expect(debiasedEma(points, 0)).toEqual(points);
  });

  it('skips non-finite values and keeps a constant series exact', () => {
    const got = debiasedEma([[0, 2], [1, Number.NaN], [2, 4]], 0.5);
    expect(Number.isNaN(got[1][1])).toBe(true);
    expect(got[2][1]).toBeCloseTo((0.5 * 0.5 * 2 + 0.5 * 4) / (1 - 0.25), 12);
    expect(debiasedEma([[0, 0.1], [1, 0.1], [2, 0.1]], 0.9).map((p) => p[1])).toEqual([0.1, 0.1, 0.1]);
  });
});

describe('metric keys → panels', () => {
  const keys = [
    'solver/reward/mean', 'verifier1/reward/mean', 'corrector1/reward/mean',
    'solver/advantage/mean', 'solver/advantage/std', 'verifier1/advantage/mean', 'verifier1/advantage/std',
    'solver/grad_norm', 'verifier1/grad_norm', 'corrector1/grad_norm',
    'system/accuracy', 'solver/accuracy', 'verifier1/precision', 'verifier1/recall', 'corrector1/fix_rate',
    'perf/tokens_per_s', 'pipeline/staleness',
    'eval/system/accuracy', 'eval/solver/accuracy', 'eval/system/avg@8', 'eval/system/pass@8',
    'eval/control/oracle_verifier/accuracy', 'pretrain/solver/loss', 'pretrain/verifier/loss',
  ];
  const sections = metricSections(keys);
  const panel = (id: string) => sections.flatMap((s) => s.panels).find((p) => p.id === id);

  it('puts every key in exactly one panel', () => {
    const placed = sections.flatMap((s) => s.panels.flatMap((p) => p.lines.map((l) => l.key)));
    expect(placed.slice().sort()).toEqual(keys.slice().sort());
    expect(sections.map((s) => s.id)).toEqual(['eval', 'train', 'pretrain']);
  });

  it('compares a metric across agents, merging mean and std', () => {
    expect(panel('train:grad_norm')?.lines.map((l) => l.label)).toEqual(['solver', 'verifier1', 'corrector1']);
    const advantage = panel('train:advantage')!;
    expect(advantage.lines.map((l) => [l.key, l.dashed])).toEqual([
      ['solver/advantage/mean', false], ['verifier1/advantage/mean', false],
      ['solver/advantage/std', true], ['verifier1/advantage/std', true],
    ]);
    expect(panel('train:accuracy')?.lines.map((l) => l.key)).toEqual(['solver/accuracy', 'system/accuracy']);
    // An agent's own metrics stay together: precision with recall.
    expect(panel('train:verifier1')?.lines.map((l) => l.label)).toEqual(['precision', 'recall']);
    // Agents keep one colour across panels.
    expect(panel('train:grad_norm')?.lines[1].color).toBe(panel('train:reward')?.lines[1].color);
  });

  it('groups held-out accuracies (system, solver, controls) and avg@k with pass@k', () => {
    expect(panel('eval:accuracy')?.lines.map((l) => l.label)).toEqual(['solver', 'control/oracle_verifier', 'system']);
    expect(panel('eval:system')?.lines.map((l) => l.label)).toEqual(['avg@8', 'pass@8']);
    expect(panel('pretrain:loss')?.lines.map((l) => l.label)).toEqual(['solver', 'verifier']);
  });

  it('keeps one unit per panel, and titles a lone metric by what it is (issue 18)', () => {
    const mixed = metricSections([
      'perf/tokens_per_s', 'perf/rollout_s', 'perf/update_s', 'eval/fixed/answers', 'eval/fixed/wrong_share',
      'eval/system/accuracy', 'eval/solver/accuracy', 'eval/system/margin', 'corrector1/fix_rate',
    ]);
    const panels = mixed.flatMap((s) => s.panels);
    for (const p of panels) expect(new Set(p.lines.map((l) => describeMetric(l.key).unit)), p.id).toEqual(new Set([p.unit]));
    const unitsOf = (prefix: string) => panels.filter((p) => p.id.startsWith(prefix)).map((p) => [p.unit, p.lines.map((l) => l.label)]);
    expect(unitsOf('train:perf')).toEqual([['seconds', ['rollout_s', 'update_s']], ['tokens/s', ['tokens_per_s']]]);
    expect(unitsOf('eval:fixed')).toEqual([['count', ['answers']], ['share', ['wrong_share']]]);
    const margin = panels.find((p) => p.lines.some((l) => l.key === 'eval/system/margin'))!;
    expect(margin.title).toBe('System − Solver accuracy');
    expect(margin.description).toContain('minus the Solver alone');
    expect(panels.find((p) => p.id === 'train:corrector1')!.title).toBe('Corrector fix rate · corrector1');
    expect(panels.find((p) => p.id === 'eval:accuracy')!.evaluation).toBe(true);
    expect(panels.find((p) => p.id === 'train:corrector1')!.evaluation).toBe(false);
  });
});

describe('metric catalog', () => {
  it('describes keys by name and scope, with unit, range and source', () => {
    expect(describeMetric('eval/system/pass@4')).toMatchObject({ title: 'pass@4', unit: 'share', range: [0, 1], evaluation: true });
    expect(describeMetric('eval/system/pass@4').source).toContain('Chen et al. 2021');
    expect(describeMetric('corrector1/inflation')).toMatchObject({ unit: 'ratio', subject: 'corrector1' });
    expect(describeMetric('corrector1/inflation').source).toContain('Lemma 4.2');
    expect(describeMetric('eval/fixed/verifier/precision').what).toContain('fixed judged set');
    expect(describeMetric('eval/sampled/corrector/break_rate').what).toContain('sampled');
    expect(describeMetric('eval/control/oracle_verifier/accuracy').what).toContain('oracle Verifier');
    expect(describeMetric('verifier2/reward/mean')).toMatchObject({ title: 'Reward (mean)', subject: 'verifier2', evaluation: false });
    expect(describeMetric('made/up_metric').title).toBe('made/up_metric');
  });
});

describe('chart options', () => {
  it('keeps the raw series under the smoothed one, and uses the CSP-safe tooltip', () => {
    const lines = [{ key: 'solver/grad_norm', label: 'solver', color: '#f00', dashed: false }];
    const points = Array.from({ length: MIN_SMOOTHED_POINTS }, (_, i) => [i, i % 2 ? 5 : 1] as [number, number]);
    const data = new Map([['solver/grad_norm', points]]);
    type Option = { series: { id: string; name: string; data: [number, number][] }[]; tooltip: { renderMode: string; formatter(p: unknown): string }; yAxis: { name?: string } };
    const smoothed = lineChartOption({ lines, data, smoothing: 0.5, xAxis: 'step', unit: 'L2 norm' }) as unknown as Option;
    expect(smoothed.tooltip.renderMode).toBe('richText');
    expect(smoothed.yAxis.name).toBe('L2 norm');
    expect(smoothed.series.map((s) => s.id)).toEqual(['raw:solver/grad_norm', 'solver/grad_norm']);
    expect(smoothed.series[0].data).toEqual(points);
    expect(smoothed.series[1].name).toBe('solver (smoothed)');
    const second = (0.5 * 0.5 * 1 + 0.5 * 5) / 0.75;
    expect(smoothed.series[1].data[1][1]).toBeCloseTo(second, 12);
    // The tooltip shows the logged value and the smoothed one side by side, as TensorBoard does.
    const text = smoothed.tooltip.formatter([{ seriesId: 'solver/grad_norm', seriesName: 'solver (smoothed)', dataIndex: 1, value: smoothed.series[1].data[1] }]);
    expect(text).toBe(`step 1\nsolver   value 5 · smoothed ${second.toFixed(3)}`);
    const raw = lineChartOption({ lines, data, smoothing: 0, xAxis: 'wall' }) as { series: unknown[] };
    expect(raw.series).toHaveLength(1);
    // A few evaluation points are never averaged: the last one stays the score the run had.
    const few = lineChartOption({ lines, data: new Map([['solver/grad_norm', points.slice(0, 4)]]), smoothing: 0.6, xAxis: 'step' }) as unknown as Option;
    expect(few.series.map((s) => s.id)).toEqual(['solver/grad_norm']);
    expect(few.tooltip.formatter([{ seriesId: 'solver/grad_norm', seriesName: 'solver', dataIndex: 1, value: [1, 5] }])).toBe('step 1\nsolver   value 5');
  });

  it("says how many seeds a band stands on, warns under three, and ends a share's axis at its range", () => {
    const point = (n: number) => ({ x: 0, step: 0, mean: 0.5, lo: 0, hi: 1, n });
    const band = { group: 'decoupled', runIds: [1, 2], points: [point(2), point(2)], clippedTo: [0, 1] as [number, number] };
    expect(bandNote(band, 'ci95')).toEqual({ warn: true, text: "decoupled: 95% CI (Student t) over n = 2 seeds · too few seeds for a meaningful interval; use 3+ seeds or min–max · clipped to the metric's range [0, 1]" });
    expect(bandNote({ ...band, points: [point(3), point(5)], clippedTo: null }, 'std')).toEqual({ warn: false, text: 'decoupled: ± 1 std over n = 3–5 seeds per step' });
    expect(bandNote(band, 'minmax').warn).toBe(false);
    type Axis = { name: string; min(v: { min: number; max: number }): number | null; max(v: { min: number; max: number }): number | null };
    const option = compareChartOption({ data: { key: 'eval/system/accuracy', xAxis: 'step', lines: [], bands: [band] }, smoothing: 0, grouped: true }) as unknown as { yAxis: Axis };
    expect(option.yAxis.name).toBe('share (0–1)');
    expect(option.yAxis.max({ min: 0.4, max: 0.98 })).toBe(1);
    expect(option.yAxis.max({ min: 0.4, max: 0.7 })).toBeNull();
    expect(option.yAxis.min({ min: 0.01, max: 0.7 })).toBe(0);
  });

  it('lays the timeline out in lanes per agent and activity, opening on the last steps', () => {
    const span = (agent: string, kind: 'segment' | 'update' | 'eval', step: number, start: number, end: number) => ({ kind, agent, worker: 'w', step, policyVersion: step, startedAt: start, endedAt: end, tokens: 0 });
    const spans = [
      span('solver', 'segment', 0, 1000, 2000), span('solver', 'update', 0, 2000, 2500), span('verifier1', 'segment', 0, 2000, 3000),
      span('system', 'eval', 0, 3000, 3500), span('solver', 'segment', 9, 20_000, 21_000),
    ];
    const model = ganttModel(spans);
    expect(model.lanes).toEqual(['solver · rollout', 'solver · update', 'verifier1 · rollout', 'evaluation']);
    expect(model.items[1]).toEqual([1, 1, 1.5, 1]);
    expect(initialWindow(spans, model.origin, 6)).toEqual([19, 20]);
  });
});

describe('new-run form documents', () => {
  it('reads and writes by path, refusing prototype keys', () => {
    const doc: Record<string, unknown> = { rollout: { solver_group: 8 } };
    setPath(doc, 'rollout.select_k', 2);
    setPath(doc, 'policies.solver.model.d_model', 32);
    expect(getPath(doc, 'rollout')).toEqual({ solver_group: 8, select_k: 2 });
    expect(getPath(doc, 'policies.solver.model.d_model')).toBe(32);
    setPath(doc, 'rollout.select_k', undefined);
    expect(getPath(doc, 'rollout')).toEqual({ solver_group: 8 });
    expect(() => setPath(doc, '__proto__.polluted', 1)).toThrow(/invalid config path/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('turns typed text into numbers only when it is one, so the schema judges the rest', () => {
    const int = { kind: 'integer' as const };
    expect(valueFromText(int, '12')).toBe(12);
    expect(valueFromText({ kind: 'number' }, '1e-4')).toBe(1e-4);
    expect(valueFromText(int, 'ten')).toBe('ten');
    expect(valueFromText(int, '0x10')).toBe('0x10');
    expect(valueFromText(int, '2.5')).toBe(2.5);
    expect(valueFromText(int, '')).toBe('');
    expect(valueFromText({ kind: 'string', optional: true }, '  ')).toBeUndefined();
  });

  it('lists changed leaves', () => {
    expect([...changedPaths({ a: { b: 1, c: 2 }, d: 'x' }, { a: { b: 1, c: 3 }, d: 'x', e: true })].sort()).toEqual(['a.c', 'e']);
  });
});

describe('episode tree', () => {
  const turn = (id: number, agent: string, parent: number | null, groupId: number, sampleIndex: number, round: number): EpisodeTurn => ({
    id, runId: 1, episodeId: 1, step: 0, agent, policyId: agent, round, groupId, parentTurnId: parent, sampleIndex,
    prompt: '', text: '', tokenCount: 0, parsed: null, correct: null, formatValid: true, policyVersionMin: 0, policyVersionMax: 0,
    createdAt: 0, reward: null, rewardComponents: null, advantage: null, advantageMode: null, advantageWeight: null, attempt: 1, supersededBy: null, segments: [],
  } as EpisodeDetail['turns'][number]);

  it('nests judgments under solutions and repairs under verdicts, one group header per sampling group', () => {
    const turns = [
      turn(1, 'solver', null, 0, 0, 0), turn(2, 'solver', null, 0, 1, 0),
      turn(3, 'verifier1', 2, 1, 0, 1), turn(4, 'verifier1', 2, 1, 1, 1),
      turn(5, 'corrector1', 4, 2, 0, 1), turn(6, 'verifier2', 5, 3, 0, 2),
    ];
    const rows = episodeTreeRows(turns).map((r) => (r.kind === 'group' ? `${'  '.repeat(r.depth)}[${r.agent} ×${r.count}]` : `${'  '.repeat(r.depth)}${r.turn.id}`));
    expect(rows).toEqual(['[solver ×2]', '1', '2', '  [verifier1 ×2]', '  3', '  4', '    [corrector1 ×1]', '    5', '      [verifier2 ×1]', '      6']);
  });

  it('marks the branch that gave the final answer and why each branch stopped (issue 18)', () => {
    const t = (id: number, agent: string, parent: number | null, parsed: string, round: number, groupId: number) =>
      ({ id, agent, parentTurnId: parent, parsed, round, groupId, sampleIndex: id } as unknown as EpisodeTurn);
    // Solver group of 3; selection kept 2. v10 rejects s1 and c20 repairs it; v11 approves s2.
    const turns = [t(1, 'solver', null, 'b', 0, 0), t(2, 'solver', null, 'a', 0, 0), t(3, 'solver', null, 'a', 0, 0), t(10, 'verifier1', 1, 'reject', 1, 1), t(11, 'verifier1', 2, 'approve', 1, 2), t(20, 'corrector1', 10, 'a', 1, 3)];
    const marks = branchMarks(turns, 1, 'a');
    // One final answer per episode (issue 35; before, s2, s3 and c20 were all marked): the chains
    // in turn order are s1 → v10 → c20 (answer a, decided by c20) and s2 → v11 (answer a, decided by
    // s2); the majority answer a is marked on the decider of the first chain that ends with it.
    expect(Object.fromEntries([...marks].map(([id, m]) => [id, [m.final, m.stop]]))).toEqual({
      1: [false, null],
      2: [false, 'no rejection: every verdict approved'],
      3: [false, 'not judged: selection kept 2 of 3'],
      10: [false, null],
      11: [false, 'approved: the chain ends here'],
      20: [true, 'round limit reached'],
    });
    // With two rounds the repair would go on to verifier2: no round limit yet.
    expect(branchMarks(turns, 2, 'a').get(20)?.stop).toBeNull();
  });

  it('finds the one turn that decided the final answer, by the engine\'s chain and majority rule (issue 35)', () => {
    const t = (id: number, agent: string, parent: number | null, parsed: string | null) => ({ id, agent, parentTurnId: parent, parsed, round: agent === 'solver' ? 0 : 1, groupId: 0, sampleIndex: id } as unknown as EpisodeTurn);
    // Two chains say b (s1 approved; s2 rejected, c21 keeps b), one says a (s3 rejected, c22 → a):
    // b wins, decided first by s1. The unverified s4 (also b) is not a chain.
    const turns = [t(1, 'solver', null, 'b'), t(2, 'solver', null, 'b'), t(3, 'solver', null, 'c'), t(4, 'solver', null, 'b'), t(10, 'verifier1', 1, 'approve'), t(11, 'verifier1', 2, 'reject'), t(12, 'verifier1', 3, 'reject'), t(21, 'corrector1', 11, 'b'), t(22, 'corrector1', 12, 'a')];
    expect(finalTurnId(turns, 'b')).toBe(1);
    expect(finalTurnId(turns, 'a')).toBe(22);
    // A rejected answer whose repair replaced it never decides: c is nobody's final answer.
    expect(finalTurnId(turns, 'c')).toBeNull();
    expect(finalTurnId(turns, null)).toBeNull();
    // No Verifier at all (rounds 0): every Solver turn is its own chain.
    expect(finalTurnId([t(1, 'solver', null, 'x'), t(2, 'solver', null, 'y')], 'y')).toBe(2);
    expect([...branchMarks(turns, 1, 'b').values()].filter((m) => m.final)).toHaveLength(1);
  });

  it('names chain agents and verdicts', () => {
    expect(chainAgents(2)).toEqual(['solver', 'verifier1', 'corrector1', 'verifier2', 'corrector2']);
    expect(describeParsed('verifier1', 'reject')).toBe('rejects');
    expect(describeParsed('verifier2', 'approve')).toBe('approves');
    expect(describeParsed('solver', '0123')).toBe('0123');
    expect(describeParsed('corrector1', null)).toBe('unparsed');
  });
});

describe('trajectory browser URL (issue 35)', () => {
  it('every filter round-trips through the URL; unknown values are dropped', () => {
    const url = { view: 'turns', outcome: 'unsolved', split: 'train', verifier: 'false_reject', corrector: 'broke', from: '3', to: '9', q: 'sort 12', agent: 'verifier2', correct: 'false', rmin: '-0.5', rmax: '1', superseded: '1' } as const;
    const filters = filtersFromUrl(url);
    expect(filters).toEqual({
      mode: 'turns',
      episode: { outcome: 'unsolved', split: 'train', verifier: 'false_reject', corrector: 'broke', stepFrom: 3, stepTo: 9, search: 'sort 12' },
      turn: { agent: 'verifier2', correct: false, minReward: -0.5, maxReward: 1 },
      includeSuperseded: true,
    });
    expect(urlFromFilters(filters)).toEqual(url);
    expect(filtersFromUrl({ corrector: 'mended', from: '-1', correct: 'maybe', agent: 'DROP TABLE', rmin: 'x' })).toEqual(filtersFromUrl({}));
    expect(urlFromFilters(filtersFromUrl({}))).toEqual({});
  });
});

describe('chart axes (issue 35)', () => {
  it('steps tick at whole numbers', () => {
    const option = lineChartOption({ lines: [{ key: 'eval/system/accuracy', label: 'system', color: '#fff', dashed: false }], data: new Map([['eval/system/accuracy', [[0, 0.9], [1, 1]]]]), smoothing: 0, xAxis: 'step' }) as { xAxis: { minInterval?: number } };
    expect(option.xAxis.minInterval).toBe(1);
  });
  it('a share axis ends at 1 where ECharts would round past it, and is left alone otherwise', () => {
    const top = boundedAxisEnd([0, 1], 'max');
    // [0.2, 1]: interval nice(0.8 / 4) = 0.2, ceil(1 / 0.2) · 0.2 = 1: not past, left to ECharts.
    expect(top({ min: 0.2, max: 1 })).toBeNull();
    // [0.85, 0.97]: interval 0.03, rounded top 0.99: within, left alone.
    expect(top({ min: 0.85, max: 0.97 })).toBeNull();
    // [0.87, 0.995]: interval nice(0.03125) = 0.03, rounded top 34 · 0.03 = 1.02: capped at 1.
    expect(top({ min: 0.87, max: 0.995 })).toBe(1);
    // A difference of shares in [−1, 1]: [−0.95, 0.2] has interval 0.3 and a rounded bottom of −1.2: capped at −1.
    expect(boundedAxisEnd([-1, 1], 'min')({ min: -0.95, max: 0.2 })).toBe(-1);
    expect(boundedAxisEnd([-1, 1], 'min')({ min: -0.5, max: 0.2 })).toBeNull();
    // Data outside the range (a metric that breaks its own bounds) is shown as it is.
    expect(top({ min: 0.5, max: 1.3 })).toBeNull();
  });
});

describe('HTTP client wire format', () => {
  it('posts JSON arrays without trailing undefined, unwraps results and rethrows error shapes', async () => {
    Object.assign(globalThis, { window: { location: { origin: 'http://127.0.0.1:7878' }, fetch, WebSocket: class {} } });
    const { createHttpStudioClient, StudioRequestError } = await import('../../src-renderer/src/api/http');
    const calls: { url: string; body: string }[] = [];
    const fake = (async (url: string, init: RequestInit) => {
      calls.push({ url, body: String(init.body) });
      if (url.endsWith('/api/getRun')) {
        return new Response(JSON.stringify({ code: 'not_found', message: 'run 9 does not exist' }), { status: 404 });
      }
      return new Response(JSON.stringify({ result: { items: [], nextCursor: null } }), { status: 200 });
    }) as unknown as typeof fetch;
    const sockets: { url: string; instance: { onmessage?: (m: { data: string }) => void; onopen?: () => void } }[] = [];
    class FakeSocket {
      onmessage?: (m: { data: string }) => void;
      onopen?: () => void;
      onclose?: () => void;
      constructor(url: string) {
        sockets.push({ url, instance: this });
      }
      close() {}
    }
    const client = createHttpStudioClient({ baseUrl: 'http://127.0.0.1:7878', fetchImpl: fake, webSocketImpl: FakeSocket as unknown as typeof WebSocket });
    for (const method of STUDIO_METHODS) expect(typeof client[method]).toBe('function');
    await client.listEvents(3, undefined);
    expect(calls[0]).toEqual({ url: 'http://127.0.0.1:7878/api/listEvents', body: '[3]' });
    const error = await client.getRun(9).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StudioRequestError);
    expect(error).toMatchObject({ code: 'not_found', status: 404, message: 'run 9 does not exist' });

    const received: StudioEvent[] = [];
    client.onEvent((event) => received.push(event));
    expect(sockets[0].url).toBe('ws://127.0.0.1:7878/ws');
    sockets[0].instance.onopen?.();
    sockets[0].instance.onmessage?.({ data: JSON.stringify({ type: 'run-created', runId: 4 }) });
    sockets[0].instance.onmessage?.({ data: 'not json' });
    expect(received).toEqual([{ type: 'run-created', runId: 4 }]);
    client.close();
  });
});

describe('panel colours', () => {
  it('gives every namespace of a panel its own colour', () => {
    const keys = ['eval/system/accuracy', 'eval/solver/accuracy', 'eval/control/oracle_verifier/accuracy', 'eval/control/corrector_always/accuracy', 'eval/sampled/verifier/accuracy'];
    const lines = metricSections(keys)[0].panels[0].lines;
    expect(lines).toHaveLength(5);
    expect(new Set(lines.map((l) => l.color)).size).toBe(5);
  });
});

describe('export dialog form', () => {
  const out = path.join(os.tmpdir(), 'marsrl-renderer-logic-export-x');
  const engineError = (options: Partial<ExportOptions>): string => {
    try {
      validateOptions({ runs: [1], format: 'trajectories', out, ...options } as ExportOptions);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('expected the engine to refuse the options');
  };

  it('picks the container the engine picks: the choice, the extension, the format', () => {
    for (const format of ['trajectories', 'verl', 'sft', 'pairs'] as const) {
      for (const file of [out, `${out}.parquet`, `${out}.PQ`, `${out}.jsonl`, `${out}.json`, `${out}.ndjson`, `${out}.csv`]) {
        const engine = validateOptions({ runs: [1], format, out: file }).container;
        expect(effectiveContainer({ container: null, out: file, format }), `${format} ${file}`).toBe(engine);
      }
      expect(effectiveContainer({ container: 'jsonl', out: `${out}.parquet`, format })).toBe('jsonl');
    }
    expect(withContainerExtension('/data/run.parquet', 'jsonl')).toBe('/data/run.jsonl');
    expect(withContainerExtension('/data/run', 'jsonl')).toBe('/data/run');
    expect(containerReason({ container: null, out: '/d/x', format: 'sft' })).toBe('usual for SFT');
  });

  it('builds the request with explicit correctness (SFT: correct by default) and only the filters set', () => {
    const form = { ...emptyForm(), runs: [3, 4], out: ' /data/x.parquet ', agents: ['verifier1'], stepFrom: '20', stepTo: '20', minReward: '0.5' };
    expect(buildExportRequest(form)).toEqual({
      request: { runs: [3, 4], format: 'trajectories', container: 'parquet', out: '/data/x.parquet', filters: { agents: ['verifier1'], stepFrom: 20, stepTo: 20, correct: 'any', minReward: 0.5 } },
      issues: [],
    });
    const sft = buildExportRequest({ ...emptyForm(), runs: [1], format: 'sft', out: '/d/x', force: true, dedupe: true, split: 'test' }).request;
    expect(sft).toEqual({ runs: [1], format: 'sft', container: 'jsonl', out: '/d/x', force: true, dedupe: true, filters: { split: 'test', correct: true } });
    expect(buildExportRequest({ ...emptyForm(), runs: [1], out: '/d/x', correctness: 'incorrect' }).request?.filters?.correct).toBe(false);
  });

  it("refuses what the engine refuses, in the engine's words and field names", () => {
    const base = { ...emptyForm(), runs: [1], out };
    const issuesOf = (change: Partial<ExportForm>) => buildExportRequest({ ...base, ...change }).issues;
    expect(issuesOf({ stepFrom: '5', stepTo: '2' })).toEqual([{ path: 'filters.stepTo', message: engineError({ filters: { stepFrom: 5, stepTo: 2 } }) }]);
    expect(issuesOf({ minReward: '1', maxReward: '0' })).toEqual([{ path: 'filters.maxReward', message: engineError({ filters: { minReward: 1, maxReward: 0 } }) }]);
    expect(issuesOf({ stepFrom: '1.5' })).toEqual([{ path: 'filters.stepFrom', message: engineError({ filters: { stepFrom: '1.5' as unknown as number } }) }]);
    expect(issuesOf({ minReward: 'high' }).map((i) => i.path)).toEqual(['filters.minReward']);
    expect(issuesOf({ runs: [], out: ' ' }).map((i) => i.path)).toEqual(['runs', 'out']);
  });

  it('places a message at the field it names', () => {
    expect(fieldOfMessage(engineError({ filters: { stepFrom: 5, stepTo: 2 } }))).toBe('filters.stepTo');
    expect(fieldOfMessage('out: the output file /d/x already exists; pass --force (force: true) to replace it, or choose another path')).toBe('out');
    expect(fieldOfMessage('filters.agents: unknown agent "judge"; run 1 have agents solver')).toBe('filters.agents');
    expect(fieldOfMessage('empty result: no turns of run 1 (r) match (no filters); widen the filters or choose other runs')).toBe('filters');
    expect(fieldOfMessage('export cancelled; nothing was written')).toBeNull();
    expect(fieldOfIssuePath('startExport.0.filters.stepFrom')).toBe('filters.stepFrom');
    expect(fieldOfIssuePath('startExport.0')).toBe('');
  });

  it('suggests an output path beside the database, named after the run and format', () => {
    expect(suggestedOutPath(folderOf('/home/me/.marsrl/studio.db'), [{ id: 3, name: 'sort8 decoupled/agentwise' }], 'trajectories', 'parquet')).toBe('/home/me/.marsrl/sort8-decoupled-agentwise-run3-trajectories.parquet');
    expect(suggestedOutPath(folderOf('C:\\Users\\me\\studio.db'), [{ id: 1, name: 'A' }, { id: 2, name: 'B' }, { id: 4, name: 'C' }], 'sft', 'jsonl')).toBe('C:\\Users\\me\\a-run1-and-2-more-sft.jsonl');
    // Two seeds whose names differ only past the cut still get two names (issue 18).
    const long = 'sort8 decoupled/agentwise lr 1e-4 warm start 400 steps rounds 2 seed ';
    expect(suggestedOutPath('/x', [{ id: 7, name: `${long}1` }], 'sft', 'jsonl')).not.toBe(suggestedOutPath('/x', [{ id: 8, name: `${long}2` }], 'sft', 'jsonl'));
    expect(suggestedOutPath('', [], 'pairs', 'jsonl')).toBe('runs-pairs.jsonl');
    expect(joinPath('/', 'x.jsonl')).toBe('/x.jsonl');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(26_419)).toBe('25.8 kB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GB');
  });
});

describe('model export: the policies a run can export (issue #14)', () => {
  it('offers the Hugging Face policies a run trains, saying which train LoRA; never a GPT or a served one', () => {
    const config = {
      policies: {
        solver: { model: { kind: 'hf', path: '/m', lora: { rank: 8 } } },
        verifier: { model: { kind: 'hf', path: '/m' } },
        corrector: { model: { d_model: 64 } },
        judge: { model: { kind: 'hf', path: '/m' }, endpoint: 'vllm' },
      },
    };
    expect(hfPoliciesOf(config)).toEqual([
      { id: 'solver', lora: true },
      { id: 'verifier', lora: false },
    ]);
    expect(hfPoliciesOf({ policies: { solver: { model: { d_model: 64 } } } })).toEqual([]);
    expect(hfPoliciesOf({})).toEqual([]);
  });
});

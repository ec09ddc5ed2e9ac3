import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { toErrorShape } from '#shared/errors';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { openStore, type Store } from '../../src-main/engine/store';
import type { CompareResult, CompareSeriesResult, StudioApi, StudioEvent, StudyDetail, StudySummary } from '#shared/contract';
import { tempDir } from '../helpers/tmp';
import { seedStudy } from './seed-study';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let service: StudioApi;
let runIds: number[];
const events: StudioEvent[] = [];

beforeAll(() => {
  tmp = tempDir();
  const databasePath = path.join(tmp.dir, 'api.db');
  store = openStore(databasePath);
  ({ runIds } = seedStudy(store, { steps: 12 }));
  const hub = new EventHub();
  hub.subscribe((e) => events.push(e));
  // A run controller that finishes every run at once, so startStudy can be followed to the end.
  const runs = {
    async start(request: { preset?: string; config?: Record<string, unknown> }) {
      const runId = store.runs.create({ name: 'fake', preset: request.preset ?? null, config: request.config ?? {}, codeVersion: 't', seed: 1 });
      store.runs.setStatus(runId, 'done');
      return { runId };
    },
    async stop() {},
    async resume() {},
    isActive: () => false,
  };
  service = createStudioService({ store, databasePath, transport: 'direct', runs, hub });
});
afterAll(() => {
  store.close();
  tmp.cleanup();
});

async function rejection(method: string, args: unknown) {
  try {
    await callStudio(service, method, args);
  } catch (error) {
    return toErrorShape(error);
  }
  throw new Error('expected the call to be rejected');
}

describe('compare and study API', () => {
  it('compares runs grouped by config keys with a chosen baseline group', async () => {
    const result = (await callStudio(service, 'compareRuns', [{ runIds, groupBy: ['advantage.mode'], baselineGroup: 'global' }])) as CompareResult;
    expect(result.groups.map((g) => g.label)).toEqual(['agentwise', 'global']);
    expect(result.baselineGroup).toBe('global');
    expect(result.groups[0].stats['spike/corrector1/count']!.mean).toBe(0);
    expect(result.groups[0].delta['spike/corrector1/count']).toBeLessThan(0);
    expect(result.configDiff.keys).toEqual(['advantage.mode', 'reward.scheme', 'seed']);
  });

  it('returns run lines and group bands for one metric on any x-axis', async () => {
    const series = (await callStudio(service, 'compareSeries', [{ runIds, key: 'system/accuracy', xAxis: 'samples', groupBy: ['reward.scheme'], band: 'std' }])) as CompareSeriesResult;
    expect(series.lines).toHaveLength(8);
    // Samples seen per step: 64 + 16 + 16 = 96, so step 0 sits at x = 96.
    expect(series.lines[0].points[0][0]).toBe(96);
    expect(series.bands.map((b) => b.group)).toEqual(['decoupled', 'shared']);
    expect(series.bands[0].points[0]).toMatchObject({ step: 0, x: 96, n: 4 });
  });

  it('lists and details studies', async () => {
    const list = (await callStudio(service, 'listStudies', [])) as StudySummary[];
    expect(list[0]).toMatchObject({ name: 'seeded-2x2', status: 'done', axes: ['reward.scheme', 'advantage.mode'], progress: { total: 8, done: 8 } });
    const detail = (await callStudio(service, 'getStudy', [list[0].id])) as StudyDetail;
    expect(detail.cells.map((c) => c.runId)).toEqual(runIds);
    expect(detail.cells[0].runStatus).toBe('done');
    expect(detail.baselineGroup).toBe('decoupled / agentwise');
  });

  it('starts a study through the run controller and pushes its progress', async () => {
    const { studyId } = (await callStudio(service, 'startStudy', [{ matrix: { name: 'api', preset: 'quick', axes: { 'reward.scheme': ['decoupled', 'shared'] }, seeds: [1, 2] }, concurrency: 2 }])) as { studyId: number };
    await expect.poll(() => store.studies.get(studyId)?.status, { timeout: 10_000 }).toBe('done');
    const progress = events.filter((e) => e.type === 'study-progress' && e.studyId === studyId);
    expect(progress.at(-1)).toMatchObject({ status: 'done', total: 4, done: 4 });
  });

  it('rejects bad payloads naming the field', async () => {
    const badMatrix = await rejection('startStudy', [{ matrix: { name: 'x', axes: { 'advantage.mode': ['agentwise'] }, seeds: [1], concurency: 3 } }]);
    expect(badMatrix.code).toBe('invalid_request');
    expect(badMatrix.issues?.map((i) => i.path)).toContain('matrix.concurency');
    const noRuns = await rejection('compareRuns', [{ runIds: [] }]);
    expect(noRuns.message).toMatch(/compareRuns\.0\.runIds: choose at least one run/);
    const badAxis = await rejection('compareSeries', [{ runIds: [1], key: 'system/accuracy', xAxis: 'tokens' }]);
    expect(badAxis.message).toMatch(/compareSeries\.0\.xAxis/);
    const missing = await rejection('compareRuns', [{ runIds: [1, 999] }]);
    expect(missing).toMatchObject({ code: 'not_found', message: 'run 999 does not exist' });
    const baseline = await rejection('compareRuns', [{ runIds: [1, 2], groupBy: ['reward.scheme'], baselineGroup: 'nope' }]);
    expect(baseline.message).toMatch(/baseline group "nope" is not one of: decoupled/);
    expect((await rejection('getStudy', [404])).code).toBe('not_found');
  });
});

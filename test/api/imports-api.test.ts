import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { toErrorShape } from '#shared/errors';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { openStore, type Store } from '../../src-main/engine/store';
import type { ImportSummary, StudioApi, StudioErrorShape, StudioEvent } from '#shared/contract';
import { tempDir } from '../helpers/tmp';
import { episodeLine, lineFormat, metricLine } from '../imports/importer-line-format';

// The API reads the built-in registry: here it holds the test-only format alone.
vi.mock('../../src-main/engine/imports/registry', async () => {
  const { lineFormat: format } = await import('../imports/importer-line-format');
  const registry = [format()];
  return { IMPORT_FORMAT_REGISTRY: registry, importFormat: (id: string) => registry.find((f) => f.id === id) };
});

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let service: StudioApi;
const hub = new EventHub();
const events: StudioEvent[] = [];

beforeAll(() => {
  tmp = tempDir();
  store = openStore(path.join(tmp.dir, 'x.db'));
  hub.subscribe((e) => events.push(e));
  service = createStudioService({ store, databasePath: store.path, transport: 'direct', hub });
});
afterAll(() => {
  store.close();
  tmp.cleanup();
});

function source(name: string, lines: number): string {
  const dir = path.join(tmp.dir, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'run.lines'), Array.from({ length: lines }, (_, i) => `${metricLine('loss', i, 1 / (i + 1), 100 + i)}\n`).join(''));
  return dir;
}

async function finished(importId: string): Promise<Extract<StudioEvent, { type: 'import-finished' }>> {
  await vi.waitUntil(() => events.some((e) => e.type === 'import-finished' && e.importId === importId), { timeout: 5000 });
  return events.find((e) => e.type === 'import-finished' && e.importId === importId) as Extract<StudioEvent, { type: 'import-finished' }>;
}

describe('imports through the dispatcher', () => {
  it('previews, imports in the background with progress and a summary, and the run reads as imported and read-only', async () => {
    expect(lineFormat().id).toBe('trackio');
    const dir = source('one', 12_000);
    const preview = (await callStudio(service, 'previewImport', [{ path: dir }])) as { format: string; runs: { key: string; metricPoints: number; existingRunId: number | null }[] };
    expect(preview.format).toBe('trackio');
    expect(preview.runs).toEqual([expect.objectContaining({ key: 'run.lines', metricPoints: 12_000, existingRunId: null })]);
    const { importId } = (await callStudio(service, 'startImport', [{ path: dir, tags: ['api'] }])) as { importId: string };
    expect(importId).toMatch(/^import-\d+$/);
    const end = await finished(importId);
    expect(end.status).toBe('done');
    const summary = end.result as ImportSummary;
    expect(summary.runs).toEqual([expect.objectContaining({ key: 'run.lines', created: true, metricPoints: 12_000 })]);
    const progress = events.filter((e) => e.type === 'import-progress' && e.importId === importId) as Extract<StudioEvent, { type: 'import-progress' }>[];
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toMatchObject({ records: 12_000, done: fs.statSync(path.join(dir, 'run.lines')).size });
    const runId = summary.runs[0].runId;
    expect(events).toContainEqual({ type: 'run-created', runId });
    expect(events.findLast((e) => e.type === 'run-updated' && e.runId === runId)).toBeDefined();
    const run = (await callStudio(service, 'getRun', [runId])) as { imported: { format: string; path: string } | null; actions: unknown[]; task: string; status: string };
    expect(run).toMatchObject({ status: 'done', task: 'trackio', actions: [], imported: { format: 'trackio', path: dir } });
    for (const method of ['stopRun', 'resumeRun', 'runAgain']) {
      const refused = (await callStudio(service, method, [runId]).catch(toErrorShape)) as StudioErrorShape;
      expect(refused).toMatchObject({ code: 'conflict', message: expect.stringContaining(`run ${runId} (run) was imported from trackio ${dir} (run run.lines) and is read-only`) });
      expect(refused.message).toContain('re-import the source to add what is new');
    }
    // What stays allowed: rename, notes, tags, delete (which removes the import row).
    await callStudio(service, 'updateRun', [runId, { name: 'renamed', notes: 'n', tags: ['t'] }]);
    expect(store.runs.get(runId)).toMatchObject({ name: 'renamed', notes: 'n', tags: ['t'] });
    await callStudio(service, 'deleteRun', [runId]);
    expect(store.imports.find('trackio', dir, 'run.lines')).toBeNull();
  });

  it('an imported run reads like any run: the runs list, compare against a Studio run, and a trajectories export', async () => {
    const dir = path.join(tmp.dir, 'episodes');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'ep.lines'), [metricLine('loss', 1, 0.5, 10), episodeLine(1, 'q1', true), episodeLine(2, 'q2', false), ''].join('\n'));
    const { importId } = (await callStudio(service, 'startImport', [{ path: dir }])) as { importId: string };
    const runId = ((await finished(importId)).result as ImportSummary).runs[0].runId;
    const studioRun = store.runs.create({ name: 'made here', config: { task: { family: 'sort' }, reward: { scheme: 'decoupled' } }, codeVersion: 't', seed: 1, status: 'done' });
    const list = (await callStudio(service, 'listRuns', [{}])) as { items: { id: number; task: string; imported: unknown }[] };
    expect(list.items.find((r) => r.id === runId)).toMatchObject({ task: 'trackio', imported: { format: 'trackio', sourceKey: 'ep.lines' } });
    expect(list.items.find((r) => r.id === studioRun)).toMatchObject({ task: 'sort', imported: null });
    const compared = (await callStudio(service, 'compareRuns', [{ runIds: [studioRun, runId] }])) as { runs: { runId: number }[] };
    expect(compared.runs.map((r) => r.runId).sort()).toEqual([studioRun, runId].sort());
    const out = path.join(tmp.dir, 'turns.jsonl');
    const exported = (await callStudio(service, 'startExport', [{ runs: [runId], format: 'trajectories', out }])) as { exportId: string };
    await vi.waitUntil(() => events.some((e) => e.type === 'export-finished' && e.exportId === exported.exportId), { timeout: 5000 });
    expect(events.find((e) => e.type === 'export-finished' && e.exportId === exported.exportId)).toMatchObject({ status: 'done' });
    const rows = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { agent: string; text: string });
    expect(rows.map((r) => [r.agent, r.text])).toEqual([['solver', '42'], ['verifier1', 'yes'], ['solver', '41'], ['verifier1', 'no']]);
  });

  it('answers a bad path, an empty folder, an unknown format and an unknown source run at once, naming the field', async () => {
    const missing = await callStudio(service, 'startImport', [{ path: path.join(tmp.dir, 'nowhere') }]).catch(toErrorShape);
    expect(missing).toMatchObject({ code: 'invalid_request', issues: [{ path: 'path', message: expect.stringContaining('nowhere does not exist') }] });
    const empty = path.join(tmp.dir, 'empty');
    fs.mkdirSync(empty);
    expect(await callStudio(service, 'previewImport', [{ path: empty }]).catch(toErrorShape)).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('is an empty folder') });
    const dir = source('two', 3);
    const format = await callStudio(service, 'startImport', [{ path: dir, format: 'mlflow' }]).catch(toErrorShape);
    expect(format).toMatchObject({ code: 'invalid_request', issues: [{ path: 'format', message: expect.stringContaining('mlflow is not a format this build imports') }] });
    const notAFormat = (await callStudio(service, 'startImport', [{ path: dir, format: 'csv' }]).catch(toErrorShape)) as StudioErrorShape;
    expect(notAFormat.issues?.[0].path).toBe('startImport.0.format');
    const run = await callStudio(service, 'startImport', [{ path: dir, runs: ['other.lines'] }]).catch(toErrorShape);
    expect(run).toMatchObject({ code: 'invalid_request', issues: [{ path: 'runs', message: expect.stringContaining('has no run other.lines: its runs are run.lines') }] });
    expect(store.runs.list().items.filter((r) => r.imported?.path === dir)).toEqual([]);
  });

  it('cancels a running import: its whole batches stay, and a re-import adds the rest', async () => {
    const dir = source('three', 30_000);
    const { importId } = (await callStudio(service, 'startImport', [{ path: dir }])) as { importId: string };
    await vi.waitUntil(() => events.some((e) => e.type === 'import-progress' && e.importId === importId), { timeout: 5000, interval: 1 });
    await callStudio(service, 'cancelImport', [importId]);
    const end = await finished(importId);
    expect(end.status).toBe('cancelled');
    const runId = (end.result as ImportSummary).runs[0].runId;
    const stored = store.metrics.series(runId, 'loss', -Infinity, 100_000).items.length;
    expect(stored % 5000).toBe(0);
    expect(stored).toBeLessThan(30_000);
    expect(await callStudio(service, 'cancelImport', [importId]).catch(toErrorShape)).toMatchObject({ code: 'not_found' });
    const again = (await callStudio(service, 'startImport', [{ path: dir }])) as { importId: string };
    const rest = (await finished(again.importId)).result as ImportSummary;
    expect(rest.runs[0]).toMatchObject({ runId, created: false, metricPoints: 30_000 - stored });
    expect(store.metrics.series(runId, 'loss', -Infinity, 100_000).items.length).toBe(30_000);
  });
});

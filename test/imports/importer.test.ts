import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chooseFormat, previewImport, runImport } from '../../src-main/engine/imports/importer';
import { openStore, type Store } from '../../src-main/engine/store';
import { tempDir } from '../helpers/tmp';
import { episodeLine, lineFormat, metricLine } from './importer-line-format';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let source: string;
beforeEach(() => {
  tmp = tempDir();
  store = openStore(path.join(tmp.dir, 'studio.db'));
  source = path.join(tmp.dir, 'src');
  fs.mkdirSync(source);
});
afterEach(() => {
  store.close();
  tmp.cleanup();
});

const write = (file: string, lines: string[]) => fs.appendFileSync(path.join(source, file), lines.map((l) => `${l}\n`).join(''));
const metricsOf = (runId: number, key: string) => store.metrics.series(runId, key).items;
const count = (table: string, runId: number) => (store.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE run_id = ?`).get(runId) as { n: number }).n;

/** The digest as digest.ts documents it, computed here from the files directly. */
function expectedDigest(root: string): string {
  const hash = crypto.createHash('sha256');
  for (const rel of fs.readdirSync(root, { recursive: true }).map(String).filter((f) => fs.statSync(path.join(root, f)).isFile()).sort()) {
    const bytes = fs.readFileSync(path.join(root, rel));
    hash.update(`${rel.split(path.sep).join('/')}\0${bytes.length}\0`).update(bytes);
  }
  return hash.digest('hex');
}

function sampleRun(): void {
  write('alpha.lines', [metricLine('loss', 1, 0.9, 1000), metricLine('loss', 2, 0.7, 1010), metricLine('acc', 2, 0.25, 1010), episodeLine(1, 'six times seven', true), episodeLine(2, 'six times seven', false), JSON.stringify({ c: 2, dir: '/ckpt/2' })]);
}

describe('importer with a test-only format', () => {
  it('previews a source without writing anything, then knows the run it was imported as', async () => {
    sampleRun();
    const registry = [lineFormat()];
    const preview = await previewImport(store, { path: source }, { registry });
    expect(preview).toMatchObject({ path: source, format: 'trackio', files: 1, runs: [{ key: 'alpha.lines', name: 'alpha', metricPoints: 3, episodes: 2, existingRunId: null, firstStep: 1, lastStep: 2 }] });
    expect(preview.bytes).toBe(fs.statSync(path.join(source, 'alpha.lines')).size);
    expect(store.runs.list().items).toEqual([]);
    const summary = await runImport(store, { path: source }, { registry });
    expect((await previewImport(store, { path: source }, { registry })).runs[0].existingRunId).toBe(summary.runs[0].runId);
  });

  it('imports metrics, episodes, turns, rewards and checkpoints as Studio rows of a read-only done run', async () => {
    sampleRun();
    const summary = await runImport(store, { path: source, tags: ['mine'] }, { registry: [lineFormat()] });
    expect(summary.cancelled).toBe(false);
    expect(summary.runs).toEqual([{ key: 'alpha.lines', runId: expect.any(Number), created: true, metricPoints: 3, turns: 4, episodes: 2 }]);
    const run = store.runs.get(summary.runs[0].runId)!;
    expect(run).toMatchObject({ name: 'alpha', status: 'done', tags: ['from-test', 'mine'], config: { source: { format: 'trackio', path: source, run: 'alpha.lines', config: { lr: 0.5 } } } });
    expect(run.imported).toMatchObject({ format: 'trackio', path: source, sourceKey: 'alpha.lines', digest: expectedDigest(source) });
    // The run starts at its first wall time; points are seconds after it.
    expect(run.startedAt).toBe(1_000_000);
    expect(metricsOf(run.id, 'loss')).toEqual([{ step: 1, wallTime: 0, value: 0.9 }, { step: 2, wallTime: 10, value: 0.7 }]);
    expect(count('episodes', run.id)).toBe(2);
    expect(count('problems', run.id)).toBe(1); // the same question at two steps is one problem
    expect(count('rewards', run.id)).toBe(2);
    const turns = store.db.prepare('SELECT agent, parsed, correct, parent_turn_id AS parent, id FROM turns WHERE run_id = ? ORDER BY id').all(run.id) as { agent: string; parsed: string | null; correct: number | null; parent: number | null; id: number }[];
    expect(turns.map((t) => [t.agent, t.parsed, t.correct])).toEqual([['solver', '42', 1], ['verifier1', 'approve', null], ['solver', '41', 0], ['verifier1', 'reject', null]]);
    expect(turns[1].parent).toBe(turns[0].id);
    expect(store.events.checkpoints(run.id).map((c) => [c.step, c.path])).toEqual([[2, '/ckpt/2']]);
  });

  it('a re-import adds nothing; a grown source adds only its new records', async () => {
    sampleRun();
    const format = lineFormat();
    const first = await runImport(store, { path: source }, { registry: [format] });
    const runId = first.runs[0].runId;
    const again = await runImport(store, { path: source }, { registry: [format] });
    expect(again.runs).toEqual([{ key: 'alpha.lines', runId, created: false, metricPoints: 0, turns: 0, episodes: 0 }]);
    expect([count('turns', runId), count('metrics', runId), count('checkpoints', runId)]).toEqual([4, 3, 1]);
    const digest = store.runs.get(runId)!.imported!.digest;
    write('alpha.lines', [metricLine('loss', 3, 0.5, 1020), episodeLine(3, 'six times seven', true)]);
    const grown = await runImport(store, { path: source }, { registry: [format] });
    expect(grown.runs[0]).toMatchObject({ runId, created: false, metricPoints: 1, turns: 2, episodes: 1 });
    expect([count('turns', runId), count('metrics', runId), count('problems', runId)]).toEqual([6, 4, 1]);
    expect(metricsOf(runId, 'loss').at(-1)).toEqual({ step: 3, wallTime: 20, value: 0.5 });
    expect(store.runs.get(runId)!.imported!.digest).not.toBe(digest);
    expect(store.runs.get(runId)!.imported!.digest).toBe(expectedDigest(source));
  });

  it('cancel keeps the whole batches stored; the next import continues after them', async () => {
    write('alpha.lines', Array.from({ length: 10 }, (_, i) => metricLine('loss', i, i / 10)));
    const controller = new AbortController();
    const seen: number[] = [];
    const summary = await runImport(store, { path: source }, {
      registry: [lineFormat()],
      batchSize: 3,
      signal: controller.signal,
      onProgress: (p) => {
        seen.push(p.records);
        if (p.records >= 6) controller.abort();
      },
    });
    expect(summary.cancelled).toBe(true);
    expect(seen).toEqual([3, 6]);
    const runId = summary.runs[0].runId;
    expect(metricsOf(runId, 'loss').map((p) => p.step)).toEqual([0, 1, 2, 3, 4, 5]);
    const rest = await runImport(store, { path: source }, { registry: [lineFormat()], batchSize: 3 });
    expect(rest.runs[0]).toMatchObject({ runId, created: false, metricPoints: 4 });
    expect(metricsOf(runId, 'loss').map((p) => p.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('a bad record is a warning event naming its file and line; the rest is imported', async () => {
    write('alpha.lines', [metricLine('loss', 1, 0.9), '{"oops": tru', JSON.stringify({ x: 1 }), metricLine('loss', 2, 0.8)]);
    const summary = await runImport(store, { path: source }, { registry: [lineFormat()] });
    const runId = summary.runs[0].runId;
    expect(metricsOf(runId, 'loss').map((p) => p.value)).toEqual([0.9, 0.8]);
    expect(summary.issues).toEqual([
      { file: 'alpha.lines', position: 'line 2', message: 'not JSON' },
      { file: 'alpha.lines', position: 'line 3', message: 'neither a metric, an episode nor a checkpoint' },
    ]);
    const events = store.events.events(runId, 0, 100).items.filter((e) => e.kind === 'import_issue');
    expect(events.map((e) => [e.level, e.message])).toEqual([
      ['warning', 'alpha.lines, line 2: not JSON'],
      ['warning', 'alpha.lines, line 3: neither a metric, an episode nor a checkpoint'],
    ]);
    // Without wall times the points sit at 0 s rather than at an invented time.
    expect(metricsOf(runId, 'loss').map((p) => p.wallTime)).toEqual([0, 0]);
  });

  it('imports chosen runs under the given name, and a deleted run is created again by the next import', async () => {
    sampleRun();
    write('beta.lines', [metricLine('loss', 1, 0.1)]);
    const registry = [lineFormat()];
    const one = await runImport(store, { path: source, runs: ['beta.lines'], name: 'B' }, { registry });
    expect(one.runs.map((r) => [r.key, store.runs.get(r.runId)!.name])).toEqual([['beta.lines', 'B']]);
    store.runs.delete(one.runs[0].runId);
    const again = await runImport(store, { path: source, name: 'set' }, { registry });
    expect(again.runs.map((r) => [r.key, r.created, store.runs.get(r.runId)!.name, r.metricPoints])).toEqual([
      ['alpha.lines', true, 'set alpha', 3],
      ['beta.lines', true, 'set beta', 1],
    ]);
    await expect(runImport(store, { path: source, runs: ['gamma.lines'] }, { registry })).rejects.toMatchObject({ field: 'runs', message: expect.stringContaining('has no run gamma.lines: its runs are alpha.lines, beta.lines') });
  });

  it('refuses a missing path, an empty folder and a source no format recognizes, naming the path and the formats', async () => {
    const registry = [lineFormat()];
    await expect(previewImport(store, { path: path.join(tmp.dir, 'nope') }, { registry })).rejects.toMatchObject({ field: 'path', message: expect.stringMatching(/nope does not exist/) });
    await expect(previewImport(store, { path: source }, { registry })).rejects.toThrow(`${source} is an empty folder: there is nothing to import`);
    write('notes.txt', ['hello']);
    await expect(previewImport(store, { path: source }, { registry })).rejects.toThrow(`${source} is not a source MarsRL Studio recognizes: the formats it reads are trackio (test lines)`);
    expect(() => chooseFormat(source, 'mlflow', registry)).toThrow(/mlflow is not a format this build imports/);
    expect(() => chooseFormat(source, undefined, [])).toThrow(/this build has no import formats/);
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src-main/engine/store';
import { marsrlInProcess } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';
import { episodeLine, metricLine } from '../imports/importer-line-format';

// `marsrl import` reads the built-in registry: here it holds the test-only format alone.
vi.mock('../../src-main/engine/imports/registry', async () => {
  const { lineFormat } = await import('../imports/importer-line-format');
  const registry = [lineFormat()];
  return { IMPORT_FORMAT_REGISTRY: registry, importFormat: (id: string) => registry.find((f) => f.id === id) };
});

let tmp: ReturnType<typeof tempDir>;
let db: string;
let source: string;
beforeAll(() => {
  tmp = tempDir();
  db = path.join(tmp.dir, 'studio.db');
  source = path.join(tmp.dir, 'src');
  fs.mkdirSync(source);
  const metrics = Array.from({ length: 6 }, (_, i) => metricLine(`k${i % 6}`, i + 1, i, 100 + i));
  fs.writeFileSync(path.join(source, 'alpha.lines'), [...metrics, '{broken', episodeLine(3, 'q', true), ''].join('\n'));
  fs.writeFileSync(path.join(source, 'beta.lines'), `${metricLine('loss', 1, 0.5)}\n`);
});
afterAll(() => tmp.cleanup());

const marsrl = (...args: string[]) => marsrlInProcess(db, args);

describe('marsrl import', () => {
  it('--dry-run prints the preview with issues and writes nothing', async () => {
    const { code, out } = await marsrl('import', source, '--dry-run');
    expect(code).toBe(0);
    expect(out).toContain(`${source}: trackio, 2 files,`);
    expect(out).toContain('alpha.lines → "alpha"');
    expect(out).toContain('steps 1–6 (6 steps); metrics k0, k1, k2, k3, … (6 keys), 6 metric points');
    expect(out).toContain('2 generations, 1 episode; agents solver, verifier1');
    expect(out).toContain('alpha.lines, line 7: not JSON');
    expect(out).not.toContain('already imported');
    const store = openStore(db);
    expect(store.runs.list().items).toEqual([]);
    store.close();
  });

  it('without a terminal it needs --yes, and says so', async () => {
    const { code, err } = await marsrl('import', source);
    expect(code).toBe(2);
    expect(err).toContain('there is no terminal to ask on: pass --yes');
  });

  it('refuses bad flags and paths with clear errors naming them', async () => {
    expect((await marsrl('import', source, '--format', 'csv', '--yes')).err).toContain('--format must be one of marsrl, verl, drmas, tensorboard, trackio, mlflow (got "csv")');
    expect((await marsrl('import', path.join(tmp.dir, 'nope'), '--yes')).err).toMatch(/marsrl import: .*nope does not exist/);
    const wrong = await marsrl('import', source, '--yes', '--format', 'mlflow');
    expect(wrong).toMatchObject({ code: 2, err: expect.stringContaining('mlflow is not a format this build imports: the formats it reads are trackio (test lines) (--format)') });
    expect((await marsrl('import', source, '--yes', '--run', 'gamma.lines')).err).toContain('has no run gamma.lines: its runs are alpha.lines, beta.lines (--run)');
    expect((await marsrl('import', source, '--yes', '--tag', ' ')).err).toContain('--tag cannot be empty');
  });

  it('imports with --yes, prints the summary, and a second import adds only what is new', async () => {
    const first = await marsrl('import', source, '--yes', '--run', 'alpha.lines', '--name', 'A', '--tag', 'cli');
    expect(first.code).toBe(0);
    const runId = Number(/run (\d+) \(alpha\.lines, new\)/.exec(first.out)?.[1]);
    expect(first.out).toContain(`run ${runId} (alpha.lines, new): 6 metric points, 2 turns, 1 episode`);
    expect(first.out).toContain('1 record skipped');
    expect(first.err).toContain(`Creating run ${runId}`);
    const again = await marsrl('import', source, '--yes', '--run', 'alpha.lines', '--json');
    expect(JSON.parse(again.out).runs).toEqual([{ key: 'alpha.lines', runId, created: false, metricPoints: 0, turns: 0, episodes: 0 }]);
    expect((await marsrl('import', source, '--dry-run')).out).toContain(`already imported as run ${runId}: adds only what is new`);

    const show = await marsrl('show', String(runId));
    expect(show.out).toContain(`imported   from trackio ${source} (source run alpha.lines); read-only`);
    expect(show.out).toMatch(/digest {5}sha256 [0-9a-f]{64}/);
    expect(show.out).toContain('Configuration (as the source wrote it):');
    expect(show.out).toContain('alpha.lines, line 7: not JSON');

    // Read-only: stop, resume and run --like refuse, naming the run and its source.
    for (const args of [['stop', String(runId)], ['resume', String(runId)], ['run', '--like', String(runId)]]) {
      const refused = await marsrl(...args);
      expect(refused.code).toBe(1);
      expect(refused.err).toContain(`run ${runId} (A) was imported from trackio ${source} (run alpha.lines) and is read-only`);
      expect(refused.err).toContain('re-import the source to add what is new');
    }
  });
});

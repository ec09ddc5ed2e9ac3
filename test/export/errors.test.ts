/**
 * Bad input and interrupted exports: each fails with an error that names the problem, and leaves
 * the output folder exactly as it was (no data file, no card, no temporary file).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ExportError, runExport, type ExportOptions } from '../../src-main/engine/export';
import { duck, source } from './duck';
import { rejection } from '../helpers/errors';
import { exportFixture } from '../helpers/seed';

const fx = exportFixture('marsrl-export-errors-');
let outDir: string;

let caseNo = 0;
beforeEach(() => {
  outDir = path.join(fx.dir, `case-${++caseNo}`);
  fs.mkdirSync(outDir);
});

const listing = (dir = outDir) => fs.readdirSync(dir).sort();

async function expectExportError(options: ExportOptions, code: string, field: string | null, message: RegExp, signal?: AbortSignal): Promise<ExportError> {
  const before = listing();
  const caught = await rejection(() => runExport(fx.store, options, { signal }));
  expect(caught).toBeInstanceOf(ExportError);
  const error = caught as ExportError;
  expect(error.code).toBe(code);
  expect(error.field).toBe(field);
  expect(error.message).toMatch(message);
  expect(listing()).toEqual(before);
  return error;
}

const out = (name = 'data.jsonl') => path.join(outDir, name);

describe('bad input', () => {
  it('an unknown run names it and says how to list runs', async () => {
    await expectExportError({ runs: ['alpha', 'nope'], format: 'trajectories', out: out() }, 'unknown_run', 'runs', /unknown run "nope".*marsrl runs/);
    await expectExportError({ runs: [999], format: 'trajectories', out: out() }, 'unknown_run', 'runs', /unknown run 999/);
  });

  it('an unknown agent lists the agents those runs have', async () => {
    const error = await expectExportError(
      { runs: ['alpha'], format: 'sft', out: out(), filters: { agents: ['solver', 'critic'] } },
      'unknown_agent',
      'filters.agents',
      /unknown agent "critic"/,
    );
    expect(error.message).toContain('have agents corrector1, solver, verifier1, verifier2');
    expect(error.message).not.toMatch(/"solver"/);
  });

  it('an empty result is an error, not an empty file', async () => {
    await expectExportError({ runs: ['empty'], format: 'trajectories', out: out() }, 'empty_result', 'filters', /empty result: no turns of run \d+ \(empty\)/);
    await expectExportError({ runs: ['alpha'], format: 'sft', out: out(), filters: { stepFrom: 100 } }, 'empty_result', 'filters', /steps 100\.\.last.*correct=true \(the SFT default/);
    await expectExportError({ runs: ['beta'], format: 'verl', out: out(), filters: { split: 'test', stepFrom: 1, stepTo: 1 } }, 'empty_result', 'filters', /no problems/);
    // Pairs can read turns and still find nothing to pair: every group ties.
    await expectExportError({ runs: ['alpha'], format: 'pairs', out: out(), filters: { agents: ['verifier2'], stepTo: 0 } }, 'empty_result', 'filters', /no preference pairs: .* where every reward ties/);
  });

  it('an existing output (or card) is refused without force, and replaced with it', async () => {
    fs.writeFileSync(out(), 'keep me');
    await expectExportError({ runs: ['alpha'], format: 'trajectories', container: 'jsonl', out: out() }, 'output_exists', 'out', /already exists; pass --force/);
    expect(fs.readFileSync(out(), 'utf8')).toBe('keep me');
    const result = await runExport(fx.store, { runs: ['alpha'], format: 'trajectories', container: 'jsonl', out: out(), force: true });
    expect(listing()).toEqual(['data.jsonl', 'data.jsonl.card.md']);
    expect((await duck(`SELECT COUNT(*) AS n FROM ${source(out(), 'jsonl')}`))[0].n).toBe(result.rows);

    fs.writeFileSync(out('other.parquet.card.md'), 'a card from before');
    await expectExportError({ runs: ['alpha'], format: 'verl', out: out('other.parquet') }, 'output_exists', 'out', /dataset card .*other\.parquet\.card\.md already exists/);
  });

  it('an unwritable output path says why', async () => {
    const file = out('a-file');
    fs.writeFileSync(file, '');
    await expectExportError({ runs: ['alpha'], format: 'trajectories', out: path.join(file, 'x.parquet') }, 'output_unwritable', 'out', /is not a folder/);
    await expectExportError({ runs: ['alpha'], format: 'trajectories', out: path.join(outDir, 'missing', 'x.parquet') }, 'output_unwritable', 'out', /folder .*missing does not exist/);
    fs.mkdirSync(out('a-dir'));
    await expectExportError({ runs: ['alpha'], format: 'trajectories', out: out('a-dir') }, 'output_unwritable', 'out', /a-dir is a folder/);
  });

  it('the database itself is never an output, even with force', async () => {
    const size = fs.statSync(fx.dbPath).size;
    let caught: unknown;
    await runExport(fx.store, { runs: ['alpha'], format: 'trajectories', out: fx.dbPath, force: true }).catch((e: unknown) => (caught = e));
    expect(caught).toMatchObject({ code: 'output_unwritable', field: 'out', message: expect.stringMatching(/is the experiment database/) });
    expect(fs.statSync(fx.dbPath).size).toBe(size);
    expect(fx.store.runs.find('alpha')).not.toBeNull();
  });

  it('an unknown format or container lists the known ones', async () => {
    await expectExportError({ runs: ['alpha'], format: 'csv' as never, out: out() }, 'unknown_format', 'format', /unknown export format "csv"; use one of trajectories, verl, sft, pairs/);
    await expectExportError({ runs: ['alpha'], format: 'sft', container: 'xlsx' as never, out: out() }, 'unknown_container', 'container', /unknown container "xlsx"; use one of jsonl, parquet/);
  });

  it('malformed filters name the field and the fix', async () => {
    await expectExportError({ runs: ['alpha'], format: 'sft', out: out(), filters: { stepFrom: 5, stepTo: 2 } }, 'invalid_option', 'filters.stepTo', /stepFrom 5 is after stepTo 2/);
    await expectExportError({ runs: ['alpha'], format: 'sft', out: out(), filters: { minReward: Number.NaN } }, 'invalid_option', 'filters.minReward', /finite number/);
    await expectExportError({ runs: ['alpha'], format: 'sft', out: out(), filters: { split: 'dev' as never } }, 'invalid_option', 'filters.split', /train, test/);
    await expectExportError({ runs: [], format: 'sft', out: out() }, 'invalid_option', 'runs', /at least one run/);
  });
});

describe('interrupted exports', () => {
  it.each(['jsonl', 'parquet'] as const)('an abort mid-way (%s) removes what was written', async (container) => {
    const controller = new AbortController();
    const seen: number[] = [];
    const before = listing();
    const promise = runExport(
      fx.store,
      { runs: ['big'], format: 'trajectories', container, out: out(`big.${container}`), rowGroupRows: 500 },
      {
        signal: controller.signal,
        onProgress(done, total) {
          seen.push(done);
          expect(total).toBe(3500);
          // Abort once some pages (and, for Parquet, row groups) are already in the temporary file.
          if (done >= 2000) controller.abort();
        },
      },
    );
    await expect(promise).rejects.toMatchObject({ code: 'aborted', message: expect.stringMatching(/cancelled; nothing was written/) });
    expect(seen.some((d) => d >= 2000 && d < 3500)).toBe(true);
    expect(listing()).toEqual(before);
  });

  it('an already aborted signal writes nothing', async () => {
    const controller = new AbortController();
    controller.abort();
    await expectExportError({ runs: ['alpha'], format: 'pairs', out: out() }, 'aborted', null, /cancelled/, controller.signal);
  });

  it('reports progress per page up to the total', async () => {
    const seen: [number, number][] = [];
    const result = await runExport(fx.store, { runs: ['big', 'alpha'], format: 'sft', out: out(), filters: { correct: 'any' } }, { onProgress: (d, t) => seen.push([d, t]) });
    const total = seen[0][1];
    expect(total).toBe(result.sourceRows);
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.every(([d, t], i) => t === total && (i === 0 || d >= seen[i - 1][0]))).toBe(true);
    expect(seen[seen.length - 1][0]).toBe(total);
  });

  it('temporary files of a killed export are swept by the next export to the same path', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const stale = [out('.data.jsonl.' + dead + '-0badf00d.tmp'), out('.data.jsonl.card.md.' + dead + '-0badf00d.tmp')];
    const live = out('.data.jsonl.' + process.ppid + '-0badf00d.tmp');
    for (const file of [...stale, live]) fs.writeFileSync(file, 'half');
    await runExport(fx.store, { runs: ['alpha'], format: 'sft', out: out() });
    expect(listing()).toEqual([path.basename(live), 'data.jsonl', 'data.jsonl.card.md'].sort());
  });

  it('a file created at the target during the export is not overwritten', async () => {
    const target = out('race.jsonl');
    const promise = runExport(fx.store, { runs: ['big'], format: 'trajectories', container: 'jsonl', out: target }, {
      onProgress(done) {
        if (done >= 1000 && !fs.existsSync(target)) fs.writeFileSync(target, 'written by someone else');
      },
    });
    await expect(promise).rejects.toMatchObject({ code: 'output_exists' });
    expect(fs.readFileSync(target, 'utf8')).toBe('written by someone else');
    expect(listing()).toEqual(['race.jsonl']);
  });
});

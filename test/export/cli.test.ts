/**
 * `marsrl export` as a user runs it: a separate process through the bin entry for the exports; the
 * refusals through the CLI's main in this process (the same code and output, no process start-up).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { marsrl, marsrlMain } from '../helpers/cli';
import { tempFolder } from '../helpers/tmp';
import { duck, source } from './duck';
import { createFixture } from '../helpers/seed';

const tmp = tempFolder('marsrl-export-cli-');
let dbPath: string;
let alphaTurns: number;
let alphaBetaTurns: number;

beforeAll(() => {
  const fx = createFixture(tmp.dir);
  dbPath = fx.dbPath;
  const count = (ids: number[]) => (fx.store.db.prepare(`SELECT COUNT(*) AS n FROM turns WHERE run_id IN (${ids.join(',')})`).get() as { n: number }).n;
  alphaTurns = count([fx.runs.alpha]);
  alphaBetaTurns = count([fx.runs.alpha, fx.runs.beta]);
  fx.store.close();
});

const files = () => fs.readdirSync(tmp.dir).filter((f) => !f.startsWith('export.db')).sort();

describe('marsrl export', () => {
  it('exports trajectories to Parquet and prints the result as JSON', () => {
    const out = path.join(tmp.dir, 'traj.parquet');
    const run = marsrl(['export', 'alpha', 'beta', '--format', 'trajectories', '--out', out, '--db', dbPath, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ format: 'trajectories', container: 'parquet', rows: alphaBetaTurns, out, card: `${out}.card.md` });
    return duck(`SELECT COUNT(*) AS n, COUNT(DISTINCT run_id) AS runs FROM ${source(out, 'parquet')}`).then(([row]) => {
      expect(row).toEqual({ n: alphaBetaTurns, runs: 2 });
    });
  });

  it('prints a one-line summary when stderr is not a terminal, with filters from flags', async () => {
    const out = path.join(tmp.dir, 'verifier.jsonl');
    const run = marsrl(['export', 'alpha', '--format', 'sft', '--out', out, '--agent', 'verifier1,verifier2', '--correct', 'any', '--steps', '1..3', '--db', dbPath]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(run.stdout).toMatch(/^Exported \d+ sft rows \(jsonl, [\d.]+ [KM]?B\) from \d+ turns of run \d+ \(alpha\) in (\d+(\.\d+)?s|\d+m\d\ds) to .*verifier\.jsonl; card: .*verifier\.jsonl\.card\.md/);
    const rows = await duck(`SELECT DISTINCT agent, min(step) AS lo, max(step) AS hi FROM ${source(out, 'jsonl')} GROUP BY agent ORDER BY agent`);
    expect(rows).toEqual([
      { agent: 'verifier1', lo: 1, hi: 3 },
      { agent: 'verifier2', lo: 1, hi: 3 },
    ]);
    expect(alphaTurns).toBeGreaterThan(0);
  });

  it('fails on an unknown run (exit 1) and an unknown format (exit 2), leaving no file', async () => {
    const before = files();
    const unknownRun = await marsrlMain(['export', 'alpha', 'ghost', '--format', 'sft', '--out', path.join(tmp.dir, 'x.jsonl'), '--db', dbPath]);
    expect(unknownRun.code).toBe(1);
    expect(unknownRun.stderr).toMatch(/marsrl export: runs: unknown run "ghost".*marsrl runs/);
    const unknownFormat = await marsrlMain(['export', 'alpha', '--format', 'csv', '--out', path.join(tmp.dir, 'x.csv'), '--db', dbPath]);
    expect(unknownFormat.code).toBe(2);
    expect(unknownFormat.stderr).toMatch(/unknown export format "csv"; use one of trajectories, verl, sft, pairs/);
    expect(files()).toEqual(before);
  });

  it('refuses an existing output without --force (exit 1)', async () => {
    const out = path.join(tmp.dir, 'taken.jsonl');
    fs.writeFileSync(out, 'old');
    const run = await marsrlMain(['export', 'alpha', '--format', 'pairs', '--out', out, '--db', dbPath]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/taken\.jsonl already exists; pass --force/);
    expect(fs.readFileSync(out, 'utf8')).toBe('old');
    const usage = await marsrlMain(['export', 'alpha', '--out', out, '--db', dbPath]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/export needs --format/);
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src-main/engine/store';
import { marsrl, marsrlMain } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';
import { seedStudy } from './seed-study';

let tmp: ReturnType<typeof tempDir>;
let db: string;
let runIds: number[];

beforeAll(() => {
  tmp = tempDir();
  db = path.join(tmp.dir, 'cli.db');
  const store = openStore(db);
  ({ runIds } = seedStudy(store));
  store.close();
});
afterAll(() => tmp.cleanup());

// A dry run, the list, a report and a comparison run as child processes through the bin; the other
// calls (a --like dry run, JSON of a study's comparison, the refusals of bad files, flags and names)
// run through the CLI's `main` in this process (the same code, output and exit code, without a Node
// start-up each).
describe('marsrl study / compare', () => {
  it('dry-runs the shipped matrix without touching the database', () => {
    const r = marsrl(['study', '--matrix', 'resources/studies/quick-2x2.yaml', '--dry-run', '--json', '--db', path.join(tmp.dir, 'untouched.db')]);
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.stdout) as { cells: { label: string }[] };
    expect(parsed.cells).toHaveLength(8);
    expect(fs.existsSync(path.join(tmp.dir, 'untouched.db'))).toBe(false);
  });

  it('--like turns runs into a study over seeds (issue 35: the study that makes a one-seed comparison evidence)', async () => {
    const [a, b] = [runIds[0], runIds[runIds.length - 1]];
    const r = await marsrlMain(['study', '--like', `${a},${b}`, '--seeds', '2', '--dry-run', '--json', '--db', db]);
    expect(r.code, r.stderr).toBe(0);
    const parsed = JSON.parse(r.stdout) as { name: string; cells: { seed: number }[] };
    expect(parsed.name).toBe(`like-${a}-${b}`);
    expect(parsed.cells.map((c) => c.seed)).toEqual([1, 2, 1, 2]);
    expect((await marsrlMain(['study', '--like', String(a), '--db', db])).stderr).toMatch(/--like: give at least two runs \(the sides to compare\)/);
    expect((await marsrlMain(['study', '--matrix', 'x.yaml', '--seeds', '2', '--db', db])).stderr).toMatch(/--seeds goes with --like/);
  });

  it('rejects a bad matrix file naming the field, and bad flags', async () => {
    const bad = path.join(tmp.dir, 'bad.yaml');
    fs.writeFileSync(bad, 'name: x\npreset: quick\naxes: { advantage.mode: [agentwise, sideways] }\nseeds: [1]\nconcurency: 2\n');
    const r = await marsrlMain(['study', '--matrix', bad, '--db', path.join(tmp.dir, 'bad.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/concurency: unknown field; a matrix has .*concurrency/);
    expect((await marsrlMain(['study', '--db', db])).stderr).toMatch(/exactly one of --matrix FILE, --like RUNS, --resume STUDY, --report STUDY or --list/);
    expect((await marsrlMain(['study', '--list', '--concurrency', '0', '--db', db])).stderr).toMatch(/--concurrency must be an integer from 1 to 32/);
    expect((await marsrlMain(['study', '--matrix', path.join(tmp.dir, 'missing.yaml')])).stderr).toMatch(/no such file/);
  });

  it('lists studies and regenerates a report', async () => {
    const list = marsrl(['study', '--list', '--db', db]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/1\s+seeded-2x2\s+done\s+8\s+8\s+0/);
    const out = path.join(tmp.dir, 'report');
    const r = marsrl(['study', '--report', 'seeded-2x2', '--out', out, '--db', db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('| system acc |');
    expect(fs.existsSync(path.join(out, 'charts', 'final-system-accuracy-seeds.png'))).toBe(true);
    // A folder inside a missing one is refused, as an export's is, and nothing is created (issue 18).
    const missing = path.join(tmp.dir, 'no-such', 'deeper', 'report');
    const refused = await marsrlMain(['study', '--report', 'seeded-2x2', '--out', missing, '--db', db]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`the folder ${path.dirname(missing)} does not exist; create it first or choose another path`);
    expect(fs.existsSync(path.join(tmp.dir, 'no-such'))).toBe(false);
  }, 60_000);

  it('compares runs by id with deltas, grouped, as text and JSON', async () => {
    const text = marsrl(['compare', ...runIds.slice(0, 4).map(String), '--group-by', 'advantage.mode', '--db', db]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/Config: 2 of \d+ fields differ[\s\S]*run\s+advantage.mode\s+seed/);
    expect(text.stdout).toMatch(/Groups by advantage\.mode/);
    expect(text.stdout).toMatch(/corrector1 grad spikes\s+0 ± 0\.0\s+3 ± 0\.0 \(Δ \+3\*\)/);
    const json = JSON.parse((await marsrlMain(['compare', '--study', '1', '--json', '--db', db])).stdout) as { groups: { label: string }[]; baselineGroup: string };
    expect(json.groups).toHaveLength(4);
    expect(json.baselineGroup).toBe('decoupled / agentwise');
    const unknown = await marsrlMain(['compare', '1', '999', '--db', db]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No run "999"/);
    expect((await marsrlMain(['compare', '1', '2', '--baseline', '3', '--db', db])).stderr).toMatch(/--baseline 3 must be one of the compared runs \(1, 2\)/);
    expect((await marsrlMain(['compare', '1', '--spike-threshold', '0.5', '--db', db])).stderr).toMatch(/--spike-threshold must be a number above 1/);
  }, 60_000);
});

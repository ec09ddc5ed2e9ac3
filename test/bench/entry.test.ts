/**
 * `npm run bench -- NAME [options]` (issue 37): the benchmarks left the CLI for bench/, started by
 * bench/run.js through tsx. Every benchmark the runner names has its file and its usage line; a
 * name it does not know is refused with the names it does; and `marsrl bench …`, the command
 * that used to run them, points at the new one instead of running anything.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BENCH_NAMES, main } from '../../bench/main';
import { COMMANDS, main as cliMain } from '../../src-main/cli/main';
import { REPO_ROOT } from '../helpers/cli';

async function capture(run: (ctx: { out: (t: string) => void; err: (t: string) => void }) => Promise<number>) {
  let out = '';
  let err = '';
  const code = await run({ out: (t) => (out += `${t}\n`), err: (t) => (err += `${t}\n`) });
  return { code, out, err };
}

describe('npm run bench', () => {
  it('lists the fourteen benchmarks, each with its file whose comment opens with its usage line', async () => {
    expect([...BENCH_NAMES].sort()).toEqual(['cli', 'engine-follow', 'export', 'hf', 'hostile', 'import', 'math-answer', 'model', 'pipeline', 'problems', 'reliability', 'replay', 'serve', 'store', 'ui']);
    const listed = await capture((ctx) => main(['--help'], ctx));
    expect(listed.code).toBe(0);
    for (const name of BENCH_NAMES) {
      expect(listed.out).toMatch(new RegExp(`^  ${name} `, 'm'));
      const help = await capture((ctx) => main([name, '--help'], ctx));
      expect(help.code, name).toBe(0);
      expect(help.out.startsWith(`\`npm run bench -- ${name}`), `${name}: ${help.out.slice(0, 80)}`).toBe(true);
    }
    expect((await capture((ctx) => main([], ctx))).code).toBe(2);
  });

  it('refuses an unknown benchmark by name, listing the known ones, before loading any', async () => {
    const r = await capture((ctx) => main(['nosuch'], ctx));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/unknown benchmark "nosuch"; known: store, export, model/);
    // An inherited property is not a benchmark either.
    expect((await capture((ctx) => main(['toString'], ctx))).code).toBe(2);
  });

  it('a failing benchmark reports its message and exits 1, through bench/run.js as npm starts it', () => {
    const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'bench', 'run.js'), 'store', '--turns', '5'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr.trim()).toBe('npm run bench -- store: --turns must be an integer ≥ 1000 (got 5)');
    expect(JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).scripts.bench).toBe('node bench/run.js');
  });

  it('marsrl has no bench command: `marsrl bench …` names the npm command with the same arguments', async () => {
    expect(COMMANDS.map((c) => c.name)).not.toContain('bench');
    const r = await capture((ctx) => cliMain(['bench', 'store', '--turns', '5'], { env: {}, ...ctx }));
    expect(r.code).toBe(2);
    expect(r.err.trim()).toBe('marsrl: benchmarks are not a marsrl command; from a clone of the repository run: npm run bench -- store --turns 5');
    const overview = await capture((ctx) => cliMain(['--help'], { env: {}, ...ctx }));
    expect(overview.out).not.toMatch(/^ {2}bench /m);
  });
});

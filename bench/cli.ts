/**
 * `npm run bench -- cli [--repeats N] [--runs R] [--db PATH] [--keep]`
 *
 * What a `marsrl` command costs before it does its work: each command starts from source through
 * tsx's loader, and each run worker does too, so the modules a command loads are paid on every
 * call (and, in the test suite, hundreds of times). Times `bin/marsrl.js` as a user runs it on a
 * database of R runs (default 20): `runs`, `runs --json`, `show 1`, `presets`, `config validate`
 * of a preset, each N times (default 7); the median wall and CPU time (user + system) and the peak
 * RSS the child reports at exit. Baseline in the same run: `marsrl --help`, which loads the
 * loader and the command table and nothing else; each command's excess over it is what its own
 * imports and work cost.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openStore } from '../src-main/engine/store';
import { benchDatabase, DATABASE_OPTIONS } from './database';
import { intFlag } from './flags';
import { median } from './timing';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin', 'marsrl.js');
const MARK = 'marsrl-bench-cli-usage ';

/** Loaded before the command (`node --import`): reports the child's own CPU time and peak RSS at exit. */
const REPORTER = `process.on('exit', () => { const u = process.resourceUsage(); process.stderr.write('\\n${MARK}' + JSON.stringify({ cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000, maxRssKb: u.maxRSS }) + '\\n'); });`;

interface Sample {
  wallMs: number;
  cpuMs: number;
  maxRssKb: number;
}

/** One run of `marsrl ARGS`; fails the bench if the command does. */
function timeCommand(args: string[], env: NodeJS.ProcessEnv, reporter: string): Sample {
  const t0 = performance.now();
  const child = spawnSync(process.execPath, ['--import', reporter, BIN, ...args], { env, encoding: 'utf8', maxBuffer: 64 << 20 });
  const wallMs = performance.now() - t0;
  if (child.status !== 0) throw new Error(`marsrl ${args.join(' ')} exited ${child.status}: ${child.stderr.trim().split('\n').slice(-3).join(' ')}`);
  const line = child.stderr.split('\n').find((l) => l.startsWith(MARK));
  if (!line) throw new Error(`marsrl ${args.join(' ')} did not report its usage`);
  const usage = JSON.parse(line.slice(MARK.length)) as { cpuMs: number; maxRssKb: number };
  return { wallMs, ...usage };
}

function seedRuns(databasePath: string, runs: number): void {
  const store = openStore(databasePath);
  for (let r = 0; r < runs; r++) {
    const runId = store.runs.create({ name: `bench cli ${r}`, config: { task: { family: 'sort' }, reward: { scheme: 'decoupled' }, advantage: { mode: 'agentwise' } }, codeVersion: 'bench', seed: r });
    const writer = store.writer({ maxPending: 1000, flushIntervalMs: 0 });
    for (let step = 0; step < 50; step++) writer.metric({ runId, step, wallTime: step, key: 'reward/solver', value: step / 50 });
    writer.close();
    store.runs.setStatus(runId, 'done', null);
  }
  store.close();
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { repeats: { type: 'string', default: '7' }, runs: { type: 'string', default: '20' }, ...DATABASE_OPTIONS } });
  const repeats = intFlag(values.repeats, '--repeats', 1);
  const runs = intFlag(values.runs, '--runs', 1);
  const database = benchDatabase(values, 'cli');
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-cli-home-'));
  const reporter = path.join(home, 'usage-reporter.mjs');
  fs.writeFileSync(reporter, REPORTER);
  try {
    if (!fs.existsSync(database.path)) seedRuns(database.path, runs);
    const env = { ...process.env, MARSRL_HOME: home, MARSRL_DB: database.path, NO_COLOR: '1' };
    const commands: Array<[string, string[]]> = [
      ['--help (baseline)', ['--help']],
      ['runs', ['runs']],
      ['runs --json', ['runs', '--json']],
      ['show 1', ['show', '1']],
      ['presets', ['presets']],
      ['config validate quick', ['config', 'validate', '--preset', 'quick']],
    ];
    // One untimed call first: tsx compiles each source once into its cache, as a user's first call does.
    for (const [, args] of commands) timeCommand(args, env, reporter);
    console.log(`marsrl start-up (${repeats} calls each, medians; a database of ${runs} runs; Node ${process.version}, ${os.cpus().length} cores)`);
    console.log(`${'command'.padEnd(24)} ${'wall ms'.padStart(8)} ${'cpu ms'.padStart(8)} ${'peak RSS MB'.padStart(12)} ${'wall / baseline'.padStart(16)}`);
    let baselineMs = 0;
    for (const [label, args] of commands) {
      const samples = Array.from({ length: repeats }, () => timeCommand(args, env, reporter));
      const wall = median(samples.map((s) => s.wallMs));
      if (baselineMs === 0) baselineMs = wall;
      const cpu = median(samples.map((s) => s.cpuMs));
      const rssMb = Math.max(...samples.map((s) => s.maxRssKb)) / 1024;
      console.log(`${label.padEnd(24)} ${wall.toFixed(0).padStart(8)} ${cpu.toFixed(0).padStart(8)} ${rssMb.toFixed(0).padStart(12)} ${(wall / baselineMs).toFixed(2).padStart(15)}×`);
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
    const kept = database.release();
    if (kept) console.log(`database kept: ${kept}`);
  }
}

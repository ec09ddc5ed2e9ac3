/**
 * `npm run bench -- export [--turns N] [--keep] [--db PATH]`
 *
 * Builds a database of N turns (default 1M) shaped like MarsRL training output: problems, episodes
 * of a Solver group of 8, Verifier1 groups over 2 selected solutions, Corrector1 groups over
 * rejecting verdicts, then Verifier2/Corrector2, each turn with its reward (and components) and
 * agent-wise advantage. Then exports it in each format, each in a fresh child process so its peak
 * RSS (`process.resourceUsage().maxRSS`) is the export's own, and prints wall time, rows/s and
 * peak memory. Baseline in the same run: the naive export (load every row with one query, one
 * JSON.stringify, one write) on a 100k-turn subset, also in a child.
 *
 * `--db PATH` reuses a database kept by an earlier `--keep` run when it already holds the turns.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { runExport, type ExportContainer, type ExportFormat } from '../src-main/engine/export';
import { DATABASE_OPTIONS } from './database';
import { openStore, type BatchWriter, type Store } from '../src-main/engine/store';
import { Rng } from '../src-main/engine/util/rng';

const RUN_NAME = 'bench-export';
const CLI_MAIN = pathToFileURL(path.resolve(import.meta.dirname, '../src-main/cli/main.ts')).href;

const CASES: { format: ExportFormat; container: ExportContainer }[] = [
  { format: 'trajectories', container: 'jsonl' },
  { format: 'trajectories', container: 'parquet' },
  { format: 'verl', container: 'parquet' },
  { format: 'sft', container: 'jsonl' },
  { format: 'pairs', container: 'jsonl' },
];

interface ChildReport {
  rows: number;
  sourceRows: number;
  seconds: number;
  bytes: number;
  startRssMB: number;
  peakRssMB: number;
}

// ── generator ──────────────────────────────────────────────────────────────────────────────────

interface Problem {
  id: number;
  question: string;
  answer: string;
}

interface Sample {
  id: number;
  text: string;
  correct: boolean;
  reward: number;
}

function makeProblems(w: BatchWriter, runId: number, rng: Rng, split: 'train' | 'test', count: number): Problem[] {
  const problems: Problem[] = [];
  for (let i = 0; i < count; i++) {
    const digits = Array.from({ length: 8 }, () => rng.int(0, 9));
    const question = `sort ${digits.join(' ')}`;
    const answer = digits.slice().sort((a, b) => a - b).join(' ');
    const id = w.newId('problems');
    w.problem({ id, runId, split, family: 'sort', problemKey: `${split}-${i}`, question, answer, meta: null });
    problems.push({ id, question, answer });
  }
  return problems;
}

/** Agent-wise advantages (Dr. MAS): normalise each agent's rewards over its samples in the episode. */
function writeAdvantages(w: BatchWriter, runId: number, episodeId: number, agent: string, samples: Sample[]): void {
  const n = samples.length;
  const mu = samples.reduce((a, s) => a + s.reward, 0) / n;
  const sigma = n > 1 ? Math.sqrt(samples.reduce((a, s) => a + (s.reward - mu) ** 2, 0) / (n - 1)) : 1;
  for (const s of samples) {
    w.advantage({ turnId: s.id, runId, value: (s.reward - mu) / (sigma + 1e-6), mode: 'agentwise', groupKey: `${episodeId}:${agent}`, mu, sigma });
  }
}

/** Writes episodes until `turns` turns exist; returns the number written. */
function generate(store: Store, runId: number, turns: number, rng: Rng): number {
  const w = store.writer({ maxPending: 20_000, flushIntervalMs: 0 });
  const train = makeProblems(w, runId, rng, 'train', 4000);
  const test = makeProblems(w, runId, rng, 'test', 400);
  const now = Date.now();
  let written = 0;
  let step = 0;
  const steps = Math.ceil(turns / (8 * 40));

  const episode = (problem: Problem, split: 'train' | 'test', solverOnly: boolean) => {
    const episodeId = w.newId('episodes');
    w.episode({ id: episodeId, runId, step, problemId: problem.id, split, finalAnswer: null, correct: null, rounds: solverOnly ? 0 : 2, meta: null });
    let group = 0;
    const skill = 0.25 + 0.5 * Math.min(1, step / steps);
    const turn = (agent: string, round: number, groupId: number, parent: number | null, index: number, prompt: string, text: string, correct: boolean, formatValid: boolean): Sample => {
      const id = w.newId('turns');
      const reward = (correct ? 1 : 0) - (formatValid ? 0 : 0.5);
      w.turn({
        id, runId, episodeId, step, agent, policyId: agent.replace(/\d+$/, ''), round, groupId, parentTurnId: parent, sampleIndex: index,
        prompt, text, tokenCount: text.length, parsed: formatValid ? text.slice(text.lastIndexOf(':') + 1) : null, correct: formatValid ? correct : null,
        formatValid, policyVersionMin: Math.max(0, step - 1), policyVersionMax: step, createdAt: now + written,
      });
      w.reward({ turnId: id, runId, value: reward, components: formatValid ? { correctness: correct ? 1 : 0 } : { correctness: 0, format_penalty: -0.5 }, scheme: 'decoupled' });
      written++;
      return { id, text, correct, reward };
    };
    const solve = (agent: string, round: number, prompt: string, parent: number | null, count: number): Sample[] => {
      const out: Sample[] = [];
      const g = group++;
      for (let i = 0; i < count; i++) {
        const correct = rng.next() < skill;
        const formatValid = rng.next() < 0.95;
        const shown = correct ? problem.answer : problem.answer.split(' ').reverse().join(' ');
        const working = problem.question.slice(5).split(' ').map((d, k) => `${d}${k % 3 === 0 ? '<' : ' '}`).join('');
        out.push(turn(agent, round, g, parent, i, prompt, `${working} ${formatValid ? 'A:' : ''}${shown}`, correct, formatValid));
      }
      writeAdvantages(w, runId, episodeId, agent, out);
      return out;
    };
    const verify = (agent: string, round: number, solutions: Sample[]): { verdict: Sample; solution: Sample; rejects: boolean }[] => {
      // Adaptive selection: the Verifier prefers incorrect solutions.
      const picked = solutions.slice().sort((a, b) => Number(a.correct) - Number(b.correct)).slice(0, 2);
      const all: Sample[] = [];
      const results: { verdict: Sample; solution: Sample; rejects: boolean }[] = [];
      for (const solution of picked) {
        const g = group++;
        for (let i = 0; i < 4; i++) {
          const right = rng.next() < skill;
          const rejects = right ? !solution.correct : solution.correct;
          const text = `c0=1 c1=2 c3=1 ord${rejects ? 'x' : 'ok'} V:${rejects ? 'no' : 'ok'}`;
          const v = turn(agent, round, g, solution.id, i, `${problem.question}|${solution.text}`, text, right, true);
          all.push(v);
          results.push({ verdict: v, solution, rejects });
        }
      }
      writeAdvantages(w, runId, episodeId, agent, all);
      return results;
    };
    const correct = (agent: string, round: number, verdicts: { verdict: Sample; solution: Sample; rejects: boolean }[]): Sample[] => {
      // The Corrector only receives rejections; adaptive selection prefers right bug reports.
      const picked = verdicts.filter((v) => v.rejects).sort((a, b) => Number(b.verdict.correct) - Number(a.verdict.correct)).slice(0, 2);
      const all: Sample[] = [];
      for (const v of picked) all.push(...solve(agent, round, `${problem.question}|${v.solution.text}|V:no`, v.verdict.id, 4));
      return all;
    };

    const solutions = solve('solver', 0, problem.question, null, 8);
    if (solverOnly) return;
    const v1 = verify('verifier1', 1, solutions);
    const c1 = correct('corrector1', 1, v1);
    if (c1.length === 0) return;
    const v2 = verify('verifier2', 2, c1);
    correct('corrector2', 2, v2);
  };

  while (written < turns) {
    if (step % 25 === 24) {
      for (let i = 0; i < 16 && written < turns; i++) episode(test[rng.int(0, test.length - 1)], 'test', true);
    } else {
      for (let i = 0; i < 8 && written < turns; i++) episode(train[rng.int(0, train.length - 1)], 'train', false);
    }
    step++;
  }
  w.close();
  return written;
}

// ── child processes ────────────────────────────────────────────────────────────────────────────

async function child(spec: string, dbPath: string, out: string): Promise<void> {
  const startRss = process.memoryUsage().rss;
  const store = openStore(dbPath, { readonly: true });
  const runId = store.runs.find(RUN_NAME)?.id;
  if (runId === undefined) throw new Error(`no run ${RUN_NAME} in ${dbPath}`);
  const t0 = performance.now();
  let report: Omit<ChildReport, 'startRssMB' | 'peakRssMB'>;
  const [format, container] = spec.split(':');
  if (format === 'baseline') {
    // What a first version would do: one query for every row, one JSON document, one write.
    const limit = Number(container);
    const rows = store.db
      .prepare(
        `SELECT t.*, e.split, p.problem_key, r.value AS reward, r.components_json, a.value AS advantage, a.mode, a.mu, a.sigma
         FROM turns t LEFT JOIN episodes e ON e.id = t.episode_id LEFT JOIN problems p ON p.id = e.problem_id
         LEFT JOIN rewards r ON r.turn_id = t.id LEFT JOIN advantages a ON a.turn_id = t.id
         WHERE t.run_id = ? ORDER BY t.id LIMIT ?`,
      )
      .all(runId, limit) as Record<string, unknown>[];
    const text = rows.map((r) => JSON.stringify({ ...r, reward_components: JSON.parse((r.components_json as string) ?? 'null') })).join('\n');
    fs.writeFileSync(out, text);
    report = { rows: rows.length, sourceRows: rows.length, seconds: (performance.now() - t0) / 1000, bytes: Buffer.byteLength(text) };
  } else {
    const result = await runExport(store, { runs: [runId], format: format as ExportFormat, container: container as ExportContainer, out, force: true });
    report = { rows: result.rows, sourceRows: result.sourceRows, seconds: result.seconds, bytes: result.bytes };
  }
  store.close();
  const full: ChildReport = { ...report, startRssMB: startRss / 2 ** 20, peakRssMB: (process.resourceUsage().maxRSS * 1024) / 2 ** 20 };
  process.stdout.write(`BENCH-CHILD ${JSON.stringify(full)}\n`);
}

/**
 * `engine`: a bare Node process that loads only this file (the export engine, better-sqlite3,
 * hyparquet-writer), as the desktop app's main process runs it. `cli`: started as bin/marsrl.js
 * starts `marsrl export` (tsx's loader registered, then the CLI's entry module), which also pays
 * for every module the CLI loads at start.
 */
function spawnChild(spec: string, dbPath: string, out: string, via: 'engine' | 'cli'): ChildReport {
  const childArgs = ['--child', spec, '--db', dbPath, '--out', out];
  const runThisFile = `const m = await import(${JSON.stringify(pathToFileURL(import.meta.filename).href)}); await m.run(${JSON.stringify(childArgs)});`;
  const args =
    via === 'cli'
      ? ['--input-type=module', '-e', `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))}; register(); await import(${JSON.stringify(CLI_MAIN)}); ${runThisFile}`]
      : ['--import', 'tsx', '--input-type=module', '-e', runThisFile];
  const result = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 16 * 2 ** 20 });
  const line = result.stdout.split('\n').find((l) => l.startsWith('BENCH-CHILD '));
  if (result.status !== 0 || !line) throw new Error(`bench child ${spec} failed (exit ${result.status}):\n${result.stderr}`);
  return JSON.parse(line.slice('BENCH-CHILD '.length)) as ChildReport;
}

// ── main ───────────────────────────────────────────────────────────────────────────────────────

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      turns: { type: 'string', default: '1000000' },
      ...DATABASE_OPTIONS,
      child: { type: 'string' },
      out: { type: 'string' },
      'baseline-turns': { type: 'string', default: '100000' },
    },
  });
  if (values.child) {
    if (!values.db || !values.out) throw new Error('--child needs --db and --out');
    await child(values.child, values.db, values.out);
    return;
  }
  const turns = Number(values.turns);
  if (!Number.isInteger(turns) || turns < 1000) throw new Error(`--turns must be an integer ≥ 1000 (got ${values.turns})`);
  const baselineTurns = Math.min(turns, Number(values['baseline-turns']));

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-export-'));
  const dbPath = values.db ?? path.join(dir, 'bench.db');
  try {
    const store = openStore(dbPath);
    let existing = store.runs.find(RUN_NAME);
    const have = existing ? (store.db.prepare('SELECT COUNT(*) AS n FROM turns WHERE run_id = ?').get(existing.id) as { n: number }).n : 0;
    if (existing && have < turns) {
      store.runs.delete(existing.id);
      existing = null;
    }
    if (!existing) {
      const runId = store.runs.create({ name: RUN_NAME, config: { task: { family: 'sort' }, reward: { scheme: 'decoupled' }, advantage: { mode: 'agentwise' } }, codeVersion: 'bench', seed: 7, status: 'done' });
      const t0 = performance.now();
      const written = generate(store, runId, turns, new Rng(7, 'bench-export'));
      console.log(`export bench: generated ${written.toLocaleString()} turns (+ rewards, advantages, episodes, problems) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    } else {
      console.log(`export bench: reusing ${have.toLocaleString()} turns of run ${existing.id} in ${dbPath}`);
    }
    const counts = store.db
      .prepare(`SELECT agent, COUNT(*) AS n FROM turns WHERE run_id = (SELECT id FROM runs WHERE name = ? ORDER BY id DESC LIMIT 1) GROUP BY agent ORDER BY agent`)
      .all(RUN_NAME) as { agent: string; n: number }[];
    store.close();
    console.log(`  database ${dbPath} (${(fs.statSync(dbPath).size / 2 ** 20).toFixed(0)} MB); turns per agent: ${counts.map((c) => `${c.agent} ${c.n.toLocaleString()}`).join(', ')}`);
    console.log('  each export runs in a fresh Node process that loads only the export engine (as the desktop app runs it);');
    console.log('  the last line runs the heaviest case as bin/marsrl.js starts a command, i.e. with everything the CLI loads at start.');
    console.log('');
    console.log(`  ${'format'.padEnd(22)} ${'rows'.padStart(10)} ${'source'.padStart(10)} ${'time s'.padStart(8)} ${'rows/s'.padStart(9)} ${'file MB'.padStart(8)} ${'peak RSS MB'.padStart(12)} ${'(start)'.padStart(8)}`);
    const line = (label: string, r: ChildReport) =>
      console.log(
        `  ${label.padEnd(22)} ${r.rows.toLocaleString().padStart(10)} ${r.sourceRows.toLocaleString().padStart(10)} ${r.seconds.toFixed(1).padStart(8)} ${Math.round(r.rows / r.seconds).toLocaleString().padStart(9)} ${(r.bytes / 2 ** 20).toFixed(0).padStart(8)} ${r.peakRssMB.toFixed(0).padStart(12)} ${r.startRssMB.toFixed(0).padStart(8)}`,
      );
    const results: ChildReport[] = [];
    for (const c of CASES) {
      const out = path.join(dir, `export-${c.format}.${c.container}`);
      const r = spawnChild(`${c.format}:${c.container}`, dbPath, out, 'engine');
      results.push(r);
      line(`${c.format} ${c.container}`, r);
      fs.rmSync(out, { force: true });
      fs.rmSync(`${out}.card.md`, { force: true });
    }
    const baseOut = path.join(dir, 'baseline.jsonl');
    const base = spawnChild(`baseline:${baselineTurns}`, dbPath, baseOut, 'engine');
    fs.rmSync(baseOut, { force: true });
    line(`baseline naive ${Math.round(baselineTurns / 1000)}k`, base);
    const cliOut = path.join(dir, 'export-cli.parquet');
    const viaCli = spawnChild('trajectories:parquet', dbPath, cliOut, 'cli');
    fs.rmSync(cliOut, { force: true });
    fs.rmSync(`${cliOut}.card.md`, { force: true });
    line('traj. parquet via CLI', viaCli);
    const streamed = results[0];
    const basePerTurn = (base.peakRssMB - base.startRssMB) / base.rows;
    const streamedGrowth = streamed.peakRssMB - streamed.startRssMB;
    console.log('');
    console.log(
      `  naive export grows ${(basePerTurn * 1024).toFixed(2)} KB per turn (${(base.peakRssMB - base.startRssMB).toFixed(0)} MB for ${base.rows.toLocaleString()} turns, ~${(basePerTurn * streamed.sourceRows).toFixed(0)} MB extrapolated to ${streamed.sourceRows.toLocaleString()});`,
    );
    console.log(
      `  streamed trajectories jsonl grows ${streamedGrowth.toFixed(0)} MB for ${streamed.sourceRows.toLocaleString()} turns: ${((basePerTurn * streamed.sourceRows) / Math.max(1, streamedGrowth)).toFixed(0)}x less at this size, and flat in the number of turns.`,
    );
    console.log(`  peak RSS target < 300 MB: ${results.every((r) => r.peakRssMB < 300) ? 'met by every format' : `EXCEEDED by ${CASES.filter((_, i) => results[i].peakRssMB >= 300).map((c) => `${c.format} ${c.container}`).join(', ')}`}` +
      `; through the CLI ${viaCli.peakRssMB.toFixed(0)} MB, of which ${viaCli.startRssMB.toFixed(0)} MB is the CLI before the export starts.`);
  } finally {
    if (values.keep) console.log(`  kept ${dir}${values.db ? ` (database ${dbPath})` : ''}`);
    else {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
}

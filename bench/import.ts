/**
 * `npm run bench -- import [--generations N] [--points N] [--format marsrl|mlflow|both] [--keep]`
 *
 * Import rate and memory (issue 39). Writes in a temp folder, in each tool's own layout:
 * - a MarsRL V-C output folder of N model calls (default 100 000): one JSON line per call in
 *   `{out}/{idx}.json.{worker_id}` as llm_client.py and vc_reasoning_system.py write them
 *   (messages, status_code, finish_reason, stop_reason, completion_tokens, text, call_reason
 *   step1 / verify_solution / correction), each file one chain MarsRL's loop ends (4 approvals);
 * - an MLflow file store of N metric points (default 1 000 000): `mlruns/<exp>/<run>/metrics/<key>`
 *   lines `timestamp value step`, with the experiment's and the run's meta.yaml.
 * Then, for each, imports it into a fresh store through the importer (engine/imports/importer.ts,
 * the registry's reader) and reports seconds, records/s, peak RSS and heap (sampled during the
 * import), and a re-import (which adds nothing). Baseline measured in the same run: the format's
 * reader alone over the same source (every batch read and dropped, nothing written); the ratio
 * import/baseline is what storing costs on top of reading.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { intFlag } from './flags';
import { runImport } from '../src-main/engine/imports/importer';
import { importFormat } from '../src-main/engine/imports/registry';
import { openStore } from '../src-main/engine/store';
import type { ImportFormatId } from '../src-shared/contract';

const QUESTION = 'A store sells 12 boxes of 24 pencils each. 37 are sold in the morning and 54 in the afternoon. How many pencils remain?';
const SOLUTION = '<think>Count first: 12 × 24 = 288 pencils. Sold: 37 + 54 = 91.</think>There are 12 × 24 = 288 pencils; 37 + 54 = 91 are sold, so 288 − 91 = 197 remain. The answer is \\boxed{197}.';

function call(reason: 'step1' | 'verify_solution' | 'correction', text: string, tokens: number): string {
  const messages = [{ role: 'user', content: reason === 'step1' ? QUESTION : `${QUESTION}\n\nSolution:\n${SOLUTION}\n\nCheck the solution.` }];
  return JSON.stringify({ messages, status_code: 200, finish_reason: 'stop', stop_reason: null, completion_tokens: tokens, text, call_reason: reason });
}

const APPROVE = 'The steps are right. Correctness: correct';
const REJECT = 'The subtraction is off. Correctness: flawed';

/**
 * One worker's chain as MarsRL's loop makes it (marsrl/chain.ts): a Solver reply, then either four
 * approvals in a row (5 calls), or a rejection, a correction and four approvals (7 calls).
 */
function chainLines(withCorrection: boolean): string[] {
  const lines = [call('step1', SOLUTION, 96)];
  if (withCorrection) lines.push(call('verify_solution', REJECT, 24), call('correction', SOLUTION, 90));
  for (let i = 0; i < 4; i++) lines.push(call('verify_solution', APPROVE, 20));
  return lines;
}

/** Writes about `generations` calls; returns the calls written. */
function writeMarsrl(dir: string, generations: number): number {
  fs.mkdirSync(dir, { recursive: true });
  const rows: string[] = [];
  let written = 0;
  for (let idx = 0; written < generations; idx++) {
    const lines = chainLines(idx % 3 === 0);
    fs.writeFileSync(path.join(dir, `${idx}.json.0`), `${lines.join('\n')}\n`);
    rows.push(JSON.stringify({ query: `${QUESTION} (#${idx})`, ans_box: '197', qid: idx, data_source: 'bench', source: 'bench' }));
    written += lines.length;
  }
  // extract_solution.py's rows beside the calls (the input rows with their answers).
  fs.writeFileSync(path.join(dir, 'init_answer.jsonl'), `${rows.join('\n')}\n`);
  return written;
}

/** An MLflow file store with one run of `points` points over 20 keys; returns the points written. */
function writeMlflow(root: string, points: number): number {
  const experiment = path.join(root, '1');
  const runId = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';
  const runDir = path.join(experiment, runId);
  fs.mkdirSync(path.join(runDir, 'metrics', 'train'), { recursive: true });
  fs.mkdirSync(path.join(runDir, 'params'), { recursive: true });
  fs.writeFileSync(path.join(experiment, 'meta.yaml'), `artifact_location: file://${experiment}\ncreation_time: 1733300000000\nexperiment_id: '1'\nlast_update_time: 1733300000000\nlifecycle_stage: active\nname: bench\n`);
  const start = 1_733_300_000_000;
  fs.writeFileSync(
    path.join(runDir, 'meta.yaml'),
    `artifact_uri: file://${runDir}/artifacts\nend_time: ${start + 3_600_000}\nentry_point_name: ''\nexperiment_id: '1'\nlifecycle_stage: active\nrun_id: ${runId}\nrun_name: bench-run\nrun_uuid: ${runId}\nsource_name: ''\nsource_type: 4\nsource_version: ''\nstart_time: ${start}\nstatus: 3\ntags: []\nuser_id: bench\n`,
  );
  fs.writeFileSync(path.join(runDir, 'params', 'learning_rate'), '1e-6');
  const keys = Array.from({ length: 20 }, (_, i) => `train/metric_${String(i).padStart(2, '0')}`);
  const steps = Math.ceil(points / keys.length);
  let written = 0;
  for (const [k, key] of keys.entries()) {
    const lines: string[] = [];
    for (let step = 0; step < steps && written < points; step++, written++) lines.push(`${start + step * 1000} ${Math.sin(step / 100 + k)} ${step}`);
    fs.writeFileSync(path.join(runDir, 'metrics', ...key.split('/')), `${lines.join('\n')}\n`);
  }
  return written;
}

/** The reader alone: every batch of every run read and dropped. */
async function readerPass(id: ImportFormatId, source: string): Promise<{ seconds: number; records: number }> {
  const format = importFormat(id);
  if (!format) throw new Error(`the ${id} reader is not in this build's registry (merge its branch)`);
  const t0 = performance.now();
  const scan = await format.scan(source, {});
  let records = 0;
  for (const run of scan.runs) {
    for await (const batch of format.read(source, run.key, null, { batchSize: 5000 })) records += batch.metrics.length + batch.episodes.reduce((n, e) => n + e.turns.length, 0);
  }
  return { seconds: (performance.now() - t0) / 1000, records };
}

interface Measured {
  seconds: number;
  records: number;
  peakRss: number;
  peakHeap: number;
  reimportSeconds: number;
  reimportAdded: number;
}

async function importInto(dir: string, id: ImportFormatId, source: string): Promise<Measured> {
  const store = openStore(path.join(dir, `${id}.db`));
  try {
    global.gc?.();
    let peakRss = 0;
    let peakHeap = 0;
    const sample = () => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
    };
    const timer = setInterval(sample, 20);
    const t0 = performance.now();
    const outcome = await runImport(store, { path: source, format: id }, { onProgress: sample });
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(timer);
    sample();
    const records = outcome.runs.reduce((n, r) => n + r.metricPoints + r.turns, 0);
    const t1 = performance.now();
    const again = await runImport(store, { path: source, format: id });
    const reimportSeconds = (performance.now() - t1) / 1000;
    return { seconds, records, peakRss, peakHeap, reimportSeconds, reimportAdded: again.runs.reduce((n, r) => n + r.metricPoints + r.turns, 0) };
  } finally {
    store.close();
  }
}

const mb = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MB`;
const rate = (n: number, s: number) => `${Math.round(n / s).toLocaleString('en-US')}/s`;

/** Prints each figure as soon as it is measured (a long run shows what it has so far). */
async function benchOne(dir: string, id: ImportFormatId, source: string, expected: number, unit: string, print: (line: string) => void): Promise<void> {
  print(`${id}: ${expected.toLocaleString('en-US')} ${unit} (${mb(dirBytes(source))} on disk)`);
  const base = await readerPass(id, source);
  print(`  reader only ${base.seconds.toFixed(2)} s  ${rate(base.records, base.seconds)}  (baseline: same reader, nothing written)`);
  const full = await importInto(dir, id, source);
  if (full.records !== expected || base.records !== expected) throw new Error(`${id}: ${expected} ${unit} written, the reader gave ${base.records} and the import stored ${full.records}`);
  print(`  import      ${full.seconds.toFixed(2)} s  ${rate(full.records, full.seconds)}  peak RSS ${mb(full.peakRss)}, peak heap ${mb(full.peakHeap)}`);
  print(`  ratio       import / reader = ${(full.seconds / base.seconds).toFixed(2)}×`);
  print(`  re-import   ${full.reimportSeconds.toFixed(2)} s, ${full.reimportAdded} records added`);
  if (full.reimportAdded !== 0) throw new Error(`${id}: the re-import added ${full.reimportAdded} records (expected none)`);
}

function dirBytes(root: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(root, { withFileTypes: true, recursive: true })) if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath, entry.name)).size;
  return total;
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { generations: { type: 'string', default: '100000' }, points: { type: 'string', default: '1000000' }, format: { type: 'string', default: 'both' }, keep: { type: 'boolean', default: false } } });
  const generations = intFlag(values.generations, '--generations', 100);
  const points = intFlag(values.points, '--points', 100);
  if (!['marsrl', 'mlflow', 'both'].includes(values.format)) throw new Error(`--format must be marsrl, mlflow or both (got ${values.format})`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-import-'));
  try {
    const print = (line: string) => process.stdout.write(`${line}\n`);
    if (values.format !== 'mlflow') {
      const written = writeMarsrl(path.join(dir, 'marsrl-out'), generations);
      await benchOne(dir, 'marsrl', path.join(dir, 'marsrl-out'), written, 'generations', print);
    }
    if (values.format !== 'marsrl') {
      const written = writeMlflow(path.join(dir, 'mlruns'), points);
      await benchOne(dir, 'mlflow', path.join(dir, 'mlruns'), written, 'metric points', print);
    }
    if (values.keep) process.stdout.write(`kept ${dir}\n`);
  } finally {
    if (!values.keep) fs.rmSync(dir, { recursive: true, force: true });
  }
}

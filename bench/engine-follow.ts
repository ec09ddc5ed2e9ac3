/**
 * `npm run bench -- engine-follow [--generations N] [--engine verl|drmas] [--no-store] [--keep]`
 *
 * Ingestion rate of the engine followers (issue 38): writes an attempt folder of N dumped
 * generations (default 100 000) in the engine's own format — veRL 0.9 lines with `uid`, or
 * DrMAS lines with the Studio hook's fields — plus the metrics file, then follows it as a
 * finished run in polls of at most 10 000 turns (as the live follower does), counting the records
 * and dropping them, and reports turns/s and the resident memory after every poll (flat when the
 * follower's memory does not grow with the run). Each poll's records are then written into a
 * fresh store as a live run writes them (engines/ingest.ts: turns in episodes, problems, rewards,
 * metrics, the cursor in the same transaction), timed apart, unless --no-store. Baseline measured
 * in the same run: reading the same files whole and JSON.parse-ing every line, without
 * completeness rules, cursors or mapping.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { intFlag } from './flags';
import { presetDocument } from '../src-main/engine/config/load';
import { resolveConfig } from '../src-main/engine/preflight';
import { followAttempt, initialFollowState } from '../src-main/engine/engines/follow/follower';
import { EngineIngest } from '../src-main/engine/engines/ingest';
import { openStore, type Store } from '../src-main/engine/store';
import type { FollowSpec } from '../src-main/engine/engines/follow/spec';

function spec(engine: 'verl' | 'drmas', runDir: string): FollowSpec {
  const a = `${runDir}/attempt-1`;
  return {
    engine,
    engineVersion: engine === 'verl' ? '0.9.0' : '0.3.1.dev',
    dumpOrder: engine === 'verl' ? 'v1' : 'drmas',
    uid: engine === 'verl',
    metricSource: engine === 'verl' ? 'file' : 'console',
    consoleActor: engine === 'verl' ? 'TaskRunnerV1' : 'TaskRunner',
    files: { attemptDir: a, metricsFile: engine === 'verl' ? `${a}/metrics.jsonl` : null, rolloutDir: `${a}/rollout`, validationDir: engine === 'verl' ? `${a}/validation` : null, tensorboardDir: null, checkpointsDir: `${runDir}/checkpoints` },
    runDir,
    localRunDir: runDir,
    attempt: 1,
    agents:
      engine === 'verl'
        ? [{ engineId: 'solver', wgId: 'actor', role: 'solver' }]
        : [
            { engineId: 'Solver Agent', wgId: 'Qwen3-4B_Solver Agent', role: 'solver' },
            { engineId: 'Verifier Agent', wgId: 'Qwen3-4B_Verifier Agent', role: 'verifier' },
            { engineId: 'Corrector Agent', wgId: 'Qwen3-4B_Corrector Agent', role: 'corrector' },
          ],
    dataSources: ['marsrl/math'],
    valN: 1,
    hook: engine === 'drmas',
  };
}

const PROMPT = 'system\nYou are a careful mathematician. Solve the problem step by step, justifying every step; check your arithmetic as you go. End your response with the final answer alone in \\boxed{answer}.\nuser\n';
const OUTPUT = 'Let me work through this carefully. First, the store sells 12 boxes of 24 pencils each, so there are 12 × 24 = 288 pencils. Then 37 are sold in the morning and 54 in the afternoon, 91 in all, so 288 − 91 = 197 remain. ';

/** Writes `generations` lines over steps of 512, with one metrics line per step; returns the bytes written. */
function writeRun(engine: 'verl' | 'drmas', runDir: string, generations: number): number {
  const s = spec(engine, runDir);
  fs.mkdirSync(s.files.rolloutDir, { recursive: true });
  const perStep = 512;
  let bytes = 0;
  const metrics: string[] = [];
  for (let step = 1, left = generations; left > 0; step++) {
    const n = Math.min(perStep, left);
    left -= n;
    const lines: string[] = [];
    for (let i = 0; i < n; i++) {
      const q = `Problem ${step}-${i}: a store has ${step * 7 + i} boxes; how many pencils remain?`;
      const row: Record<string, unknown> = { input: `${PROMPT}${q}\nassistant\n`, output: `${OUTPUT}So the answer is \\boxed{${(step * 13 + i) % 997}}.`, gts: String((step * 13 + i) % 997), score: i % 3 === 0 ? 1.0 : 0.0, step };
      if (engine === 'verl') row.uid = `5c1d2e3f-0a1b-4c2d-8e3f-${String(step).padStart(6, '0')}${String(Math.floor(i / 8)).padStart(6, '0')}_${i % 8}_0`;
      else Object.assign(row, { agent_id: ['Solver Agent', 'Verifier Agent', 'Corrector Agent'][i % 3], wg_id: 'Qwen3-4B_Solver Agent', uid: `u${step}-${Math.floor(i / 24)}`, traj_uid: `t${step}-${Math.floor(i / 3)}`, env_step: 1, turn: i % 3, round: 0, is_action_valid: 1, advantage: (i % 7) / 7 - 0.5, dup: i % 50 === 49 ? 1 : 0 });
      lines.push(JSON.stringify(row).replace(/","/g, '", "').replace(/":/g, '": '));
    }
    const text = `${lines.join('\n')}\n`;
    fs.writeFileSync(path.join(s.files.rolloutDir, `${step}.jsonl`), text);
    bytes += Buffer.byteLength(text);
    metrics.push(JSON.stringify({ step, data: { 'actor/grad_norm': 0.1 + step / 1000, 'critic/score/mean': 0.33, 'timing_s/step': 41.2, 'actor/pg_loss': -0.003 } }));
  }
  if (s.files.metricsFile) fs.writeFileSync(s.files.metricsFile, `${metrics.join('\n')}\n`);
  return bytes;
}

/** A fresh store with one engine run of the shipped preset, as a launched run has it. */
function benchStore(dir: string, engine: 'verl' | 'drmas', s: FollowSpec): { store: Store; ingest: EngineIngest } {
  const store = openStore(path.join(dir, 'bench.db'));
  const preset = engine === 'verl' ? 'verl-grpo' : 'drmas-marsrl';
  const config = resolveConfig(presetDocument(preset));
  const runId = store.runs.create({ name: `bench ${preset}`, preset, config: config as unknown as Record<string, unknown>, codeVersion: 'bench', seed: 1 });
  store.runs.setStatus(runId, 'running', null);
  store.engineJobs.add({ runId, attempt: 1, engine, submissionId: 'bench', address: 'http://127.0.0.1:8265', localRunDir: s.localRunDir, entrypoint: 'bench', spec: s, cursor: initialFollowState() });
  return { store, ingest: new EngineIngest(store, runId, config, s) };
}

function baseline(rolloutDir: string): { lines: number; seconds: number } {
  const t0 = performance.now();
  let lines = 0;
  for (const name of fs.readdirSync(rolloutDir)) {
    for (const line of fs.readFileSync(path.join(rolloutDir, name), 'utf8').split('\n')) {
      if (line === '') continue;
      JSON.parse(line);
      lines++;
    }
  }
  return { lines, seconds: (performance.now() - t0) / 1000 };
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { generations: { type: 'string', default: '100000' }, engine: { type: 'string', default: 'verl' }, 'no-store': { type: 'boolean', default: false }, keep: { type: 'boolean', default: false } } });
  const generations = intFlag(values.generations, '--generations', 1000);
  const engine = values.engine as 'verl' | 'drmas';
  if (engine !== 'verl' && engine !== 'drmas') throw new Error(`--engine must be verl or drmas (got ${values.engine})`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-engine-follow-'));
  try {
    const runDir = path.join(dir, 'run-1-bench');
    const bytes = writeRun(engine, runDir, generations);
    const s = spec(engine, runDir);
    const base = baseline(s.files.rolloutDir);

    global.gc?.();
    const rssStart = process.memoryUsage().rss;
    const rss: number[] = [];
    const heap: number[] = [];
    const sink = values['no-store'] ? null : benchStore(dir, engine, s);
    let storeMs = 0;
    let state = initialFollowState();
    let turns = 0;
    let metrics = 0;
    let polls = 0;
    let busy = 0;
    for (;;) {
      const t0 = performance.now();
      const r = followAttempt(s, state, { job: { status: 'SUCCEEDED', message: null, error_type: null, driver_exit_code: 0 }, log: null, now: Date.now() }, { maxTurns: 10_000 });
      state = r.state;
      polls++;
      for (const rec of r.records) {
        if (rec.kind === 'turn') turns++;
        else if (rec.kind === 'metric') metrics++;
      }
      busy += performance.now() - t0;
      if (sink) {
        const t1 = performance.now();
        sink.ingest.write(r.records, 1, r.state);
        storeMs += performance.now() - t1;
      }
      // With --expose-gc the live heap after a collection is measured too: what the follower keeps.
      if (global.gc) {
        global.gc();
        heap.push(process.memoryUsage().heapUsed);
      }
      rss.push(process.memoryUsage().rss);
      if (r.pendingDumps === 0) break;
    }
    const seconds = busy / 1000;
    if (turns !== generations) throw new Error(`followed ${turns} turns of ${generations}`);
    const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
    console.log(`engine-follow (${engine}): ${generations} dumped generations, ${mb(bytes)} of JSONL in ${Math.ceil(generations / 512)} step files, ${metrics} metric records`);
    console.log(`  follower   ${turns} turns in ${seconds.toFixed(2)} s = ${Math.round(turns / seconds).toLocaleString('en-US')} turns/s (${(bytes / 2 ** 20 / seconds).toFixed(1)} MiB/s), ${polls} polls of ≤ 10 000 turns`);
    console.log(`  baseline   readFileSync + JSON.parse of the same lines: ${base.lines} lines in ${base.seconds.toFixed(2)} s = ${Math.round(base.lines / base.seconds).toLocaleString('en-US')} lines/s`);
    console.log(`  ratio      follower / baseline time: ${(seconds / base.seconds).toFixed(2)}×`);
    if (sink) {
      const stored = (sink.store.db.prepare('SELECT COUNT(*) AS n FROM turns').get() as { n: number }).n;
      const skipped = turns - stored;
      console.log(`  store      ${stored} turns written${skipped ? ` (${skipped} padding copies skipped)` : ''} in ${(storeMs / 1000).toFixed(2)} s = ${Math.round(stored / (storeMs / 1000)).toLocaleString('en-US')} turns/s; follow + store ${Math.round(stored / ((busy + storeMs) / 1000)).toLocaleString('en-US')} turns/s; database ${mb(fs.statSync(sink.store.path).size)}`);
      sink.store.close();
    }
    const sorted = rss.slice(1).sort((a, b) => a - b);
    if (heap.length) console.log(`  heap       live after each poll (collected): first ${mb(heap[0])}, max ${mb(Math.max(...heap))}, last ${mb(heap[heap.length - 1])}; the follow state is ${JSON.stringify(state).length} bytes of JSON`);
    console.log(`  memory     RSS before ${mb(rssStart)}; after each poll: first ${mb(rss[0])}, median ${mb(sorted[Math.floor(sorted.length / 2)] ?? rss[0])}, max ${mb(Math.max(...rss))}, last ${mb(rss[rss.length - 1])}; peak (maxRSS) ${mb(process.resourceUsage().maxRSS * 1024)}`);
  } finally {
    if (!values.keep) fs.rmSync(dir, { recursive: true, force: true });
    else console.log(`  kept ${dir}`);
  }
}

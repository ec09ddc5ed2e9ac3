/**
 * `npm run bench -- hostile [--quick] [--fuzz-seconds N] [--seed S] [--json] [--keep]`
 *
 * The hostile-input suite of issue #36, beside the reliability bench's bad inputs: every HTTP
 * method of `marsrl serve` with malformed, oversized and adversarial payloads, model folders with
 * hostile configs and chat templates, task files that are FIFOs, links, huge or binary, names and
 * config strings with terminal control sequences, and an API key that must only reach the host it
 * is approved for. Each case states what must happen (hostile-cases.ts); after every case the
 * server must still answer (a case that froze or killed it counts as a hang or a crash, and the
 * server is started again for the next).
 *
 * Everything runs as a user runs it, on loopback: `marsrl serve` and every `marsrl` command are
 * processes of their own (hostile-harness.ts), with a canary key in their environment approved
 * for one host:port only, a listener that no key may reach, and a database seeded with runs.
 *
 * Figures: cases tried, clear errors, served as expected, crashes, hangs, unclear answers (a
 * 500, a stack trace, an error not naming what it should), secrets sent (requests reaching the
 * listener, or the approved endpoint under another name, with a key or the canary), secrets
 * written (the canary in any file of the sandbox or in a log) and data lost (rows of the seeded
 * database gone, a failed integrity check, an existing export changed). Then a fast-check fuzz of
 * the HTTP API (hostile-fuzz.ts) for --fuzz-seconds (default 60; 3 with --quick).
 *
 * The full suite also feeds a `marsrl serve-model` of the quick Solver hostile OpenAI requests (a
 * 4 MB prompt, a 5 MB body, n of 10^9 …), checking /health after each, and exports onto a 4 KiB
 * tmpfs where this machine lets it mount one. `--quick` leaves those out, and the slowest CLI
 * cases; it is what the tests run.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { runExport } from '../src-main/engine/export';
import { allowKey } from '../src-main/engine/served/key-approvals';
import { openStore, type Store } from '../src-main/engine/store';
import { Rng } from '../src-main/engine/util/rng';
import { projectRoot } from '../src-main/engine/resources';
import { corpus, serveModelCases, type HostileCase, type Kind } from './hostile-cases';
import { makeFixtures, releaseFixtures, type Fixtures } from './hostile-fixtures';
import { fuzzHttp, type FuzzResult } from './hostile-fuzz';
import { CANARY_VARIABLE, filesContaining, request, sha256, spawnMarsrl, startLegit, startTrap, untilPrinted, type Listener, type Proc } from './hostile-harness';

export interface CaseResult {
  category: string;
  input: string;
  expected: string;
  got: Kind;
  /** What came back matched what the case expects. */
  asExpected: boolean;
  detail: string;
  ms: number;
}

export interface HostileFigures {
  tried: number;
  clearErrors: number;
  served: number;
  crashes: number;
  hangs: number;
  unclear: number;
  notAsExpected: number;
  secretsSent: number;
  secretsWritten: number;
  dataLost: number;
}

export interface HostileReport {
  figures: HostileFigures;
  cases: CaseResult[];
  fuzz: FuzzResult | null;
  secrets: { trapRequests: number; sent: string[]; written: string[]; approvedHostRequests: number };
  data: { before: Record<string, number>; after: Record<string, number>; integrity: string; exportUnchanged: boolean };
  /** Cases this machine could not run, and why. */
  skipped: string[];
  seconds: number;
}

export interface HostileOptions {
  quick: boolean;
  seed: number;
  fuzzSeconds: number;
  keep?: boolean;
  /** Progress lines (stderr by default). */
  log?: (line: string) => void;
}

const TABLES = ['runs', 'episodes', 'turns', 'rewards', 'metrics', 'events'];
const AGENTS = ['solver', 'verifier1', 'corrector1'];

/** A database with runs, turns and metrics: what the hostile requests must not lose. */
function seedDatabase(store: Store, rng: Rng): number {
  const runId = store.runs.create({ name: 'seeded', config: { seed: 1 }, codeVersion: 'bench', seed: 1, status: 'done' });
  store.runs.create({ name: 'second', config: { seed: 2 }, codeVersion: 'bench', seed: 2, status: 'failed' });
  const writer = store.writer({ maxPending: 1000, flushIntervalMs: 0 });
  const now = Date.now();
  for (let step = 0; step < 4; step++) {
    const episodeId = writer.newId('episodes');
    writer.episode({ id: episodeId, runId, step, problemId: null, split: 'train', finalAnswer: null, correct: null, rounds: 1, meta: null });
    AGENTS.forEach((agent, i) => {
      const turnId = writer.newId('turns');
      const text = `A:${rng.int(1000, 9999)}`;
      writer.turn({ id: turnId, runId, episodeId, step, agent, policyId: agent.replace(/\d+$/, ''), round: i === 0 ? 0 : 1, groupId: 0, parentTurnId: null, sampleIndex: 0, prompt: 'sort 4321', text, tokenCount: text.length, parsed: text, correct: rng.next() < 0.5, formatValid: true, policyVersionMin: step, policyVersionMax: step, createdAt: now });
      writer.reward({ turnId, runId, value: 1, components: { correctness: 1 }, scheme: 'decoupled' });
    });
    writer.metric({ runId, step, wallTime: now, key: 'system/accuracy', value: rng.next() });
  }
  writer.close();
  return runId;
}

function tableCounts(databasePath: string): Record<string, number> {
  const db = new Database(databasePath, { readonly: true, fileMustExist: true });
  try {
    return Object.fromEntries(TABLES.map((t) => [t, (db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n]));
  } finally {
    db.close();
  }
}

function integrity(databasePath: string): string {
  const db = new Database(databasePath, { readonly: true, fileMustExist: true });
  try {
    return (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check).join('; ');
  } finally {
    db.close();
  }
}

/** `marsrl serve` on the sandbox's database, API only, on a free port. */
async function startServer(databasePath: string, env: NodeJS.ProcessEnv): Promise<{ proc: Proc; port: number }> {
  const proc = spawnMarsrl(['serve', '--db', databasePath, '--port', '0', '--no-build'], env);
  const match = await untilPrinted(proc, /Open: http:\/\/127\.0\.0\.1:(\d+)\//, 60_000);
  return { proc, port: Number(match[1]) };
}

async function alive(port: number): Promise<boolean> {
  const a = await request(port, { path: '/api/appInfo', body: '[]', timeoutMs: 10_000 });
  return a.status === 200;
}

/** Run one case with a guard (a case whose own request never returns is a hang). */
async function runCase(c: HostileCase, guardMs: number): Promise<{ got: Kind; detail: string; ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<{ kind: Kind; detail: string }>((resolve) => (timer = setTimeout(() => resolve({ kind: 'hang', detail: `no outcome within ${guardMs} ms` }), guardMs)));
  try {
    const o = await Promise.race([c.run().catch((error: unknown) => ({ kind: 'unclear' as Kind, detail: `the case itself failed: ${(error as Error).message}` })), guard]);
    return { got: o.kind, detail: o.detail, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/** Requests that carried a key or the canary where no key may go. */
function leaks(trap: Listener, legit: Listener, canary: string): string[] {
  const carries = (r: Listener['received'][number]) => r.authorization !== null || r.body.includes(canary) || r.url.includes(canary);
  const approvedHost = `127.0.0.1:${legit.port}`;
  return [
    ...trap.received.filter(carries).map((r) => `trap: ${r.method} ${r.url} (authorization ${r.authorization === null ? 'none' : 'present'})`),
    ...legit.received.filter((r) => r.host !== approvedHost && carries(r)).map((r) => `approved endpoint reached as ${r.host}: ${r.method} ${r.url}`),
  ];
}

/** The serve-model cases against a `marsrl serve-model` of the quick Solver, alive after each. */
async function serveModelPhase(env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<CaseResult[]> {
  const start = async () => {
    const proc = spawnMarsrl(['serve-model', path.join(projectRoot(), 'resources', 'checkpoints', 'quick', 'solver'), '--port', '0'], env);
    return { proc, port: Number((await untilPrinted(proc, /Serving on http:\/\/127\.0\.0\.1:(\d+)\/v1/, 120_000))[1]) };
  };
  let served = await start();
  const results: CaseResult[] = [];
  try {
    for (const c of serveModelCases(() => served.port)) {
      const outcome = await runCase(c, 180_000);
      let { got, detail } = outcome;
      const health = await request(served.port, { method: 'GET', path: '/health', timeoutMs: 10_000 });
      if (health.status !== 200) {
        got = served.proc.child.exitCode !== null ? 'crash' : 'hang';
        detail = `serve-model stopped answering after this case; ${detail}`;
        await served.proc.stop();
        served = await start();
      }
      const asExpected = got === c.expect;
      results.push({ category: c.category, input: c.input, expected: c.expected, got, asExpected, detail, ms: outcome.ms });
      if (!asExpected) log(`  serve-model case NOT AS EXPECTED: ${c.input} → ${got}: ${detail}`);
    }
  } finally {
    await served.proc.stop();
  }
  return results;
}

export async function runHostile(options: HostileOptions): Promise<HostileReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const started = Date.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-hostile-'));
  const home = path.join(root, 'home');
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-hostile-outside-'));
  const canary = `canary-${crypto.randomBytes(12).toString('hex')}`;
  const env: NodeJS.ProcessEnv = { MARSRL_HOME: home, [CANARY_VARIABLE]: canary };
  const trap = await startTrap();
  const legit = await startLegit(canary, trap.url);
  let server: { proc: Proc; port: number } | null = null;
  let fixtures: Fixtures | null = null;
  const serverLogs: string[] = [];
  try {
    // The one approval on this machine: the canary variable for the approved endpoint's host:port.
    allowKey(CANARY_VARIABLE, `127.0.0.1:${legit.port}`, env);
    const fx = makeFixtures(root, trap.url, legit.url, options.seed, { tinyDisk: !options.quick });
    fixtures = fx;
    const databasePath = path.join(root, 'served.db');
    const store = openStore(databasePath);
    const seededRunId = seedDatabase(store, new Rng(options.seed, 'hostile-seed'));
    const existingExport = path.join(home, 'exports', 'existing.jsonl');
    fs.mkdirSync(path.dirname(existingExport), { recursive: true });
    await runExport(store, { runs: [seededRunId], format: 'trajectories', container: 'jsonl', out: existingExport });
    store.close();
    const exportHash = sha256(existingExport);
    const before = tableCounts(databasePath);

    server = await startServer(databasePath, env);
    const ctx = { fx, servePort: () => server!.port, databasePath, env, home, trap, legit, outside, seededRunId, cliTimeoutMs: 120_000 };
    const cases = corpus(ctx).filter((c) => !options.quick || !c.full);
    const results: CaseResult[] = [];
    for (const [i, c] of cases.entries()) {
      const outcome = await runCase(c, 180_000);
      let { got, detail } = outcome;
      // After every case the server must answer; if it does not, the case froze or killed it.
      if (!(await alive(server.port))) {
        const exited = server.proc.child.exitCode !== null || server.proc.child.signalCode !== null;
        got = exited ? 'crash' : 'hang';
        detail = `the server ${exited ? `exited (${server.proc.child.exitCode ?? server.proc.child.signalCode})` : 'stopped answering'} after this case; ${detail}`;
        serverLogs.push(server.proc.stderr());
        await server.proc.stop();
        server = await startServer(databasePath, env);
      }
      const asExpected = got === (c.expect === 'error' ? 'error' : 'served');
      results.push({ category: c.category, input: c.input, expected: c.expected, got, asExpected, detail, ms: outcome.ms });
      if (!asExpected) log(`  case ${i + 1}/${cases.length} NOT AS EXPECTED: ${c.input} → ${got}: ${detail}`);
      else if ((i + 1) % 25 === 0) log(`  ${i + 1}/${cases.length} cases`);
    }

    if (!options.quick) results.push(...(await serveModelPhase(env, log)));

    const fuzz = options.fuzzSeconds > 0 ? await fuzzHttp({ port: () => server!.port, seed: options.seed, seconds: options.fuzzSeconds, runId: seededRunId, modelFolder: fx.models.good, serverLog: () => server!.proc.stderr() }) : null;
    serverLogs.push(server.proc.stdout(), server.proc.stderr());
    await server.proc.stop();
    server = null;

    const after = tableCounts(databasePath);
    const check = integrity(databasePath);
    const exportUnchanged = sha256(existingExport) === exportHash;
    const lost = TABLES.reduce((n, t) => n + Math.max(0, before[t] - after[t]), 0) + (check === 'ok' ? 0 : 1) + (exportUnchanged ? 0 : 1);
    const sent = leaks(trap, legit, canary);
    const written = [...filesContaining(root, canary), ...serverLogs.filter((l) => l.includes(canary)).map(() => 'a marsrl serve log')];
    const count = (k: Kind) => results.filter((r) => r.got === k).length;
    return {
      figures: {
        tried: results.length,
        clearErrors: results.filter((r) => r.got === 'error' && r.asExpected).length,
        served: results.filter((r) => r.got === 'served' && r.asExpected).length,
        crashes: count('crash') + (fuzz && !fuzz.aliveAtEnd ? 1 : 0),
        hangs: count('hang') + (fuzz?.hangs ?? 0),
        unclear: count('unclear'),
        notAsExpected: results.filter((r) => !r.asExpected).length,
        secretsSent: sent.length,
        secretsWritten: written.length,
        dataLost: lost,
      },
      cases: results,
      fuzz,
      secrets: { trapRequests: trap.received.length, sent, written, approvedHostRequests: legit.received.filter((r) => r.host === `127.0.0.1:${legit.port}`).length },
      data: { before, after, integrity: check, exportUnchanged },
      skipped: 'skipped' in fx.tinyDisk && !options.quick ? [fx.tinyDisk.skipped] : [],
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    if (server) await server.proc.stop();
    if (fixtures) releaseFixtures(fixtures);
    await trap.close();
    await legit.close();
    if (!options.keep) {
      fs.rmSync(root, { recursive: true, force: true });
      fs.rmSync(outside, { recursive: true, force: true });
    } else log(`sandbox kept: ${root}`);
  }
}

export function printReport(r: HostileReport, out: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): void {
  const f = r.figures;
  out(`Hostile inputs: ${f.tried} cases in ${r.seconds.toFixed(0)} s`);
  const byCategory = new Map<string, CaseResult[]>();
  for (const c of r.cases) byCategory.set(c.category, [...(byCategory.get(c.category) ?? []), c]);
  for (const [category, cs] of byCategory) out(`  ${category.padEnd(16)} ${String(cs.length).padStart(4)} tried, ${cs.filter((c) => c.asExpected).length} as expected`);
  out(`  clear errors ${f.clearErrors}, served as expected ${f.served}, crashes ${f.crashes}, hangs ${f.hangs}, unclear ${f.unclear}, not as expected ${f.notAsExpected}`);
  out(`  secrets sent ${f.secretsSent} (listener got ${r.secrets.trapRequests} requests, none may carry a key; the approved host got ${r.secrets.approvedHostRequests}), secrets written ${f.secretsWritten}, data lost ${f.dataLost} (integrity ${r.data.integrity})`);
  for (const s of r.skipped) out(`  skipped: ${s}`);
  for (const c of r.cases.filter((x) => !x.asExpected)) out(`  NOT AS EXPECTED [${c.category}] ${c.input}: expected ${c.expected}; got ${c.got}: ${c.detail}`);
  if (r.fuzz) {
    const z = r.fuzz;
    out(`Fuzz (fast-check, seed ${z.seed}, ${z.seconds} s): ${z.requests} requests; statuses ${Object.entries(z.statuses).map(([s, n]) => `${s}×${n}`).join(', ')}`);
    out(`  500s ${z.serverErrors} (without a logged cause ${z.unloggedServerErrors}), hangs ${z.hangs}, unexpected ${z.unexpectedCount}, server alive at the end: ${z.aliveAtEnd ? 'yes' : 'NO'}`);
    for (const u of z.unexpected) out(`  unexpected: ${u.request} → ${u.answer}`);
    for (const e of z.serverErrorSamples) out(`  500 (cause logged): ${e}`);
  }
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { quick: { type: 'boolean', default: false }, 'fuzz-seconds': { type: 'string' }, seed: { type: 'string', default: '36' }, json: { type: 'boolean', default: false }, keep: { type: 'boolean', default: false } } });
  const quick = values.quick ?? false;
  const fuzzSeconds = values['fuzz-seconds'] === undefined ? (quick ? 3 : 60) : Number(values['fuzz-seconds']);
  const seed = Number(values.seed);
  if (!Number.isInteger(seed) || !(fuzzSeconds >= 0)) throw new Error('--seed must be an integer and --fuzz-seconds a number of seconds (0 skips the fuzz)');
  const report = await runHostile({ quick, seed, fuzzSeconds, keep: values.keep });
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else printReport(report);
}

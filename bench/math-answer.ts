/**
 * `npm run bench -- math-answer [--repeats N] [--steps N] [--no-run] [--alone] [--json]`
 *
 * The math answer checker (issue #34) against its baseline measured in the same run, the checker
 * as it was at 4ee5cee (bench/math-answer-v1.ts):
 *  - the judged cases of test/fixtures (the shared corpus and the cases collected apart): each
 *    case judged N times (default 5) after a warm-up pass, the median per case; then the median,
 *    p99 and worst over the cases, for each checker; and each checker's agreement with the sources
 *    (the new one outside its table of rules not followed, false positives counted);
 *  - adversarial answers: the new checker's time on each (bounded), and the baseline's on two of
 *    them in a child process killed after 15 s;
 *  - a math run's judging share: a short `tiny-qwen` run (N RL steps, default 3, from its shipped
 *    warm starts, evaluation on 8 problems), then every answer turn of each step judged again by
 *    both checkers: judging time / the step's time. The generator's answers are integers (the fast
 *    path), so the same share is also given with the corpus's pairs in place of the run's answers
 *    (as many per step as the run judged), for a run on MATH-style answers; and `rejudge --dry-run`
 *    of that run, made with today's checker, which must change no verdict;
 *  - with --alone, every case judged on a freshly built engine of its own (about 0.1–0.3 s a case):
 *    the verdicts that differ from the in-order ones (there must be none).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openStore } from '../src-main/engine/store';
import { projectRoot } from '../src-main/engine/resources';
import { RewoundEngine } from '../src-main/engine/tasks/math-answer/engine';
import { checkerStats, judgeMathAnswer, MATH_CHECKER_FULL_VERSION, stopCheckerThread } from '../src-main/engine/tasks/math-answer';
import { createRunManager } from '../src-main/runner/manager';
import { rejudgeRun } from '../src-main/engine/rejudge';
import * as v1 from './math-answer-v1';

interface Case {
  id: string;
  gold: string;
  prediction: string | null;
  expected: boolean;
}

const fixtures = () => path.join(projectRoot(), 'test', 'fixtures');
function loadCases(name: string): Case[] {
  return fs
    .readFileSync(path.join(fixtures(), name), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Case);
}

type Judge = (reference: string, response: string) => boolean;
const judgeNew: Judge = (reference, response) => judgeMathAnswer(reference, response).correct;
/**
 * The baseline as issue #14's rollout used it (the extracted answer against the reference), and a
 * response it finds no answer in compared whole, as its own bare answer (its normaliser unwraps
 * `$…$` and boxes), so bare predictions are judged by both checkers.
 */
const judgeOld: Judge = (reference, response) => v1.mathAnswersEqual(reference, v1.extractFinalAnswer(response).answer ?? response);

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function timeCases(cases: Case[], judge: Judge, repeats: number): { perCase: number[]; verdicts: Map<string, boolean> } {
  const verdicts = new Map<string, boolean>();
  for (const c of cases) verdicts.set(c.id, judge(c.gold, c.prediction ?? '')); // warm-up (engines load)
  const perCase = cases.map((c) => {
    const times: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      judge(c.gold, c.prediction ?? '');
      times.push(performance.now() - t0);
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
  });
  return { perCase, verdicts };
}

const ms = (v: number) => (v < 1 ? v.toFixed(3) : v.toFixed(1));

function summary(perCase: number[]): { median: number; p99: number; worst: number } {
  const sorted = [...perCase].sort((a, b) => a - b);
  return { median: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), worst: sorted[sorted.length - 1] };
}

function agreement(cases: Case[], verdicts: Map<string, boolean>, table: Set<string>) {
  const followed = cases.filter((c) => !table.has(c.id));
  const agree = followed.filter((c) => verdicts.get(c.id) === c.expected).length;
  const falsePositives = followed.filter((c) => verdicts.get(c.id) && !c.expected).length;
  const allAgree = cases.filter((c) => verdicts.get(c.id) === c.expected).length;
  const allFalsePositives = cases.filter((c) => verdicts.get(c.id) && !c.expected).length;
  return { followed: followed.length, agree, falsePositives, all: cases.length, allAgree, allFalsePositives };
}

const ADVERSARIAL = ['9^{9^{9^{9}}}', '(x+1)^{200}', '100000!', '\\sum_{k=1}^{10^{9}} k', '\\sum_{k=1}^{9999} k^{9999}', `${'('.repeat(3000)}1${')'.repeat(3000)}`, `\\frac{1}{${'\\frac{1}{'.repeat(25)}x${'}'.repeat(26)}`];

/** The baseline on one adversarial answer, in a child process killed after 15 s. */
function oldInChild(answer: string): string {
  const code = `const m = await import(${JSON.stringify(path.join(projectRoot(), 'bench', 'math-answer-v1.ts'))}); const t = performance.now(); m.mathAnswersEqual('5', ${JSON.stringify(answer)}); console.log((performance.now() - t).toFixed(0));`;
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 15_000 });
  if (r.error || r.status !== 0) return `> ${((Date.now() - t0) / 1000).toFixed(0)} s (killed)`;
  return `${r.stdout.trim()} ms`;
}

interface StepShare {
  step: number;
  stepS: number;
  answers: number;
  oldMs: number;
  newMs: number;
  oldCorpusMs: number;
  newCorpusMs: number;
}

/** A short tiny-qwen run, then each step's answer turns judged by both checkers. */
async function runShare(steps: number, cases: Case[], log: (line: string) => void): Promise<StepShare[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-math-answer-'));
  const databasePath = path.join(dir, 'bench.db');
  const store = openStore(databasePath);
  try {
    const manager = createRunManager({ store, databasePath });
    const config = { optimization: { steps, checkpoint_every: 0 }, eval: { every: 0, problems: 8 }, pipeline: { mode: 'sync' } };
    const { runId } = await manager.start({ preset: 'tiny-qwen', config, name: 'bench math-answer' });
    await manager.waitForExit(runId);
    const run = store.runs.get(runId)!;
    log(`  run ${runId}: ${run.status}${run.statusReason ? ` (${run.statusReason})` : ''}, checker ${run.checkerVersion}`);
    const rejudged = rejudgeRun(store, runId, { write: false });
    log(`  rejudge --dry-run of that run (made with today's checker): ${rejudged.turnsChecked} turns, ${rejudged.changed.length} verdicts changed`);
    const turns = [];
    for (let after = 0; ; ) {
      const page = store.rejudges.turnsPage(runId, after, 5000);
      if (page.length === 0) break;
      turns.push(...page);
      after = page[page.length - 1].id;
    }
    const answers = turns.filter((t) => t.split === 'train' && !t.agent.startsWith('verifier'));
    const shares: StepShare[] = [];
    let corpusAt = 0;
    for (let step = 0; step < steps; step++) {
      const stepS = store.metrics.series(runId, 'perf/step_s').items.find((p) => p.step === step)?.value ?? sumAt(store, runId, step);
      const own = answers.filter((t) => t.step === step);
      if (own.length === 0 || !Number.isFinite(stepS)) continue;
      const timed = (judge: Judge, pairs: [string, string][]) => {
        const t0 = performance.now();
        for (const [reference, response] of pairs) judge(reference, response);
        return performance.now() - t0;
      };
      const ownPairs = own.map((t): [string, string] => [t.reference, t.text]);
      const corpusPairs = own.map((): [string, string] => {
        const c = cases[corpusAt++ % cases.length];
        return [c.gold, c.prediction ?? ''];
      });
      shares.push({ step, stepS, answers: own.length, oldMs: timed(judgeOld, ownPairs), newMs: timed(judgeNew, ownPairs), oldCorpusMs: timed(judgeOld, corpusPairs), newCorpusMs: timed(judgeNew, corpusPairs) });
    }
    return shares;
  } finally {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function sumAt(store: ReturnType<typeof openStore>, runId: number, step: number): number {
  const at = (key: string) => store.metrics.series(runId, key).items.find((p) => p.step === step)?.value ?? NaN;
  return at('perf/rollout_s') + at('perf/update_s');
}

function alone(cases: Case[], inOrder: Map<string, boolean>): { differ: string[]; seconds: number } {
  const t0 = performance.now();
  const differ = cases.filter((c) => judgeMathAnswer(c.gold, c.prediction ?? '', { engine: new RewoundEngine() }).correct !== inOrder.get(c.id)).map((c) => c.id);
  return { differ, seconds: (performance.now() - t0) / 1000 };
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { repeats: { type: 'string', default: '5' }, steps: { type: 'string', default: '3' }, 'no-run': { type: 'boolean', default: false }, alone: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } } });
  const repeats = Number(values.repeats);
  const steps = Number(values.steps);
  if (!Number.isInteger(repeats) || repeats < 1 || repeats > 100) throw new Error(`--repeats must be an integer from 1 to 100 (got ${values.repeats})`);
  if (!Number.isInteger(steps) || steps < 1 || steps > 50) throw new Error(`--steps must be an integer from 1 to 50 (got ${values.steps})`);
  const log = (line: string) => (values.json ? process.stderr.write(`${line}\n`) : console.log(line));
  const shared = loadCases('math-answer-cases.jsonl');
  const extra = loadCases('math-answer-extra-cases.jsonl');
  const cases = [...shared, ...extra];
  const table = new Set((JSON.parse(fs.readFileSync(path.join(fixtures(), 'math-answer-not-followed.json'), 'utf8')) as { cases: { id: string }[] }).cases.map((c) => c.id));
  log(`bench math-answer: ${cases.length} judged cases (${shared.length} shared, ${extra.length} collected apart), ${repeats} repeats, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  log(`  checker ${MATH_CHECKER_FULL_VERSION} against the baseline of 4ee5cee`);
  try {
    const before = timeCases(cases, judgeOld, repeats);
    const after = timeCases(cases, judgeNew, repeats);
    const timeFigures = { before: summary(before.perCase), after: summary(after.perCase) };
    for (const [name, t] of Object.entries(timeFigures)) log(`  time per case, ${name.padEnd(6)}: median ${ms(t.median)} ms, p99 ${ms(t.p99)} ms, worst ${ms(t.worst)} ms`);
    const agree = { shared: { before: agreement(shared, before.verdicts, new Set()), after: agreement(shared, after.verdicts, table) }, extra: { before: agreement(extra, before.verdicts, new Set()), after: agreement(extra, after.verdicts, table) } };
    for (const [name, a] of Object.entries(agree)) {
      log(`  ${name.padEnd(6)} before: ${a.before.allAgree}/${a.before.all} agree (${((100 * a.before.allAgree) / a.before.all).toFixed(1)}%), ${a.before.allFalsePositives} false positives`);
      log(`  ${name.padEnd(6)} after : ${a.after.allAgree}/${a.after.all} agree; outside the table ${a.after.agree}/${a.after.followed} (${((100 * a.after.agree) / a.after.followed).toFixed(1)}%), ${a.after.falsePositives} false positives`);
    }
    const adversarial = ADVERSARIAL.map((answer) => {
      const t0 = performance.now();
      const j = judgeMathAnswer('5', `\\boxed{${answer}}`);
      return { answer: answer.length > 40 ? `${answer.slice(0, 37)}…` : answer, ms: performance.now() - t0, reason: j.reason };
    });
    for (const a of adversarial) log(`  adversarial ${a.answer.padEnd(40)} ${ms(a.ms).padStart(8)} ms  ${a.reason.slice(0, 70)}`);
    const oldAdversarial = ['9^{9^{9^{9}}}', '\\sum_{k=1}^{10^{9}} k'].map((answer) => ({ answer, time: oldInChild(answer) }));
    for (const a of oldAdversarial) log(`  adversarial, baseline ${a.answer.padEnd(28)} ${a.time}`);
    const shares = values['no-run'] ? [] : await runShare(steps, cases, log);
    for (const s of shares) {
      const pct = (judge: number) => `${((100 * judge) / 1000 / s.stepS).toFixed(3)}%`;
      log(`  step ${s.step}: ${s.stepS.toFixed(1)} s, ${s.answers} answers judged: before ${ms(s.oldMs)} ms (${pct(s.oldMs)}), after ${ms(s.newMs)} ms (${pct(s.newMs)}); with corpus answers before ${ms(s.oldCorpusMs)} ms (${pct(s.oldCorpusMs)}), after ${ms(s.newCorpusMs)} ms (${pct(s.newCorpusMs)})`);
    }
    const isolation = values.alone ? alone(cases, after.verdicts) : null;
    if (isolation) log(`  alone (a fresh engine per case): ${isolation.differ.length} verdicts differ from the in-order ones${isolation.differ.length ? ` (${isolation.differ.join(', ')})` : ''}, ${isolation.seconds.toFixed(0)} s`);
    log(`  checker: ${JSON.stringify(checkerStats())}`);
    if (values.json) console.log(JSON.stringify({ checker: MATH_CHECKER_FULL_VERSION, repeats, time: timeFigures, agreement: agree, adversarial, oldAdversarial, shares, isolation }));
  } finally {
    stopCheckerThread();
  }
}

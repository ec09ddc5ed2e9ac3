/**
 * A database that looks like training wrote it, for the server and end-to-end tests: runs with
 * resolved configs, Solver → Verifier1 → Corrector1 episodes on `sort` with segments, decoupled
 * rewards and agent-wise advantages, per-agent and system metrics over steps, held-out
 * evaluations, events and a pipeline timeline. Written through the store's BatchWriter, the way
 * the trainer writes. Deterministic (seeded), so screenshots are comparable between runs.
 */
import { presetDocument, deepMerge } from '../../../src-main/engine/config/load';
import { resolveConfig } from '../../../src-main/engine/preflight';
import type { BatchWriter, Store } from '../../../src-main/engine/store';
import { Rng } from '../../../src-main/engine/util/rng';
import { episodeRow, turnRow } from './rows';

export const AGENTS = ['solver', 'verifier1', 'corrector1'] as const;

export interface SeededRun {
  id: number;
  name: string;
  steps: number;
  /** Milliseconds since the epoch of step 0. */
  startedAt: number;
}

export interface Seeded {
  done: SeededRun;
  running: SeededRun;
  failed: SeededRun;
  /** An episode of the done run whose Verifier rejected a wrong solution and a Corrector fixed it. */
  rejectingEpisodeId: number;
}

const sortedDigits = (digits: string) => digits.split('').sort().join('');
const counts = (digits: string) => Array.from({ length: 10 }, (_, d) => digits.split('').filter((c) => Number(c) === d).length).join('');

function solverText(answer: string, question: string): string {
  return `c:${counts(question)} A:${answer}`;
}

function verifierText(question: string, answer: string, verdict: 'ok' | 'no'): string {
  const pairs = answer
    .split('')
    .map((c, i) => (i === 0 ? c : `${answer[i - 1] <= c ? (answer[i - 1] === c ? '=' : '<') : '>'}${c}`))
    .join('');
  return `c:${counts(question)} ${counts(answer)} o:${pairs} V:${verdict}`;
}

/** A plausible wrong answer: two digits swapped, or one digit changed. */
function corrupt(answer: string, rng: Rng): string {
  const chars = answer.split('');
  if (rng.next() < 0.6) {
    const i = rng.int(0, chars.length - 2);
    [chars[i], chars[i + 1]] = [chars[i + 1], chars[i]];
    if (chars.join('') === answer) chars[i] = String((Number(chars[i]) + 1) % 10);
  } else {
    const i = rng.int(0, chars.length - 1);
    chars[i] = String((Number(chars[i]) + 1 + rng.int(0, 7)) % 10);
  }
  return chars.join('');
}

/** Splits a text into segments of `size` characters (one character is one token here). */
function segmentsOf(text: string, size: number): { start: number; end: number; text: string }[] {
  const out = [];
  for (let start = 0; start < text.length; start += size) out.push({ start, end: Math.min(text.length, start + size), text: text.slice(start, start + size) });
  return out.length ? out : [{ start: 0, end: 0, text: '' }];
}

interface TurnSpec {
  agent: string;
  round: number;
  groupId: number;
  parent: number | null;
  sampleIndex: number;
  prompt: string;
  text: string;
  parsed: string | null;
  correct: boolean;
  reward: number;
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}
function std(values: number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  return Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / (values.length - 1));
}

/** One episode: Solver group, Verifier1 on two selected solutions, Corrector1 on two rejections. */
export function writeEpisode(writer: BatchWriter, runId: number, step: number, split: 'train' | 'test', rng: Rng, at: number, forceRejection: boolean): { episodeId: number; rejected: boolean } {
  const digits = Array.from({ length: 8 }, () => rng.int(0, 9)).join('');
  const question = `sort ${digits}`;
  const reference = sortedDigits(digits);
  const problemId = writer.newId('problems');
  writer.problem({ id: problemId, runId, split, family: 'sort', problemKey: digits, question, answer: reference, meta: { difficulty: 3 } });
  const episodeId = writer.newId('episodes');
  writer.episode(episodeRow({ id: episodeId, runId, step, problemId, split, rounds: 0 }));

  const specs: (TurnSpec & { id: number })[] = [];
  const add = (spec: TurnSpec) => {
    const id = writer.newId('turns');
    specs.push({ ...spec, id });
    return id;
  };

  const accuracy = 0.45 + 0.4 * Math.min(1, step / 60);
  const solverIds: { id: number; answer: string; correct: boolean }[] = [];
  for (let s = 0; s < 8; s++) {
    const correct = forceRejection ? s % 2 === 0 : rng.next() < accuracy;
    const answer = correct ? reference : corrupt(reference, rng);
    const id = add({ agent: 'solver', round: 0, groupId: 0, parent: null, sampleIndex: s, prompt: question, text: solverText(answer, digits), parsed: answer, correct, reward: correct ? 1 : 0 });
    solverIds.push({ id, answer, correct });
  }
  // Adaptive selection: the Verifier prefers incorrect solutions.
  const wrong = solverIds.filter((s) => !s.correct);
  const right = solverIds.filter((s) => s.correct);
  const selected = [...wrong, ...right].slice(0, 2);
  let rejected = false;
  let finalAnswer = solverIds[0].answer;
  let finalCorrect = solverIds[0].correct;
  let rounds = 0;
  selected.forEach((solution, g) => {
    rounds = 1;
    const verdicts: { id: number; verdict: 'ok' | 'no' }[] = [];
    for (let s = 0; s < 4; s++) {
      // A fair Verifier: mostly right, sometimes fooled.
      const judgesRight = forceRejection || rng.next() < 0.8;
      const verdict: 'ok' | 'no' = solution.correct === judgesRight ? 'ok' : 'no';
      const id = add({
        agent: 'verifier1', round: 1, groupId: 1 + g, parent: solution.id, sampleIndex: s,
        prompt: `${question}|${solverText(solution.answer, digits)}`, text: verifierText(digits, solution.answer, verdict),
        parsed: verdict === 'ok' ? 'approve' : 'reject', correct: judgesRight, reward: judgesRight ? 1 : 0,
      });
      verdicts.push({ id, verdict });
    }
    const rejection = verdicts.find((v) => v.verdict === 'no');
    if (!rejection || g > 0) return;
    rejected = true;
    for (let s = 0; s < 4; s++) {
      const fixes = rng.next() < 0.55 || (forceRejection && s === 0);
      const answer = fixes ? reference : corrupt(reference, rng);
      add({
        agent: 'corrector1', round: 1, groupId: 3, parent: rejection.id, sampleIndex: s,
        prompt: `${question}|${solverText(solution.answer, digits)}|V:no`, text: solverText(answer, digits),
        parsed: answer, correct: fixes, reward: fixes ? 1 : 0,
      });
      if (s === 0) {
        finalAnswer = answer;
        finalCorrect = fixes;
      }
    }
  });

  // Agent-wise advantages: (R − μ_k) / (σ_k + ε) over the agent's samples of this prompt.
  const byAgent = new Map<string, typeof specs>();
  for (const spec of specs) byAgent.set(spec.agent, [...(byAgent.get(spec.agent) ?? []), spec]);
  let clock = at;
  for (const spec of specs) {
    const group = byAgent.get(spec.agent)!;
    const rewards = group.map((g) => g.reward);
    const mu = mean(rewards);
    const sigma = std(rewards);
    writer.turn(turnRow({
      id: spec.id, runId, episodeId, step, agent: spec.agent, round: spec.round, groupId: spec.groupId, parentTurnId: spec.parent,
      sampleIndex: spec.sampleIndex, prompt: spec.prompt, text: spec.text, parsed: spec.parsed, correct: spec.correct,
      policyVersionMin: Math.max(0, step - 1), createdAt: clock,
    }));
    segmentsOf(spec.text, 16).forEach((seg, segIndex, all) => {
      writer.segment({
        id: writer.newId('segments'), turnId: spec.id, runId, segIndex, tokenStart: seg.start, tokenEnd: seg.end, text: seg.text,
        finished: segIndex === all.length - 1, policyVersion: Math.max(0, step - (segIndex === 0 ? 1 : 0)),
        startedAt: clock, endedAt: clock + 40, worker: 'rollout-0',
      });
      clock += 40;
    });
    writer.reward({ turnId: spec.id, runId, value: spec.reward, components: { correctness: spec.reward, format: 0 }, scheme: 'decoupled' });
    writer.advantage({ turnId: spec.id, runId, value: (spec.reward - mu) / (sigma + 1e-6), mode: 'agentwise', groupKey: `${episodeId}:${spec.agent}`, mu, sigma });
  }
  writer.episodeOutcome(episodeId, finalAnswer, finalCorrect, rounds);
  return { episodeId, rejected };
}

/** Training metrics of one step, shaped like the trainer's (names from DESIGN.md). */
export function stepMetrics(step: number, rng: Rng, spikeAt: number | null = null): Record<string, number> {
  const progress = Math.min(1, step / 60);
  const noise = () => (rng.next() - 0.5) * 0.08;
  const out: Record<string, number> = {};
  const rewardMeans: Record<string, number> = { solver: 0.45 + 0.4 * progress, verifier1: 0.7 + 0.15 * progress, corrector1: 0.3 + 0.2 * progress };
  for (const agent of AGENTS) {
    out[`${agent}/reward/mean`] = Math.min(1, Math.max(0, rewardMeans[agent] + noise()));
    out[`${agent}/advantage/mean`] = noise() * 0.2;
    out[`${agent}/advantage/std`] = 0.9 + noise();
    out[`${agent}/grad_norm`] = (agent === 'corrector1' ? 1.5 : 0.9) * (1 + 4 * Math.exp(-step / 8)) * (1 + noise()) + (step === spikeAt ? 9 : 0);
    out[`${agent}/entropy`] = 1.6 * Math.exp(-step / 80) + noise() * 0.2;
    out[`${agent}/kl`] = 0.002 * step * (1 + noise());
    out[`${agent}/response_length`] = (agent === 'verifier1' ? 40 : 23) + noise() * 20;
    out[`${agent}/inflation`] = agent === 'corrector1' ? 1.4 + noise() : 0.9 + noise();
  }
  out['system/accuracy'] = Math.min(1, 0.5 + 0.4 * progress + noise());
  out['solver/accuracy'] = Math.min(1, 0.45 + 0.4 * progress + noise());
  out['verifier1/precision'] = 0.9 + noise() * 0.5;
  out['verifier1/recall'] = 0.2 + 0.2 * progress + noise();
  out['corrector1/fix_rate'] = 0.3 + 0.25 * progress + noise();
  out['perf/tokens_per_s'] = 5200 + noise() * 4000;
  out['pipeline/staleness'] = step % 3 === 0 ? 1 : 0;
  return out;
}

export function evalMetrics(step: number, rng: Rng): Record<string, number> {
  const progress = Math.min(1, step / 60);
  const noise = () => (rng.next() - 0.5) * 0.04;
  return {
    'eval/system/accuracy': 0.52 + 0.36 * progress + noise(),
    'eval/solver/accuracy': 0.48 + 0.34 * progress + noise(),
    'eval/system/avg@4': 0.5 + 0.35 * progress + noise(),
    'eval/system/pass@4': 0.7 + 0.25 * progress + noise(),
    'eval/verifier/precision': 0.93 + noise(),
    'eval/verifier/recall': 0.25 + 0.15 * progress + noise(),
    'eval/corrector/fix_rate': 0.35 + 0.2 * progress + noise(),
    'eval/control/oracle_verifier/accuracy': 0.6 + 0.32 * progress + noise(),
    'eval/control/corrector_always/accuracy': 0.45 + 0.3 * progress + noise(),
  };
}

/** Metrics, timeline spans and a checkpoint event of steps [from, to), as a trainer logs them. */
export function writeSteps(store: Store, writer: BatchWriter, run: SeededRun, from: number, to: number, rng: Rng, options: { spikeAt?: number; evalEvery?: number } = {}): void {
  const evalEvery = options.evalEvery ?? 10;
  for (let step = from; step < to; step++) {
    const wall = step * 3.1 + rng.next() * 0.4;
    for (const [key, value] of Object.entries(stepMetrics(step, rng, options.spikeAt ?? null))) writer.metric({ runId: run.id, step, wallTime: wall, key, value });
    if (step % evalEvery === 0 || step === run.steps - 1) {
      for (const [key, value] of Object.entries(evalMetrics(step, rng))) writer.metric({ runId: run.id, step, wallTime: wall, key, value });
    }
    // Pipeline: each agent's segments on the rollout worker, its update on the trainer as soon
    // as its outputs are in, overlapping the next agent's rollout.
    let t = run.startedAt + wall * 1000;
    for (const agent of AGENTS) {
      const segments = agent === 'solver' ? 3 : 2;
      for (let s = 0; s < segments; s++) {
        const d = 180 + rng.next() * 120;
        writer.timelineSpan({ runId: run.id, kind: 'segment', agent, worker: 'rollout-0', step, policyVersion: step, startedAt: t, endedAt: t + d, tokens: 16 * (agent === 'solver' ? 64 : 32) });
        t += d;
      }
      const u = 250 + rng.next() * 150;
      writer.timelineSpan({ runId: run.id, kind: 'update', agent, worker: 'trainer', step, policyVersion: step + 1, startedAt: t, endedAt: t + u, tokens: 0 });
    }
    if (step === options.spikeAt) {
      store.events.insertEvent.run({ runId: run.id, step, time: run.startedAt + wall * 1000, level: 'warning', kind: 'grad_spike', message: 'corrector1/grad_norm spiked to 6.8× its running mean', data: null });
    }
    if (step > 0 && step % 10 === 0) {
      writer.timelineSpan({ runId: run.id, kind: 'eval', agent: 'system', worker: 'evaluator', step, policyVersion: step, startedAt: t, endedAt: t + 900, tokens: 0 });
      store.events.insertEvent.run({ runId: run.id, step, time: run.startedAt + wall * 1000, level: 'info', kind: 'checkpoint', message: `checkpoint saved at step ${step}`, data: JSON.stringify({ step }) });
    }
  }
}

export function seedStudio(store: Store, now = Date.now()): Seeded {
  const rng = new Rng(11, 'e2e-seed');
  const quick = presetDocument('quick');
  const configOf = (over: Record<string, unknown>) => resolveConfig(deepMerge(quick, over)) as unknown as Record<string, unknown>;

  const failedId = store.runs.create({ name: 'sort8 shared/global lr1e-3', preset: 'quick', config: configOf({ reward: { scheme: 'shared' }, advantage: { mode: 'global' }, optimization: { steps: 30 } }), codeVersion: 'e2e', seed: 3, tags: ['lr-sweep'] }, now - 5 * 3600_000);
  const doneId = store.runs.create({ name: 'sort8 decoupled/agentwise', preset: 'quick', config: configOf({ optimization: { steps: 60 } }), codeVersion: 'e2e', seed: 1, tags: ['paper', 'baseline'], notes: 'Reference run for the agent-wise normalization comparison.' }, now - 3 * 3600_000);
  const runningId = store.runs.create({ name: 'sort8 decoupled/global', preset: 'quick', config: configOf({ advantage: { mode: 'global' }, optimization: { steps: 60 } }), codeVersion: 'e2e', seed: 2, tags: ['drmas'] }, now - 20 * 60_000);

  const done: SeededRun = { id: doneId, name: 'sort8 decoupled/agentwise', steps: 60, startedAt: now - 3 * 3600_000 + 5000 };
  const running: SeededRun = { id: runningId, name: 'sort8 decoupled/global', steps: 60, startedAt: now - 20 * 60_000 + 5000 };
  const failed: SeededRun = { id: failedId, name: 'sort8 shared/global lr1e-3', steps: 30, startedAt: now - 5 * 3600_000 + 5000 };

  store.runs.setStatus(failedId, 'running', null, failed.startedAt);
  store.runs.setStatus(failedId, 'failed', 'NaN in corrector gradient for 3 consecutive updates (step 7)', failed.startedAt + 25_000);
  store.runs.setStatus(doneId, 'running', null, done.startedAt);
  store.runs.setStatus(doneId, 'done', null, done.startedAt + 190_000);
  store.runs.setStatus(runningId, 'running', null, running.startedAt);
  // Owned by this (live) process, as a worker would: a server's stale-run recovery leaves it be.
  store.runs.heartbeat(runningId, process.pid);

  const log = (runId: number, at: number, level: 'info' | 'warning' | 'error', kind: string, message: string, step: number | null, data: Record<string, unknown> | null = null) =>
    store.events.insertEvent.run({ runId, step, time: at, level, kind, message, data: data ? JSON.stringify(data) : null });
  for (const run of [done, running, failed]) {
    log(run.id, run.startedAt, 'info', 'backend', 'backend wasm (tensorflow: @tensorflow/tfjs-node is not installed)', null, { chosen: 'wasm' });
    log(run.id, run.startedAt + 1000, 'info', 'warm_start', 'warm start: 400 supervised steps per policy', 0);
  }

  const writer = store.writer({ maxPending: 20_000, flushIntervalMs: 0 });
  writeSteps(store, writer, done, 0, 60, rng, { spikeAt: 23 });
  writeSteps(store, writer, running, 0, 24, rng);
  writeSteps(store, writer, failed, 0, 8, rng);

  let rejectingEpisodeId = 0;
  for (const step of [0, 10, 20, 30, 40, 50, 59]) {
    for (let p = 0; p < 6; p++) {
      const { episodeId, rejected } = writeEpisode(writer, doneId, step, 'train', rng, done.startedAt + step * 3100 + p * 200, step === 20 && p === 0);
      if (step === 20 && p === 0 && rejected) rejectingEpisodeId = episodeId;
    }
  }
  for (const step of [0, 10, 20]) {
    for (let p = 0; p < 4; p++) writeEpisode(writer, runningId, step, 'train', rng, running.startedAt + step * 3100, false);
  }
  writer.close();

  log(doneId, done.startedAt + 190_000, 'info', 'finished', 'training finished: 60 steps', 59);
  log(failedId, failed.startedAt + 25_000, 'error', 'nan', 'NaN in corrector gradient for 3 consecutive updates; stopping', 7);
  if (!rejectingEpisodeId) throw new Error('seed: no rejecting episode was written');
  return { done, running, failed, rejectingEpisodeId };
}

/**
 * Two runs on the same `sort` problems (issue 40's "one problem, many episodes"): a decoupled /
 * agent-wise run and a shared / global one, each writing one Solver → Verifier1 → Corrector1
 * episode per problem at every step, with rewards under its scheme and advantages under its
 * normalization. The first problems are held out (split `test`); the first problem of the second
 * run carries another key with the same question (matched by text); the last problem exists in the
 * first run only. Returns what it wrote, so tests compute their expectations from it in plain loops.
 * Deterministic (seeded). `segments: false` and large `problems` make the benchmark's database.
 */
import { presetDocument, deepMerge } from '../../../src-main/engine/config/load';
import { resolveConfig } from '../../../src-main/engine/preflight';
import type { BatchWriter, Store } from '../../../src-main/engine/store';
import { Rng } from '../../../src-main/engine/util/rng';
import { episodeRow, turnRow } from './rows';

export interface SeededProblemTurn {
  id: number;
  agent: string;
  parentIndex: number | null;
  text: string;
  parsed: string;
  correct: boolean;
  reward: number;
  advantage: number;
}

export interface SeededProblemEpisode {
  runId: number;
  step: number;
  /** The problem's key in this run (the text-matched problem has another key in the second run). */
  problemKey: string;
  /** The key of the problem in the first run: the match both runs share. */
  matchKey: string;
  problemId: number;
  episodeId: number;
  split: 'train' | 'test';
  correct: boolean;
  turns: SeededProblemTurn[];
}

export interface SeededProblems {
  runs: { id: number; name: string; scheme: 'decoupled' | 'shared'; mode: 'agentwise' | 'global' }[];
  steps: number[];
  /** Every problem in the first run's key order: its question, split, and key in each run (null where absent). */
  problems: { matchKey: string; question: string; answer: string; split: 'train' | 'test'; keys: (string | null)[] }[];
  episodes: SeededProblemEpisode[];
}

export interface SeedProblemsOptions {
  problems?: number;
  heldOut?: number;
  steps?: number[];
  segments?: boolean;
  seed?: number;
}

const EPS = 1e-6;
const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
/** Unbiased std (N − 1); 0 for a single sample (as the trainer's reference code, DESIGN.md). */
const std = (v: number[]) => (v.length < 2 ? 0 : Math.sqrt(v.reduce((a, b) => a + (b - mean(v)) ** 2, 0) / (v.length - 1)));

function wrongAnswer(answer: string, rng: Rng): string {
  const chars = answer.split('');
  const i = rng.int(0, chars.length - 2);
  [chars[i], chars[i + 1]] = [chars[i + 1], chars[i]];
  if (chars.join('') === answer) chars[i] = String((Number(chars[i]) + 1) % 10);
  return chars.join('');
}

interface Draft {
  agent: string;
  round: number;
  groupId: number;
  parentIndex: number | null;
  sampleIndex: number;
  prompt: string;
  text: string;
  parsed: string;
  correct: boolean;
}

/** The turns of one episode: 4 Solver samples, 2 Verifier1 verdicts on the first wrong one (else the first), 2 Corrector1 repairs of a rejection. */
function draftEpisode(question: string, reference: string, skill: number, rng: Rng): { drafts: Draft[]; final: string; correct: boolean } {
  const drafts: Draft[] = [];
  for (let s = 0; s < 4; s++) {
    const answer = rng.next() < skill ? reference : wrongAnswer(reference, rng);
    drafts.push({ agent: 'solver', round: 0, groupId: 0, parentIndex: null, sampleIndex: s, prompt: question, text: `sorted: ${answer} A:${answer}`, parsed: answer, correct: answer === reference });
  }
  const judgedIndex = Math.max(0, drafts.findIndex((d) => !d.correct));
  const judged = drafts[judgedIndex];
  let rejection: number | null = null;
  for (let s = 0; s < 2; s++) {
    const right = rng.next() < 0.75;
    const verdict = judged.correct === right ? 'approve' : 'reject';
    drafts.push({ agent: 'verifier1', round: 1, groupId: 1, parentIndex: judgedIndex, sampleIndex: s, prompt: `${question}|${judged.text}`, text: `checked ${judged.parsed} V:${verdict === 'approve' ? 'ok' : 'no'}`, parsed: verdict, correct: right });
    if (verdict === 'reject' && rejection === null) rejection = drafts.length - 1;
  }
  if (rejection === null) return { drafts, final: judged.parsed, correct: judged.correct };
  let final = judged.parsed;
  for (let s = 0; s < 2; s++) {
    const answer = rng.next() < 0.6 ? reference : wrongAnswer(reference, rng);
    drafts.push({ agent: 'corrector1', round: 1, groupId: 2, parentIndex: rejection, sampleIndex: s, prompt: `${question}|${judged.text}|V:no`, text: `fixed: ${answer} A:${answer}`, parsed: answer, correct: answer === reference });
    if (s === 0) final = answer;
  }
  return { drafts, final, correct: final === reference };
}

/**
 * Rewards under the run's scheme and advantages under its normalization, as training computes them.
 * Shared: every turn gets its chain's outcome (a Solver sample nobody judged, its own answer; the
 * judged one and its verdicts, the episode's final answer; a repair, its own answer).
 */
function credit(drafts: Draft[], finalCorrect: boolean, scheme: 'decoupled' | 'shared', mode: 'agentwise' | 'global') {
  const judged = new Set(drafts.filter((d) => d.agent === 'verifier1').map((d) => d.parentIndex));
  const chainOutcome = (d: Draft, i: number) => (d.agent === 'verifier1' || (d.agent === 'solver' && judged.has(i)) ? finalCorrect : d.correct);
  const rewards = drafts.map((d, i) => (scheme === 'shared' ? Number(chainOutcome(d, i)) : Number(d.correct)));
  return drafts.map((d, i) => {
    const group = mode === 'global' ? rewards : rewards.filter((_, j) => drafts[j].agent === d.agent);
    const mu = mean(group);
    const sigma = std(group);
    return { reward: rewards[i], advantage: (rewards[i] - mu) / (sigma + EPS), mu, sigma, groupKey: mode === 'global' ? 'episode' : d.agent };
  });
}

interface EpisodeTarget {
  writer: BatchWriter;
  run: SeededProblems['runs'][number];
  step: number;
  problemId: number;
  split: 'train' | 'test';
  segments: boolean;
  at: number;
}

function writeProblemEpisode(t: EpisodeTarget, question: string, reference: string, skill: number, rng: Rng): Omit<SeededProblemEpisode, 'problemKey' | 'matchKey'> {
  const { writer, run, step } = t;
  const { drafts, final, correct } = draftEpisode(question, reference, skill, rng);
  const credits = credit(drafts, correct, run.scheme, run.mode);
  const episodeId = writer.newId('episodes');
  writer.episode(episodeRow({ id: episodeId, runId: run.id, step, problemId: t.problemId, split: t.split, rounds: 0 }));
  const ids: number[] = [];
  const turns: SeededProblemTurn[] = drafts.map((d, i) => {
    const id = writer.newId('turns');
    ids.push(id);
    const c = credits[i];
    writer.turn(turnRow({ id, runId: run.id, episodeId, step, agent: d.agent, round: d.round, groupId: d.groupId, parentTurnId: d.parentIndex === null ? null : ids[d.parentIndex], sampleIndex: d.sampleIndex, prompt: d.prompt, text: d.text, parsed: d.parsed, correct: d.correct, createdAt: t.at + i }));
    if (t.segments) writer.segment({ id: writer.newId('segments'), turnId: id, runId: run.id, segIndex: 0, tokenStart: 0, tokenEnd: d.text.length, text: d.text, finished: true, policyVersion: step, startedAt: t.at + i, endedAt: t.at + i + 1, worker: 'rollout-0' });
    writer.reward({ turnId: id, runId: run.id, value: c.reward, components: { correctness: c.reward }, scheme: run.scheme });
    writer.advantage({ turnId: id, runId: run.id, value: c.advantage, mode: run.mode, groupKey: `${episodeId}:${c.groupKey}`, mu: c.mu, sigma: c.sigma });
    return { id, agent: d.agent, parentIndex: d.parentIndex, text: d.text, parsed: d.parsed, correct: d.correct, reward: c.reward, advantage: c.advantage };
  });
  writer.episodeOutcome(episodeId, final, correct, drafts.some((d) => d.agent === 'corrector1') ? 1 : 0);
  return { runId: run.id, step, problemId: t.problemId, episodeId, split: t.split, correct, turns };
}

function createRuns(store: Store, now: number): SeededProblems['runs'] {
  const quick = presetDocument('quick');
  const make = (name: string, scheme: 'decoupled' | 'shared', mode: 'agentwise' | 'global', seed: number) => {
    const config = resolveConfig(deepMerge(quick, { reward: { scheme }, advantage: { mode } })) as unknown as Record<string, unknown>;
    const id = store.runs.create({ name, preset: 'quick', config, codeVersion: 'seed', seed, tags: ['issue-40'] }, now);
    store.runs.setStatus(id, 'running', null, now);
    store.runs.setStatus(id, 'done', null, now + 60_000);
    return { id, name, scheme, mode };
  };
  return [make('sort8 decoupled/agentwise', 'decoupled', 'agentwise', 1), make('sort8 shared/global', 'shared', 'global', 2)];
}

export function seedProblems(store: Store, options: SeedProblemsOptions = {}, now = Date.UTC(2026, 0, 5)): SeededProblems {
  const count = options.problems ?? 10;
  const heldOut = options.heldOut ?? 3;
  const steps = options.steps ?? [0, 10, 20];
  const rng = new Rng(options.seed ?? 40, 'problems-seed');
  const runs = createRuns(store, now);
  const problems: SeededProblems['problems'] = [];
  for (let p = 0; p < count; p++) {
    const digits = Array.from({ length: 8 }, () => rng.int(0, 9)).join('');
    const matchKey = `p${String(p).padStart(5, '0')}-${digits}`;
    // The second run's first problem has another key (matched by text); the last is the first run's alone.
    const keys = [matchKey, p === 0 ? `other-${digits}` : p === count - 1 ? null : matchKey];
    problems.push({ matchKey, question: `sort ${digits}`, answer: digits.split('').sort().join(''), split: p < heldOut ? 'test' : 'train', keys });
  }
  const writer = store.writer({ maxPending: 20_000, flushIntervalMs: 0 });
  const episodes: SeededProblemEpisode[] = [];
  runs.forEach((run, r) => {
    const problemIds = problems.map((p) => {
      const key = p.keys[r];
      if (key === null) return null;
      const id = writer.newId('problems');
      writer.problem({ id, runId: run.id, split: p.split, family: 'sort', problemKey: key, question: p.question, answer: p.answer, meta: null });
      return id;
    });
    for (const step of steps) {
      // The first run learns faster: its Solver's skill rises from 0.35 to 0.9, the second's to 0.6.
      const skill = 0.35 + (r === 0 ? 0.55 : 0.25) * Math.min(1, step / Math.max(1, steps[steps.length - 1]));
      problems.forEach((p, i) => {
        const problemId = problemIds[i];
        if (problemId === null) return;
        const target = { writer, run, step, problemId, split: p.split, segments: options.segments ?? true, at: now + step * 1000 + i };
        episodes.push({ ...writeProblemEpisode(target, p.question, p.answer, skill, rng), problemKey: p.keys[r]!, matchKey: p.matchKey });
      });
    }
  });
  writer.close();
  return { runs, steps, problems, episodes };
}

/**
 * A run whose stored rewards and advantages are computed in plain loops (test/helpers/credit-loop.ts),
 * not by the engine, for the counterfactual-credit tests (issue 40): MarsRL-shaped episodes
 * (4 Solver samples; a Verifier group of 2 on each of 2 selected solutions; 2 Corrector samples
 * on a rejection), one advantage group per episode, correctness drawn so the agents' reward
 * means differ (the Corrector's stays low: Dr. MAS's far agent). Deterministic (seeded).
 */
import { deepMerge, presetDocument } from '../../../src-main/engine/config/load';
import { resolveConfig } from '../../../src-main/engine/preflight';
import type { BatchWriter, Store } from '../../../src-main/engine/store';
import { Rng } from '../../../src-main/engine/util/rng';
import { loopAdvantages, loopRewards, type LoopRow } from '../credit-loop';
import { episodeRow, turnRow } from './rows';

export interface CreditSeedOptions {
  name?: string;
  scheme?: 'decoupled' | 'shared';
  mode?: string;
  steps?: number;
  problemsPerStep?: number;
  seed?: number;
}

interface Spec {
  id: number;
  agent: string;
  parent: number | null;
  groupId: number;
  sampleIndex: number;
  correct: boolean;
  parsed: string;
}

/** One episode's turns: ids allocated, correctness drawn (accuracy rising with `progress` ∈ [0, 1]). */
function episodeSpecs(writer: BatchWriter, rng: Rng, progress: number): Spec[] {
  const specs: Spec[] = [];
  const add = (s: Omit<Spec, 'id'>) => {
    const spec = { ...s, id: writer.newId('turns') };
    specs.push(spec);
    return spec;
  };
  const solvers = Array.from({ length: 4 }, (_, i) => {
    const correct = rng.next() < 0.35 + 0.45 * progress;
    return add({ agent: 'solver', parent: null, groupId: 0, sampleIndex: i, correct, parsed: correct ? 'right' : 'wrong' });
  });
  const selected = [...solvers.filter((s) => !s.correct), ...solvers.filter((s) => s.correct)].slice(0, 2);
  selected.forEach((solution, g) => {
    const verdicts = Array.from({ length: 2 }, (_, i) => {
      const judgesRight = rng.next() < 0.6 + 0.3 * progress;
      const approve = solution.correct === judgesRight;
      return add({ agent: 'verifier1', parent: solution.id, groupId: 1 + g, sampleIndex: i, correct: judgesRight, parsed: approve ? 'approve' : 'reject' });
    });
    const rejection = verdicts.find((v) => v.parsed === 'reject');
    if (!rejection) return;
    for (let i = 0; i < 2; i++) {
      const fixes = rng.next() < 0.15 + 0.2 * progress;
      add({ agent: 'corrector1', parent: rejection.id, groupId: 3 + g, sampleIndex: i, correct: fixes, parsed: fixes ? 'right' : 'wrong' });
    }
  });
  return specs;
}

/** Writes one episode with loop-computed rewards and advantages under the run's scheme and mode. */
function writeCreditEpisode(writer: BatchWriter, runId: number, step: number, p: number, rng: Rng, scheme: string, mode: string, progress: number): void {
  const problemId = writer.newId('problems');
  const key = `s${step}p${p}`;
  writer.problem({ id: problemId, runId, split: 'train', family: 'sort', problemKey: key, question: `sort ${key}`, answer: 'right', meta: null });
  const episodeId = writer.newId('episodes');
  const specs = episodeSpecs(writer, rng, progress);
  const correct = specs.some((s) => s.agent !== 'verifier1' && s.correct);
  writer.episode(episodeRow({ id: episodeId, runId, step, problemId, correct, finalAnswer: correct ? 'right' : 'wrong' }));
  const groupKey = `${p}:${key}`;
  const rows: LoopRow[] = specs.map((s) => ({
    id: s.id, episode_id: episodeId, step, agent: s.agent, parent_turn_id: s.parent, correct: s.correct ? 1 : 0, format_valid: 1,
    reward: 0, scheme, advantage: 0, mode, weight: 1, group_key: groupKey,
  }));
  const rewards = loopRewards(rows, scheme, 0);
  const advantages = loopAdvantages(rows, rewards, mode);
  specs.forEach((s, i) => {
    writer.turn(turnRow({
      id: s.id, runId, episodeId, step, agent: s.agent, round: s.agent === 'solver' ? 0 : 1, groupId: s.groupId, parentTurnId: s.parent,
      sampleIndex: s.sampleIndex, prompt: `sort ${key}`, text: `A:${s.parsed}`, parsed: s.parsed, correct: s.correct,
    }));
    writer.reward({ turnId: s.id, runId, value: rewards[i], components: { correctness: rewards[i], format_penalty: 0 }, scheme });
    writer.advantage({ turnId: s.id, runId, value: advantages[i], mode, groupKey, mu: 0, sigma: 0 });
  });
}

/** A done run of `steps × problemsPerStep` episodes (about 10 turns each); returns its id. */
export function seedCreditRun(store: Store, options: CreditSeedOptions = {}): number {
  const { scheme = 'decoupled', mode = 'global', steps = 12, problemsPerStep = 6, seed = 40 } = options;
  const config = resolveConfig(deepMerge(presetDocument('quick'), { reward: { scheme }, advantage: { mode }, optimization: { steps } }));
  const runId = store.runs.create({ name: options.name ?? `credit ${scheme}/${mode}`, preset: 'quick', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed });
  store.runs.setStatus(runId, 'running');
  const rng = new Rng(seed, 'credit-seed');
  const writer = store.writer({ maxPending: 20_000, flushIntervalMs: 0 });
  for (let step = 0; step < steps; step++) {
    for (let p = 0; p < problemsPerStep; p++) writeCreditEpisode(writer, runId, step, p, rng, scheme, mode, steps > 1 ? step / (steps - 1) : 1);
  }
  writer.close();
  store.runs.setStatus(runId, 'done');
  return runId;
}

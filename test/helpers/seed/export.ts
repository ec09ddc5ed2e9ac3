/**
 * A small store shaped like real training output, with the awkward cases an export must survive:
 * several runs, agents and splits; rewards with ties, fractions and components that vary by turn;
 * turns without a reward, without an advantage, without an episode; unparseable outputs (correct
 * null); repeated texts (for dedupe); a rerun of the same problems (veRL dedupe across runs);
 * texts with quotes, newlines, `|` and non-ASCII; and a run with no turns at all.
 */
import path from 'node:path';
import { openStore, type Store } from '../../../src-main/engine/store';
import { Rng } from '../../../src-main/engine/util/rng';
import { perFile } from '../per-file';
import { tempFolder } from '../tmp';
import { episodeRow, turnRow } from './rows';

export interface Fixture {
  store: Store;
  dbPath: string;
  runs: { alpha: number; beta: number; rerun: number; empty: number; big: number };
}

const SOLVER_TEXTS = ['12 34 A:46', 'carry 1 A:46', 'A:47', 'hmm "quoted" | piped\nline two A:46', 'no marker', 'Ünïcødé ✓ A:46'];

function config(family: string, seed: number) {
  return {
    seed,
    task: { family, difficulty: 3, train_size: 6, test_size: 3 },
    reward: { scheme: 'decoupled', format_penalty: 0.5 },
    advantage: { mode: 'agentwise', std: 'unbiased', single_sample: 'zero', eps: 1e-6 },
    rollout: { solver_group: 4, select_k: 2, verifier_group: 2, corrector_group: 3, selection: 'adaptive', rounds: 2 },
  };
}

/** Writes one run's problems, episodes and turns; `episodesPerStep` train episodes per step. */
function writeRun(store: Store, runId: number, family: string, seed: number, steps: number, withRound2: boolean): void {
  const rng = new Rng(seed, 'export-fixture');
  const w = store.writer({ flushIntervalMs: 0 });
  const problems: { id: number; split: 'train' | 'test'; answer: string; question: string }[] = [];
  for (let i = 0; i < 9; i++) {
    const split = i < 6 ? 'train' : 'test';
    const id = w.newId('problems');
    // Same questions for the same family and index: a rerun of a config sees the same problems.
    const question = `${family} problem ${i}: ${10 + i} + ${36 - i} = ?`;
    const answer = String(46);
    problems.push({ id, split, answer, question });
    w.problem({ id, runId, split, family, problemKey: `${split}-${i}`, question, answer, meta: null });
  }
  const now = 1_700_000_000_000;
  let trainCursor = 0;
  for (let step = 0; step < steps; step++) {
    const episodes: (typeof problems)[number][] = [problems[trainCursor++ % 6], problems[trainCursor++ % 6]];
    if (step % 2 === 0) episodes.push(problems[6 + (step % 3)]);
    for (const problem of episodes) {
      const episodeId = w.newId('episodes');
      w.episode(episodeRow({ id: episodeId, runId, step, problemId: problem.id, split: problem.split, rounds: withRound2 ? 2 : 1 }));
      let group = 0;
      const turn = (agent: string, round: number, groupId: number, parent: number | null, sampleIndex: number, prompt: string, text: string, reward: number | null, opts: { correct?: boolean | null; formatValid?: boolean; advantage?: boolean } = {}) => {
        const id = w.newId('turns');
        const formatValid = opts.formatValid ?? true;
        const correct = opts.correct === undefined ? (reward === null ? null : reward > 0.5) : opts.correct;
        w.turn(turnRow({
          id, runId, episodeId, step, agent, round, groupId, parentTurnId: parent, sampleIndex, prompt, text,
          parsed: formatValid ? text.slice(-2) : null, correct: formatValid ? correct : null, formatValid, policyVersionMax: step + (sampleIndex % 2), createdAt: now + id,
        }));
        if (reward !== null) {
          const components: Record<string, number> = { correctness: formatValid ? reward : 0 };
          if (!formatValid) components.format_penalty = -0.5;
          w.reward({ turnId: id, runId, value: formatValid ? reward : reward - 0.5, components, scheme: 'decoupled' });
          if (opts.advantage !== false) {
            w.advantage({ turnId: id, runId, value: reward - 0.5, mode: 'agentwise', groupKey: `${episodeId}:${agent}`, mu: 0.5, sigma: 0.5 });
          }
        }
        return id;
      };
      // Solver group of 4: texts from a small set (repeats across episodes of a problem).
      const solverIds: number[] = [];
      for (let i = 0; i < 4; i++) {
        const text = SOLVER_TEXTS[rng.int(0, SOLVER_TEXTS.length - 1)];
        const formatValid = text.includes('A:');
        const reward = text.endsWith('A:46') ? 1 : 0;
        solverIds.push(turn('solver', 0, group, null, i, problem.question, text, reward, { formatValid }));
      }
      group++;
      // Verifier1: two groups of 2 over the first two solutions; some groups tie.
      const verifierIds: number[] = [];
      for (let g = 0; g < 2; g++) {
        const prompt = `${problem.question}|solution ${g}`;
        for (let i = 0; i < 2; i++) {
          const verdict = rng.next() < 0.5 ? 'V:ok' : 'V:no';
          verifierIds.push(turn('verifier1', 1, group, solverIds[g], i, prompt, `check ${i} ${verdict}`, rng.next() < 0.5 ? 1 : 0));
        }
        group++;
      }
      // Corrector1: one group of 3 with fractional rewards; the third sample has no reward at step 3.
      const cPrompt = `${problem.question}|solution 0|V:no`;
      const correctorIds: number[] = [];
      for (let i = 0; i < 3; i++) {
        const reward = step === 3 && i === 2 ? null : [1, 0.5, 0][rng.int(0, 2)];
        correctorIds.push(turn('corrector1', 1, group, verifierIds[0], i, cPrompt, `fix ${i} A:${45 + i}`, reward, { advantage: i !== 1 }));
      }
      group++;
      if (withRound2) {
        // Verifier2: a tie group (both rewarded 1) every other step.
        for (let i = 0; i < 2; i++) {
          turn('verifier2', 2, group, correctorIds[0], i, `${problem.question}|fix 0`, `recheck ${i} V:ok`, step % 2 === 0 ? 1 : i === 0 ? 1 : 0);
        }
      }
    }
  }
  w.close();
}

export function createFixture(dir: string): Fixture {
  const dbPath = path.join(dir, 'export.db');
  const store = openStore(dbPath);
  const alpha = store.runs.create({ name: 'alpha', preset: 'quick', config: config('addition', 1), codeVersion: 'test', seed: 1, status: 'done' });
  const beta = store.runs.create({ name: 'beta', config: config('sort', 2), codeVersion: 'test', seed: 2, status: 'done' });
  const rerun = store.runs.create({ name: 'alpha-rerun', config: config('addition', 3), codeVersion: 'test', seed: 3, status: 'done' });
  const empty = store.runs.create({ name: 'empty', config: config('sort', 4), codeVersion: 'test', seed: 4 });
  const big = store.runs.create({ name: 'big', config: config('sort', 5), codeVersion: 'test', seed: 5, status: 'done' });
  writeRun(store, alpha, 'addition', 11, 5, true);
  writeRun(store, beta, 'sort', 12, 4, false);
  writeRun(store, rerun, 'addition', 13, 2, false);
  // A turn outside any episode (e.g. a probe logged by hand): no split, no group to pair in.
  const w = store.writer({ flushIntervalMs: 0 });
  const loose = w.newId('turns');
  w.turn(turnRow({ id: loose, runId: alpha, episodeId: null, step: 2, agent: 'solver', prompt: 'probe', text: 'A:1', parsed: '1', correct: true, createdAt: 1_700_000_000_000 }));
  w.reward({ turnId: loose, runId: alpha, value: 1, components: { correctness: 1 }, scheme: 'decoupled' });
  w.close();
  // Enough turns that an export takes several pages (1000 turns each): for abort and progress.
  writeBig(store, big, 3500);
  return { store, dbPath, runs: { alpha, beta, rerun, empty, big } };
}

function writeBig(store: Store, runId: number, turns: number): void {
  const w = store.writer({ flushIntervalMs: 0, maxPending: 10_000 });
  let written = 0;
  let step = 0;
  while (written < turns) {
    const episodeId = w.newId('episodes');
    w.episode(episodeRow({ id: episodeId, runId, step, rounds: 0 }));
    for (let i = 0; i < 8 && written < turns; i++, written++) {
      const id = w.newId('turns');
      w.turn(turnRow({ id, runId, episodeId, step, agent: 'solver', sampleIndex: i, prompt: `q${step}`, text: `t${id} A:${i % 2}`, tokenCount: 4, parsed: String(i % 2), correct: i % 2 === 1 }));
      w.reward({ turnId: id, runId, value: i % 2, components: { correctness: i % 2 }, scheme: 'decoupled' });
    }
    step++;
  }
  w.close();
}

export interface TempFixture extends Fixture {
  readonly dir: string;
}

/** The fixture in a fresh temp folder (`dir`) for a test file: created before its tests, closed and removed after them. */
export function exportFixture(prefix: string): TempFixture {
  const folder = tempFolder(prefix);
  const fixture = perFile('exportFixture', () => createFixture(folder.dir), (fx) => fx.store.close());
  return {
    get store() {
      return fixture().store;
    },
    get dbPath() {
      return fixture().dbPath;
    },
    get runs() {
      return fixture().runs;
    },
    get dir() {
      return folder.dir;
    },
  };
}

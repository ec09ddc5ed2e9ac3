/**
 * `npm run bench -- problems [--problems N] [--steps K] [--db PATH] [--keep]`
 *
 * One problem, many episodes (issue 40) on big runs: two runs of the same N problems (default
 * 5 000, a tenth held out), each with one Solver → Verifier1 → Corrector1 episode of 8 turns per
 * problem at each of K steps (default 5), written through the BatchWriter with rewards and
 * advantages: 2 × 5 000 × 5 × 8 = 400 000 turns. Then, through the StudioApi service (what IPC,
 * HTTP and `marsrl problem` call): the problem list of both runs (first page of 100: every problem
 * matched, each run's outcome folded), with the "outcome differs" and held-out filters; one
 * problem's episodes across every step of both runs (10 episodes, 80 turns), by problem and by
 * turn. Medians over repeats; the first (cold) call reported apart. Baseline in the same run: the
 * same problem's turns read with the indexes turned off (NOT INDEXED: scans of episodes and turns).
 */
import { parseArgs } from 'node:util';
import { createStudioService } from '../src-main/api/service';
import { openStore, type BatchWriter, type Store } from '../src-main/engine/store';
import { Rng } from '../src-main/engine/util/rng';
import { benchDatabase, DATABASE_OPTIONS } from './database';
import { median } from './timing';

const TURNS = ['solver', 'solver', 'solver', 'solver', 'verifier1', 'verifier1', 'corrector1', 'corrector1'] as const;

/** One episode of 8 turns: 4 Solver samples, 2 verdicts on the first, 2 repairs of the first verdict. */
function writeEpisode(writer: BatchWriter, runId: number, step: number, problemId: number, split: 'train' | 'test', skill: number, rng: Rng): void {
  const episodeId = writer.newId('episodes');
  writer.episode({ id: episodeId, runId, step, problemId, split, finalAnswer: null, correct: null, rounds: 1, meta: null });
  const ids: number[] = [];
  const correct = TURNS.map(() => rng.next() < skill);
  TURNS.forEach((agent, i) => {
    const id = writer.newId('turns');
    ids.push(id);
    const parent = agent === 'verifier1' ? ids[0] : agent === 'corrector1' ? ids[4] : null;
    writer.turn({
      id, runId, episodeId, step, agent, policyId: agent.replace(/\d+$/, ''), round: agent === 'solver' ? 0 : 1, groupId: agent === 'solver' ? 0 : agent === 'verifier1' ? 1 : 2,
      parentTurnId: parent, sampleIndex: i % 2, prompt: `problem ${problemId}`, text: `answer ${correct[i] ? 'right' : 'wrong'} at step ${step}`, tokenCount: 8,
      parsed: agent === 'verifier1' ? (correct[i] ? 'approve' : 'reject') : String(i), correct: correct[i], formatValid: true, policyVersionMin: step, policyVersionMax: step, createdAt: 0,
    });
    writer.reward({ turnId: id, runId, value: Number(correct[i]), components: { correctness: Number(correct[i]) }, scheme: 'decoupled' });
    writer.advantage({ turnId: id, runId, value: correct[i] ? 0.5 : -0.5, mode: 'agentwise', groupKey: `${episodeId}:${agent}`, mu: 0.5, sigma: 0.5 });
  });
  writer.episodeOutcome(episodeId, correct[6] ? 'right' : 'wrong', correct[6], 1);
}

function seed(store: Store, problems: number, steps: number): { runIds: number[]; turns: number; seconds: number } {
  const t0 = performance.now();
  const rng = new Rng(40, 'bench-problems');
  const runIds = ['decoupled', 'shared'].map((scheme, r) => store.runs.create({ name: `bench ${scheme}`, config: { reward: { scheme }, advantage: { mode: r ? 'global' : 'agentwise' } }, codeVersion: 'bench', seed: r }));
  const writer = store.writer({ maxPending: 20_000, flushIntervalMs: 0 });
  let turns = 0;
  runIds.forEach((runId, r) => {
    const ids = Array.from({ length: problems }, (_, p) => {
      const id = writer.newId('problems');
      writer.problem({ id, runId, split: p < problems / 10 ? 'test' : 'train', family: 'sort', problemKey: `p${p}`, question: `sort ${String(p * 7919).padStart(8, '0')}`, answer: 'x', meta: null });
      return id;
    });
    for (let s = 0; s < steps; s++) {
      ids.forEach((id, p) => writeEpisode(writer, runId, s * 10, id, p < problems / 10 ? 'test' : 'train', 0.4 + (r ? 0.1 : 0.3) * (s / steps), rng));
      turns += ids.length * TURNS.length;
    }
  });
  writer.close();
  return { runIds, turns, seconds: (performance.now() - t0) / 1000 };
}

async function timed(fn: () => Promise<unknown> | unknown, repeats: number): Promise<{ cold: number; median: number }> {
  const times: number[] = [];
  for (let i = 0; i <= repeats; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return { cold: times[0], median: median(times.slice(1)) };
}

const ms = (t: { cold: number; median: number }) => `${t.median.toFixed(1).padStart(7)} ms median  (cold ${t.cold.toFixed(1)} ms)`;

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { problems: { type: 'string', default: '5000' }, steps: { type: 'string', default: '5' }, ...DATABASE_OPTIONS } });
  const problems = Number(values.problems);
  const steps = Number(values.steps);
  if (!Number.isInteger(problems) || problems < 10) throw new Error(`--problems must be an integer ≥ 10 (got ${values.problems})`);
  if (!Number.isInteger(steps) || steps < 1 || steps > 1000) throw new Error(`--steps must be an integer from 1 to 1000 (got ${values.steps})`);
  const database = benchDatabase(values, 'problems');
  const store = openStore(database.path);
  try {
    const seeded = seed(store, problems, steps);
    const { runIds } = seeded;
    const service = createStudioService({ store, databasePath: database.path, transport: 'direct' });
    console.log(`problems bench: 2 runs × ${problems.toLocaleString()} problems × ${steps} steps = ${seeded.turns.toLocaleString()} turns, written in ${seeded.seconds.toFixed(1)} s (${database.path})`);

    const list = await timed(() => service.listProblemOutcomes({ runIds, limit: 100 }), 7);
    const differs = await timed(() => service.listProblemOutcomes({ runIds, differs: true, limit: 100 }), 7);
    const heldOut = await timed(() => service.listProblemOutcomes({ runIds, split: 'test', limit: 100 }), 7);
    const page = await service.listProblemOutcomes({ runIds, differs: true, limit: 100 });
    console.log(`  problem list (page of 100 of ${page.counts.problems.toLocaleString()} matched; ${page.counts.differing.toLocaleString()} differ):`);
    console.log(`    all                 ${ms(list)}`);
    console.log(`    outcome differs     ${ms(differs)}`);
    console.log(`    held-out only       ${ms(heldOut)}`);

    const rng = new Rng(41, 'bench-problems-pick');
    const firstRunProblems = store.db.prepare('SELECT id FROM problems WHERE run_id = ? ORDER BY id').pluck().all(runIds[0]) as number[];
    const pick = () => firstRunProblems[rng.int(0, firstRunProblems.length - 1)];
    let shown = 0;
    const byProblem = await timed(async () => (shown = (await service.getProblemEpisodes({ runIds, problemId: pick() })).episodes.length), 30);
    const turnIds = store.db.prepare('SELECT id FROM turns WHERE run_id = ? AND id % 997 = 0').pluck().all(runIds[1]) as number[];
    const byTurn = await timed(() => service.getProblemEpisodes({ runIds, turnId: turnIds[rng.int(0, turnIds.length - 1)] }), 30);
    console.log(`  one problem's episodes (${shown} episodes at ${Math.min(steps, 8)} steps × 2 runs, with turns, rewards, advantages):`);
    console.log(`    by problem id       ${ms(byProblem)}`);
    console.log(`    by turn id          ${ms(byTurn)}`);

    // Baseline: the same problem's turns read without the indexes (a scan of the runs' episodes and turns).
    const scan = store.db.prepare('SELECT COUNT(*) FROM turns NOT INDEXED WHERE episode_id IN (SELECT id FROM episodes NOT INDEXED WHERE problem_id IN (?, ?))').pluck();
    const other = store.db.prepare('SELECT id FROM problems WHERE run_id = ? AND split = ? AND problem_key = ?').pluck();
    const keyOf = store.db.prepare('SELECT split, problem_key FROM problems WHERE id = ?');
    const baseline = await timed(() => {
      const id = pick();
      const { split, problem_key: key } = keyOf.get(id) as { split: string; problem_key: string };
      return scan.get(id, other.get(runIds[1], split, key));
    }, 5);
    console.log(`    baseline: the same turns without indexes (scans) ${ms(baseline)}`);
  } finally {
    store.close();
    const kept = database.release();
    if (kept) console.log(`  database kept: ${kept}`);
  }
}

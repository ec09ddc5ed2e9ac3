/**
 * veRL and DrMAS run folders imported (issue 39). The fixtures (test/fixtures/imports/verl/run and
 * ../drmas/run) are written by make_fixtures.py with the engines' own calls (README.md in each
 * fixture folder cites the file:line). Every expected count here is taken from the fixture files
 * with a plain JSON reading in this test, not from the reader.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IMPORT_FORMAT_REGISTRY, importFormat } from '../../src-main/engine/imports/registry';
import { ImportSourceError, type ImportBatch, type ImportFormat } from '../../src-main/engine/imports/types';
import { drmasFormat, verlFormat } from '../../src-main/engine/imports/verl';

const FIXTURES = path.resolve(__dirname, '../fixtures/imports');
const VERL_RUN = path.join(FIXTURES, 'verl', 'run');
const DRMAS_RUN = path.join(FIXTURES, 'drmas', 'run');
const METRICS = 'verl_grpo_math/qwen05b_grpo.jsonl';

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function copy(src: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-verl-import-'));
  temps.push(dir);
  fs.cpSync(src, dir, { recursive: true });
  return dir;
}

/** Python's json.dumps writes NaN bare; JSON.parse does not read it. */
function parsePy(line: string): Record<string, unknown> {
  return JSON.parse(line.replace(/: NaN\b/g, ': null')) as Record<string, unknown>;
}

function jsonl(file: string): Record<string, unknown>[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(parsePy);
}

function dumpLines(dir: string): Record<string, unknown>[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((n) => /^\d+\.jsonl$/.test(n))
    .flatMap((n) => jsonl(path.join(dir, n)));
}

interface All {
  batches: ImportBatch[];
  metrics: ImportBatch['metrics'];
  episodes: ImportBatch['episodes'];
  checkpoints: ImportBatch['checkpoints'];
  issues: ImportBatch['issues'];
  cursor: unknown;
}

async function readAll(format: ImportFormat, dir: string, cursor: unknown = null, batchSize = 5000): Promise<All> {
  const all: All = { batches: [], metrics: [], episodes: [], checkpoints: [], issues: [], cursor };
  for await (const batch of format.read(dir, '.', cursor, { batchSize })) {
    all.batches.push(batch);
    all.metrics.push(...batch.metrics);
    all.episodes.push(...batch.episodes);
    all.checkpoints.push(...batch.checkpoints);
    all.issues.push(...batch.issues);
    all.cursor = JSON.parse(JSON.stringify(batch.cursor)) as unknown;
  }
  return all;
}

const value = (all: All, key: string, step: number) => all.metrics.find((m) => m.key === key && m.step === step)?.value;

describe('detection and the registry', () => {
  it('tells a veRL folder, a DrMAS folder, a lone metrics file and an empty folder apart', () => {
    expect(verlFormat.detect(VERL_RUN)).toBe(true);
    expect(drmasFormat.detect(VERL_RUN)).toBe(false);
    expect(drmasFormat.detect(DRMAS_RUN)).toBe(true);
    expect(verlFormat.detect(DRMAS_RUN)).toBe(false);
    expect(verlFormat.detect(path.join(VERL_RUN, METRICS))).toBe(true);
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-verl-empty-'));
    temps.push(empty);
    expect(verlFormat.detect(empty)).toBe(false);
    expect(drmasFormat.detect(empty)).toBe(false);
  });

  it('is registered before any TensorBoard reader (a veRL folder may hold event files too)', () => {
    expect(importFormat('verl')).toBe(verlFormat);
    expect(importFormat('drmas')).toBe(drmasFormat);
    const ids = IMPORT_FORMAT_REGISTRY.map((f) => f.id);
    const tb = ids.indexOf('tensorboard');
    if (tb >= 0) expect(Math.max(ids.indexOf('verl'), ids.indexOf('drmas'))).toBeLessThan(tb);
  });

  it('refuses an empty folder with its path named', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-verl-empty-'));
    temps.push(empty);
    const error = await verlFormat.scan(empty, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImportSourceError);
    expect((error as ImportSourceError).file).toBe(empty);
    expect((error as Error).message).toContain(empty);
  });
});

describe('a veRL 0.7 run folder', () => {
  const metricLines = () => jsonl(path.join(VERL_RUN, METRICS)) as { step: number; data: Record<string, unknown> }[];
  const train = () => dumpLines(path.join(VERL_RUN, 'rollout'));
  const test = () => dumpLines(path.join(VERL_RUN, 'validation'));

  it('scans to the counts of its files', async () => {
    const scan = await verlFormat.scan(VERL_RUN, {});
    expect(scan.runs).toHaveLength(1);
    const run = scan.runs[0];
    const lines = metricLines();
    // val-core/{ds}/acc/mean@1 answers two catalog entries (eval/system/accuracy and eval/solver/accuracy): one point each.
    const entries = lines.reduce((n, l) => n + Object.keys(l.data).length, 0);
    const doubled = lines.filter((l) => 'val-core/openai/gsm8k/acc/mean@1' in l.data).length;
    expect(run.metricPoints).toBe(entries + doubled);
    expect(run.generations).toBe(train().length + test().length);
    expect(run.episodes).toBe(run.generations);
    const steps = new Set([...lines.map((l) => l.step), ...train().map((l) => l.step), ...test().map((l) => l.step)]);
    expect(run.steps).toBe(steps.size);
    expect(run.firstStep).toBe(Math.min(...(steps as Set<number>)));
    expect(run.lastStep).toBe(Math.max(...(steps as Set<number>)));
    expect(run.agents).toEqual(['solver']);
    expect(run.name).toBe('qwen05b_grpo');
    expect(run.tags).toEqual(['verl', 'verl_grpo_math']);
    // Hydra's run folder outputs/2026-11-02/10-15-07 (local time of the machine that trained).
    expect(run.startedAt).toBe(new Date(2026, 10, 2, 10, 15, 7).getTime());
    expect(run.config).toMatchObject({ trainer: { project_name: 'verl_grpo_math' } });
    expect(scan.issues).toEqual([]);
    const dumps = fs.readdirSync(path.join(VERL_RUN, 'rollout')).length + fs.readdirSync(path.join(VERL_RUN, 'validation')).length;
    expect(scan.files).toBe(dumps + 2);
  });

  it('maps metrics onto the catalog and keeps the rest under verl/', async () => {
    const all = await readAll(verlFormat, VERL_RUN);
    const lines = metricLines();
    for (const line of lines.filter((l) => l.step > 0)) {
      expect(value(all, 'solver/grad_norm', line.step)).toBe(line.data['actor/grad_norm']);
      expect(value(all, 'solver/reward/mean', line.step)).toBe(line.data['critic/score/mean']);
      expect(value(all, 'perf/step_s', line.step)).toBe(line.data['timing_s/step']);
      expect(value(all, 'verl/actor/pg_loss', line.step)).toBe(line.data['actor/pg_loss']);
    }
    for (const line of lines.filter((l) => 'val-core/openai/gsm8k/acc/mean@1' in l.data)) {
      expect(value(all, 'eval/system/accuracy', line.step)).toBe(line.data['val-core/openai/gsm8k/acc/mean@1']);
      expect(value(all, 'eval/solver/accuracy', line.step)).toBe(line.data['val-core/openai/gsm8k/acc/mean@1']);
    }
    // json.dumps wrote NaN bare at step 1: read as NaN, not dropped, not a bad line.
    expect(value(all, 'verl/actor/kl_loss', 1)).toBeNaN();
    expect(all.metrics.every((m) => m.wallTime === null)).toBe(true);
  });

  it('makes one Solver episode per dumped sample, with its problem and reference answer', async () => {
    const all = await readAll(verlFormat, VERL_RUN);
    const byStep = (split: 'train' | 'test', step: number) => all.episodes.filter((e) => e.split === split && e.step === step);
    for (const [split, lines] of [['train', train()], ['test', test()]] as const) {
      expect(all.episodes.filter((e) => e.split === split)).toHaveLength(lines.length);
      for (const step of new Set(lines.map((l) => l.step as number))) {
        const expected = lines.filter((l) => l.step === step);
        const got = byStep(split, step);
        expect(got.map((e) => e.turns[0].prompt)).toEqual(expected.map((l) => l.input));
        expect(got.map((e) => e.turns[0].text)).toEqual(expected.map((l) => l.output));
        expect(got.map((e) => e.turns[0].reward)).toEqual(expected.map((l) => l.score));
        expect(got.map((e) => e.problem?.answer)).toEqual(expected.map((l) => l.gts));
        expect(got.map((e) => e.correct)).toEqual(expected.map((l) => l.acc));
        expect(got.map((e) => e.finalAnswer)).toEqual(expected.map((l) => l.pred));
      }
    }
    expect(all.episodes.every((e) => e.turns.length === 1 && e.turns[0].agent === 'solver' && e.turns[0].role === 'solver')).toBe(true);
    // The same prompt with the same answer is one problem across steps.
    const keys = new Set(all.episodes.filter((e) => e.split === 'train').map((e) => e.problem?.key));
    expect(keys.size).toBe(new Set(train().map((l) => `${String(l.gts)}|${String(l.input)}`)).size);
  });

  it("judges a sample with the Studio's checker against gts where the reward function dumped no acc", async () => {
    const dir = copy(VERL_RUN);
    const file = path.join(dir, 'rollout/2.jsonl');
    const rows = jsonl(file).map(({ acc: _acc, pred: _pred, ...rest }) => rest);
    fs.writeFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const all = await readAll(verlFormat, dir);
    const got = all.episodes.filter((e) => e.split === 'train' && e.step === 2);
    // The fixture's responses end in `#### {answer}` (GSM8K's format): right when it is the reference.
    expect(got.map((e) => e.correct)).toEqual(rows.map((r) => /#### (\S+)$/.exec(r.output as string)?.[1] === r.gts));
    expect(got.map((e) => e.finalAnswer)).toEqual(rows.map((r) => /#### (\S+)$/.exec(r.output as string)?.[1]));
    expect(got.every((e) => e.meta?.judgedBy === 'studio')).toBe(true);
    expect(all.episodes.filter((e) => e.step !== 2 || e.split === 'test').every((e) => e.meta?.judgedBy === 'engine')).toBe(true);
  });

  it('lists the checkpoints the tracker reached, with the Hugging Face folder where weights were saved', async () => {
    const all = await readAll(verlFormat, VERL_RUN);
    const dir = path.join(VERL_RUN, 'checkpoints/verl_grpo_math/qwen05b_grpo');
    const folders = fs.readdirSync(dir).filter((n) => n.startsWith('global_step_'));
    expect(all.checkpoints.map((c) => c.step).sort((a, b) => a - b)).toEqual(folders.map((n) => Number(n.slice('global_step_'.length))).sort((a, b) => a - b));
    expect(all.checkpoints.every((c) => c.policyId === 'actor')).toBe(true);
    expect(all.checkpoints.find((c) => c.step === 5)?.path).toBe(path.join(dir, 'global_step_5/actor/huggingface'));
    expect(all.checkpoints.find((c) => c.step === 3)?.path).toBe(path.join(dir, 'global_step_3/actor'));
  });

  it('reads nothing again from its cursor, and only what was added to a grown folder', async () => {
    const dir = copy(VERL_RUN);
    const first = await readAll(verlFormat, dir);
    const again = await readAll(verlFormat, dir, first.cursor);
    expect([again.metrics.length, again.episodes.length, again.checkpoints.length, again.issues.length]).toEqual([0, 0, 0, 0]);

    // The run resumed for a step 6: its metrics line, its rollout dump and its validation dump.
    const line6 = { step: 6, data: { 'actor/grad_norm': 0.125, 'val-core/openai/gsm8k/acc/mean@1': 1.0 } };
    fs.appendFileSync(path.join(dir, METRICS), `${JSON.stringify(line6)}\n`);
    const rollout6 = fs.readFileSync(path.join(dir, 'rollout/5.jsonl'), 'utf8').replace(/"step": 5/g, '"step": 6');
    fs.writeFileSync(path.join(dir, 'rollout/6.jsonl'), rollout6);
    fs.writeFileSync(path.join(dir, 'validation/6.jsonl'), fs.readFileSync(path.join(dir, 'validation/5.jsonl'), 'utf8').replace(/"step": 5/g, '"step": 6'));
    const grown = await readAll(verlFormat, dir, first.cursor);
    expect(new Set(grown.metrics.map((m) => m.step))).toEqual(new Set([6]));
    expect(grown.metrics).toHaveLength(3);
    expect(grown.episodes.filter((e) => e.split === 'train')).toHaveLength(rollout6.trim().split('\n').length);
    expect(grown.episodes.every((e) => e.step === 6)).toBe(true);
    expect(grown.checkpoints).toEqual([]);
  });

  it('reports a metrics line cut in half with its file and line, and reads every other line', async () => {
    const dir = copy(VERL_RUN);
    const file = path.join(dir, METRICS);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines[2] = lines[2].slice(0, Math.floor(lines[2].length / 2));
    fs.writeFileSync(file, lines.join('\n'));
    const all = await readAll(verlFormat, dir);
    expect(all.issues).toHaveLength(1);
    expect(all.issues[0]).toMatchObject({ file: METRICS, position: 'line 3' });
    expect(all.issues[0].message).toContain(`${METRICS}:3`);
    const cut = parsePy(fs.readFileSync(path.join(VERL_RUN, METRICS), 'utf8').split('\n')[2]).step as number;
    const steps = new Set(all.metrics.map((m) => m.step));
    expect(steps.has(cut)).toBe(false);
    expect(steps.size).toBe(metricLines().length - 1);
    expect(all.episodes).toHaveLength(train().length + test().length);
  });

  it('leaves an unterminated last metrics line for later, says so once, and takes it when complete', async () => {
    const dir = copy(VERL_RUN);
    const file = path.join(dir, METRICS);
    const text = fs.readFileSync(file, 'utf8');
    const last = text.slice(text.lastIndexOf('\n', text.length - 2) + 1);
    fs.writeFileSync(file, text.slice(0, text.length - Math.floor(last.length / 2)));
    const first = await readAll(verlFormat, dir);
    const n = text.trim().split('\n').length;
    expect(first.issues).toEqual([expect.objectContaining({ file: METRICS, position: `line ${n}` })]);
    expect(first.metrics.some((m) => m.step === 5)).toBe(false);
    expect((await readAll(verlFormat, dir, first.cursor)).issues).toEqual([]);
    fs.writeFileSync(file, text);
    const rest = await readAll(verlFormat, dir, first.cursor);
    expect(new Set(rest.metrics.map((m) => m.step))).toEqual(new Set([5]));
    expect(rest.issues).toEqual([]);
  });

  it('reports a dump line cut in half with its file and line, and takes the rest of the step', async () => {
    const dir = copy(VERL_RUN);
    const file = path.join(dir, 'rollout/3.jsonl');
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines[4] = lines[4].slice(0, 40);
    fs.writeFileSync(file, lines.join('\n'));
    const all = await readAll(verlFormat, dir);
    expect(all.issues).toEqual([expect.objectContaining({ file: 'rollout/3.jsonl', position: 'line 5' })]);
    expect(all.episodes.filter((e) => e.split === 'train' && e.step === 3)).toHaveLength(lines.filter((l) => l !== '').length - 1);
  });

  it('reads in batches no larger than asked (whole step files), with a cursor after each', async () => {
    const all = await readAll(verlFormat, VERL_RUN, null, 8);
    expect(all.batches.length).toBeGreaterThan(3);
    expect(all.episodes).toHaveLength(train().length + test().length);
    const done = all.batches.map((b) => b.bytesDone);
    expect([...done].sort((a, b) => a - b)).toEqual(done);
  });

  it('reads a long metrics file in bounded batches, each with its cursor', async () => {
    const dir = copy(VERL_RUN);
    const data = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`actor/extra_${i}`, i / 7]));
    const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ step: i + 6, data }));
    fs.appendFileSync(path.join(dir, METRICS), `${lines.join('\n')}\n`);
    const size = fs.statSync(path.join(dir, METRICS)).size;
    const all = await readAll(verlFormat, dir);
    const withMetrics = all.batches.filter((b) => b.metrics.length > 0);
    // More than a mebibyte of lines: read a part at a time, never the whole file in one batch.
    expect(size).toBeGreaterThan(2 << 20);
    expect(withMetrics.length).toBeGreaterThanOrEqual(Math.floor(size / (1 << 20)));
    expect(all.metrics.filter((m) => m.step >= 6)).toHaveLength(2000 * 60);
    expect(Math.max(...withMetrics.map((b) => b.metrics.length))).toBeLessThan(2000 * 60);
  });

  it('reads metrics from a saved console output when there is no file logger (Ray prefix, numpy reprs)', async () => {
    const dir = copy(VERL_RUN);
    fs.rmSync(path.join(dir, METRICS));
    // veRL's console logger: `step:{step} - {k}:{pprint.pformat(v)}` in the TaskRunner actor (verl/utils/logger/aggregate_logger.py).
    const lines = [
      '\u001b[36m(TaskRunner pid=7713)\u001b[0m step:1 - actor/grad_norm:np.float64(0.5) - timing_s/step:12.25 - critic/score/mean:0.375',
      '\u001b[36m(TaskRunner pid=7713)\u001b[0m step:2 - actor/grad_norm:np.float64(0.25) - timing_s/step:11.5 - critic/score/mean:0.625',
    ];
    fs.writeFileSync(path.join(dir, 'train.log'), `${lines.join('\n')}\n`);
    const all = await readAll(verlFormat, dir);
    expect(value(all, 'solver/grad_norm', 1)).toBe(0.5);
    expect(value(all, 'solver/grad_norm', 2)).toBe(0.25);
    expect(value(all, 'perf/step_s', 2)).toBe(11.5);
    expect(value(all, 'solver/reward/mean', 1)).toBe(0.375);
    expect(all.metrics).toHaveLength(6);
    expect(all.issues).toEqual([]);
  });

  it('names the config key whose folder is not in the imported folder, and reads the rest', async () => {
    const dir = copy(VERL_RUN);
    fs.renameSync(path.join(dir, 'rollout'), path.join(dir, 'elsewhere'));
    const all = await readAll(verlFormat, dir);
    expect(all.issues).toEqual([{ file: 'outputs/2026-11-02/10-15-07/.hydra/config.yaml', position: 'trainer.rollout_data_dir', message: expect.stringContaining('/home/researcher/runs/verl-grpo/rollout') as string }]);
    expect(all.episodes.filter((e) => e.split === 'train')).toEqual([]);
    expect(all.episodes).toHaveLength(test().length);
    expect(all.metrics.length).toBeGreaterThan(0);
  });

  it('reads a metrics file given alone', async () => {
    const all = await readAll(verlFormat, path.join(VERL_RUN, METRICS));
    expect(all.metrics.length).toBeGreaterThan(0);
    expect(all.episodes).toEqual([]);
  });
});

describe('a DrMAS run folder (Solver, Verifier and Corrector, dumps written with the Studio hook)', () => {
  const ROLE: Record<string, string> = { 'Solver Agent': 'solver', 'Verifier Agent': 'verifier', 'Corrector Agent': 'corrector' };
  const lines = () => dumpLines(path.join(DRMAS_RUN, 'rollout'));
  const real = () => lines().filter((l) => l.dup === 0);
  const agentName = (l: Record<string, unknown>) => (ROLE[l.agent_id as string] === 'solver' ? 'solver' : `${ROLE[l.agent_id as string]}${(l.round as number) + 1}`);

  it('scans to the counts of its dumps and console lines', async () => {
    const scan = await drmasFormat.scan(DRMAS_RUN, {});
    const run = scan.runs[0];
    expect(run.generations).toBe(real().length);
    expect(run.episodes).toBe(new Set(real().map((l) => `${String(l.step)}/${String(l.traj_uid)}`)).size);
    expect(run.agents).toEqual([...new Set(real().map(agentName))].sort());
    expect(run.name).toBe('solver_verifier_corrector');
    // hydra.run.dir=. : no dated run folder, so no launch time is known.
    expect(run.startedAt).toBeNull();
    const consoleSteps = fs
      .readFileSync(path.join(DRMAS_RUN, 'nohup.out'), 'utf8')
      .split('\n')
      .map((l) => /step:(\d+) - /.exec(l)?.[1])
      .filter((s): s is string => s !== undefined);
    expect(run.steps).toBe(new Set([...consoleSteps.map(Number), ...real().map((l) => l.step as number)]).size);
    expect(scan.issues).toEqual([]);
  });

  it('groups a trajectory into one episode of Solver, Verifier and Corrector turns, padding copies left out', async () => {
    const all = await readAll(drmasFormat, DRMAS_RUN);
    const expected = new Map<string, Record<string, unknown>[]>();
    for (const l of real()) expected.set(`${String(l.step)}/${String(l.traj_uid)}`, [...(expected.get(`${String(l.step)}/${String(l.traj_uid)}`) ?? []), l]);
    expect(all.episodes).toHaveLength(expected.size);
    for (const episode of all.episodes) {
      const want = expected.get(`${episode.step}/${String(episode.turns[0].meta.trajectory)}`)!;
      expect(episode.turns.map((t) => t.agent).sort()).toEqual(want.map(agentName).sort());
      expect(episode.turns.map((t) => t.role).sort()).toEqual(want.map((l) => ROLE[l.agent_id as string]).sort());
      expect(episode.turns.map((t) => t.advantage).sort()).toEqual(want.map((l) => l.advantage).sort());
      // The problem is the Solver's prompt.
      expect(episode.problem?.question).toBe(want.find((l) => l.agent_id === 'Solver Agent')?.input);
      expect(episode.group).toBe(want[0].uid);
    }
    const roles = new Set(all.episodes.flatMap((e) => e.turns.map((t) => t.role)));
    expect(roles).toEqual(new Set(['solver', 'verifier', 'corrector']));
  });

  it('maps per-worker-group metrics onto each agent and derives per-agent rewards from the dumps', async () => {
    const all = await readAll(drmasFormat, DRMAS_RUN);
    // The console prints {v:.3f} (DrMAS aggregate_logger.py); the fixture's values: 0.5 + 0.25·step + agent index.
    expect(value(all, 'solver/grad_norm', 2)).toBeCloseTo(1.0, 3);
    expect(value(all, 'verifier/grad_norm', 2)).toBeCloseTo(2.0, 3);
    expect(value(all, 'corrector/grad_norm', 2)).toBeCloseTo(3.0, 3);
    expect(value(all, 'eval/system/pass@4', 5)).toBeCloseTo(0.75, 3);
    expect(value(all, 'drmas/critic/Qwen3-4B_Solver Agent/score/mean', 4)).toBeCloseTo(0.5, 3);
    for (const step of [1, 2, 3, 4, 5]) {
      const solver = real().filter((l) => l.step === step && l.agent_id === 'Solver Agent');
      const mean = solver.reduce((s, l) => s + (l.score as number), 0) / solver.length;
      expect(value(all, 'solver/reward/mean', step)).toBeCloseTo(mean, 12);
      expect(value(all, 'solver/samples', step)).toBe(solver.length);
    }
  });

  it('lists each worker group of each checkpoint', async () => {
    const all = await readAll(drmasFormat, DRMAS_RUN);
    const dir = path.join(DRMAS_RUN, 'checkpoints/drmas_marsrl/solver_verifier_corrector');
    const expected = fs
      .readdirSync(dir)
      .filter((n) => n.startsWith('global_step_'))
      .flatMap((n) => fs.readdirSync(path.join(dir, n, 'actor')).map((wg) => `${n.slice('global_step_'.length)}:${wg}`));
    expect(all.checkpoints.map((c) => `${c.step}:${c.policyId}`).sort()).toEqual(expected.sort());
    expect(all.checkpoints.every((c) => c.path.endsWith(`${c.policyId}${path.sep}huggingface`))).toBe(true);
  });

  it('knows DrMAS and its agents from the hook\'s fields when the folder has no Hydra config', async () => {
    const dir = copy(DRMAS_RUN);
    fs.rmSync(path.join(dir, '.hydra'), { recursive: true });
    expect(drmasFormat.detect(dir)).toBe(true);
    expect(verlFormat.detect(dir)).toBe(false);
    const scan = await drmasFormat.scan(dir, {});
    expect(scan.runs[0].agents).toEqual([...new Set(real().map(agentName))].sort());
    expect(scan.runs[0].name).toBe(path.basename(dir));
    const all = await readAll(drmasFormat, dir);
    expect(all.checkpoints.length).toBeGreaterThan(0);
  });

  it('marks every turn agent unknown, never guessed, when the dumps were written without the hook', async () => {
    const dir = copy(DRMAS_RUN);
    const hookFields = ['agent_id', 'wg_id', 'uid', 'traj_uid', 'env_step', 'turn', 'round', 'is_action_valid', 'advantage', 'dup'];
    let count = 0;
    for (const name of fs.readdirSync(path.join(dir, 'rollout'))) {
      const rows = jsonl(path.join(dir, 'rollout', name)).map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => !hookFields.includes(k))));
      count += rows.length;
      fs.writeFileSync(path.join(dir, 'rollout', name), rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    }
    expect(drmasFormat.detect(dir)).toBe(true);
    const all = await readAll(drmasFormat, dir);
    // Without trajectory ids each turn is its own episode, and the padding copies cannot be told apart.
    expect(all.episodes).toHaveLength(count);
    expect(all.episodes.every((e) => e.turns.length === 1 && e.turns[0].agent === 'unknown' && e.turns[0].role === null)).toBe(true);
    expect(all.issues).toHaveLength(1);
    expect(all.issues[0].message).toContain('hook');
    expect(all.issues[0].file).toMatch(/^rollout\/\d+\.jsonl$/);
    expect((await drmasFormat.scan(dir, {})).runs[0].agents).toEqual(['unknown']);
  });

  it('says where the metrics are when DrMAS wrote them only as TensorBoard files', async () => {
    const dir = copy(DRMAS_RUN);
    fs.rmSync(path.join(dir, 'nohup.out'));
    // tracking.py _TensorboardAdapter: TENSORBOARD_DIR or tensorboard_log/{project}/{experiment}.
    const tb = path.join(dir, 'tensorboard_log/drmas_marsrl/solver_verifier_corrector');
    fs.mkdirSync(tb, { recursive: true });
    fs.writeFileSync(path.join(tb, 'events.out.tfevents.1762160401.node1.48213.0'), '');
    const all = await readAll(drmasFormat, dir);
    expect(all.issues).toEqual([{ file: '', position: '', message: expect.stringContaining('tensorboard_log/drmas_marsrl/solver_verifier_corrector') as string }]);
    // Only what the dumps give: the per-agent metrics derived from them.
    expect(all.metrics.every((m) => /^(solver|verifier\d+|corrector\d+)\//.test(m.key))).toBe(true);
    expect(all.episodes.length).toBeGreaterThan(0);
  });

  it('reads nothing again from its cursor', async () => {
    const first = await readAll(drmasFormat, DRMAS_RUN);
    const again = await readAll(drmasFormat, DRMAS_RUN, first.cursor);
    expect([again.metrics.length, again.episodes.length, again.checkpoints.length, again.issues.length]).toEqual([0, 0, 0, 0]);
  });
});

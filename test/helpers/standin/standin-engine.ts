/**
 * A stand-in for veRL and DrMAS in tests (issue 38): run as the configured interpreter
 * (`test/helpers/standin/python`), it writes exactly the files the engines write, in their order and
 * formats, as read from their code (the research note's §2-§8 and its checklist §9):
 *
 *   python -m verl.trainer.main_ppo k=v …   veRL (version STANDIN_VERL_VERSION, default 0.7.1) or,
 *                                            when agent.agent_ids is given, DrMAS (0.3.1.dev)
 *   python -c <probe>                        the probe's MARSRL_PROBE line (STANDIN_PROBE overrides)
 *   python -m ray.scripts.scripts start --head --block --dashboard-port=P
 *                                            a Ray head: the fake Jobs server on P until SIGTERM
 *
 * Knobs (environment): STANDIN_VERL_VERSION, STANDIN_STEP_MS (time per step), STANDIN_LINE_MS
 * (time per dumped line in the asynchronous writer of veRL ≥ 0.8), STANDIN_FAIL_AT_STEP (a
 * RuntimeError in that step, after half its dump is written), STANDIN_TQDM (a progress bar glued
 * before step lines).
 *
 * Engine behaviour reproduced: Hydra's refusal of unknown keys (vendored key sets), the file
 * logger truncated at start, val-before-train at the start step (0, or the resumed one),
 * `rollout/N` then `validation/N` (legacy) or the reverse (V1), synchronous dumps (one write) before
 * 0.8 and line-by-line from one background writer after, `Dumped generations to …`, checkpoints
 * written before the tracker, resume from `latest_checkpointed_iteration.txt`, the console line per
 * step with Ray's `(TaskRunner pid=…)` prefix, DrMAS's worker groups with their padding copies, its
 * `{v:.3f}` console, TensorBoard files, and the Studio hook's fields when Ray would have run it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { hydraRefusal, loadKeySet, parseOverride } from '../../../src-main/engine/engines/hydra';
import { FakeRay, pyFloat } from '../fake-ray';
import { EventWriter } from './tfevents';

const argv = process.argv.slice(2);
const PID = process.pid;
const env = process.env;

// ── Python-looking output ───────────────────────────────────────────────────────────────────────

/** Python's repr of a metric (pprint.pformat): ints for counters, floats otherwise (`nan`, `inf`). */
function pyRepr(key: string, v: number): string {
  if (key.startsWith('training/')) return String(v);
  if (Number.isNaN(v)) return 'nan';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  return pyFloat(v);
}

/** `json.dumps(entry, ensure_ascii=False)`: ", " / ": ", non-ASCII kept, floats by repr, NaN as a token. */
function pyJsonLine(obj: Record<string, unknown>, floats: ReadonlySet<string>): string {
  const enc = (k: string, v: unknown): string => {
    if (v === null || v === undefined) return 'null';
    if (typeof v === 'number') return floats.has(k) || !Number.isInteger(v) ? pyFloat(v) : String(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (typeof v === 'string') return JSON.stringify(v);
    return JSON.stringify(v);
  };
  return `{${Object.entries(obj).map(([k, v]) => `${JSON.stringify(k)}: ${enc(k, v)}`).join(', ')}}`;
}

const CYAN = '\x1b[36m';
const RESET = '\x1b[0m';
let actorName = 'TaskRunner';

function say(text: string): void {
  for (const line of text.split('\n')) process.stdout.write(`${CYAN}(${actorName} pid=${PID})${RESET} ${line}\n`);
}

function driver(text: string): void {
  process.stdout.write(`${text}\n`);
}

// ── Hydra ───────────────────────────────────────────────────────────────────────────────────────

function splitTop(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') {
        cur += c + text[++i];
        continue;
      }
      if (c === quote) quote = null;
      cur += c;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === ',' && depth === 0) {
      out.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  if (cur !== '') out.push(cur);
  return out;
}

export function parseHydraValue(raw: string): unknown {
  const s = raw.trim();
  if (s.startsWith('[') && s.endsWith(']')) return splitTop(s.slice(1, -1)).map(parseHydraValue);
  if ((s.startsWith("'") && s.endsWith("'")) || (s.startsWith('"') && s.endsWith('"'))) return s.slice(1, -1).replace(/\\(.)/g, '$1');
  if (/^null$/i.test(s)) return null;
  if (/^true$/i.test(s)) return true;
  if (/^false$/i.test(s)) return false;
  if (/^[-+]?\d+$/.test(s)) return Number(s);
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return Number(s);
  return s;
}

type Cfg = Map<string, unknown>;

function parseArgs(args: string[], engine: 'verl' | 'drmas', keysVersion: string): Cfg {
  const keys = loadKeySet(engine, keysVersion);
  const cfg: Cfg = new Map();
  for (const a of args) {
    const o = parseOverride(a);
    const refusal = hydraRefusal(o, keys.keys);
    if (refusal) {
      process.stderr.write(`${refusal}\n\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n`);
      process.exit(1);
    }
    if (o.mode !== '~') cfg.set(o.key, parseHydraValue(o.value!));
  }
  return cfg;
}

const get = <T>(cfg: Cfg, key: string, fallback: T): T => (cfg.has(key) ? (cfg.get(key) as T) : fallback);

// ── Dataset, answers, rewards ───────────────────────────────────────────────────────────────────

interface Row {
  prompt: { role: string; content: string }[];
  reward_model: { ground_truth: string };
  env_kwargs?: { question: string; ground_truth: string };
}

async function readRows(file: string): Promise<Row[]> {
  const buf = fs.readFileSync(file);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  return (await parquetReadObjects({ file: ab })) as unknown as Row[];
}

/** What `tokenizer.batch_decode(prompts, skip_special_tokens=True)` gives for a Qwen chat prompt. */
function decodedPrompt(messages: Row['prompt']): string {
  return `${messages.map((m) => `${m.role}\n${m.content}`).join('\n')}\nassistant\n`;
}

let seed = 1;
function rand(): number {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) / (1 << 24);
}

/** A uuid4 drawn from the seeded `rand()`, as the trainers' `str(uuid.uuid4())`. */
function uuid(): string {
  return 'xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx'.replace(/[xy]/g, (c) => ((rand() * 16) | (c === 'y' ? 8 : 0)).toString(16).slice(-1));
}

function solverOutput(gt: string, correct: boolean, boxed: boolean): string {
  const answer = correct ? gt : `${gt}1`;
  return boxed ? `Let me work it out step by step.\nSo the answer is \\boxed{${answer}}.` : `So the answer is ${answer}.`;
}

function mean(v: number[]): number {
  return v.reduce((a, b) => a + b, 0) / v.length;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ── Files veRL writes ───────────────────────────────────────────────────────────────────────────

/** One background writer: files written strictly in submission order (ThreadPoolExecutor(max_workers=1)). */
let dumpQueue: Promise<void> = Promise.resolve();

function dump(dir: string, step: number, lines: string[], asyncWriter: boolean, failAfterHalf = false): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${step}.jsonl`);
  if (!asyncWriter) {
    if (failAfterHalf) {
      const half = lines.slice(0, Math.ceil(lines.length / 2)).join('\n');
      fs.writeFileSync(file, `${half}\n${lines[Math.ceil(lines.length / 2)]?.slice(0, 10) ?? ''}`);
      return Promise.resolve();
    }
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    say(`Dumped generations to ${file}`);
    return Promise.resolve();
  }
  const lineMs = Number(env.STANDIN_LINE_MS ?? 2);
  dumpQueue = dumpQueue.then(async () => {
    const fd = fs.openSync(file, 'w');
    const limit = failAfterHalf ? Math.ceil(lines.length / 2) : lines.length;
    for (let i = 0; i < limit; i++) {
      fs.writeSync(fd, `${lines[i]}\n`);
      if (lineMs > 0) await sleep(lineMs);
    }
    if (failAfterHalf) fs.writeSync(fd, lines[limit]?.slice(0, 12) ?? '');
    fs.closeSync(fd);
    if (!failAfterHalf) say(`Dumped generations to ${file}`);
  });
  return failAfterHalf ? dumpQueue : Promise.resolve();
}

/**
 * veRL (FSDPCheckpointManager, v0.7.1): shards, fsdp_config.json, huggingface/ with config and
 * tokenizer always and weights with 'hf_model'. DrMAS (its older manager): config and tokenizer
 * beside the shards, huggingface/ only with 'hf_model'. The tracker is written last.
 */
function saveCheckpoint(root: string, step: number, policies: string[], hf: boolean, engine: 'verl' | 'drmas', models: readonly string[] = []): void {
  const stepDir = path.join(root, `global_step_${step}`);
  say(`local_global_step_folder: ${stepDir}`);
  const hfFiles = (dir: string) => {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'config.json'), '{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}\n');
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), '{}\n');
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), '{}\n');
  };
  for (const p of policies) {
    const actor = path.join(stepDir, p);
    fs.mkdirSync(actor, { recursive: true });
    fs.writeFileSync(path.join(actor, 'model_world_size_1_rank_0.pt'), 'fsdp shard');
    fs.writeFileSync(path.join(actor, 'optim_world_size_1_rank_0.pt'), 'optimizer');
    fs.writeFileSync(path.join(actor, 'extra_state_world_size_1_rank_0.pt'), 'extra');
    if (engine === 'verl') {
      fs.writeFileSync(path.join(actor, 'fsdp_config.json'), JSON.stringify({ FSDP_version: 1, world_size: 1 }, null, 4));
      hfFiles(path.join(actor, 'huggingface'));
    } else hfFiles(actor);
    if (hf) {
      hfFiles(path.join(actor, 'huggingface'));
      // 'hf_model' saves the trained weights in the starting model's Hugging Face layout; the
      // stand-in trains nothing, so a starting model that is a folder here is saved as it is.
      const start = models[policies.indexOf(p)] ?? models[0];
      if (start && fs.existsSync(path.join(start, 'config.json'))) fs.cpSync(start, path.join(actor, 'huggingface'), { recursive: true });
      else fs.writeFileSync(path.join(actor, 'huggingface', 'model.safetensors'), Buffer.alloc(16));
    }
  }
  fs.writeFileSync(path.join(stepDir, 'data.pt'), 'dataloader');
  // Written last: "tracker ≥ N" means global_step_N is complete.
  fs.writeFileSync(path.join(root, 'latest_checkpointed_iteration.txt'), String(step));
}

function resumeStep(root: string, mode: string): number {
  if (mode === 'disable') return 0;
  const tracker = path.join(root, 'latest_checkpointed_iteration.txt');
  if (!fs.existsSync(tracker)) {
    say(`Checkpoint tracker file does not exist: ${tracker}`);
    say('Training from scratch');
    return 0;
  }
  const step = Number(fs.readFileSync(tracker, 'utf8').trim());
  const folder = path.join(root, `global_step_${step}`);
  say(`Load from checkpoint folder: ${folder}`);
  say(`Setting global step to ${step}`);
  say(`Resuming from ${folder}`);
  return step;
}

function failNow(step: number, engine: string): never {
  const err = 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)';
  say(
    [
      'Traceback (most recent call last):',
      `  File "/opt/${engine}/verl/trainer/ppo/ray_trainer.py", line 1405, in fit`,
      '    actor_output = self.actor_rollout_wg.update_actor(batch)',
      '                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
      err,
    ].join('\n'),
  );
  driver(
    [
      'Traceback (most recent call last):',
      '  File "<frozen runpy>", line 198, in _run_module_as_main',
      `  File "/opt/${engine}/verl/trainer/main_ppo.py", line 42, in main`,
      '    run_ppo(config)',
      '  File "/usr/lib/python3/dist-packages/ray/_private/worker.py", line 2961, in get',
      '    raise value.as_instanceof_cause()',
      `ray.exceptions.RayTaskError(RuntimeError): ray::${actorName}.run() (pid=${PID}, ip=127.0.0.1, actor_id=8d0c5b1e, repr=<main_ppo.${actorName} object at 0x7f3a2c1d0e50>)`,
      `  File "/opt/${engine}/verl/trainer/ppo/ray_trainer.py", line 1405, in fit`,
      `${err} [step ${step}]`,
    ].join('\n'),
  );
  process.exit(1);
}

function progressBar(step: number, total: number): void {
  // tqdm writes to stderr without a newline; Ray merges the streams, so the next line is glued to it.
  if (env.STANDIN_TQDM === '1') process.stdout.write(`Training Progress: ${Math.round((step / total) * 100)}%|█▌ | ${step}/${total} [00:0${step}<00:01]`);
}

// ── veRL ────────────────────────────────────────────────────────────────────────────────────────

function versionTuple(v: string): number[] {
  return v.split('.').slice(0, 3).map((x) => Number.parseInt(x, 10) || 0);
}

function atLeast(v: number[], a: number, b: number, c = 0): boolean {
  return v[0] !== a ? v[0] > a : v[1] !== b ? v[1] > b : v[2] >= c;
}

/**
 * The training loop's settings both trainers read the same way (DrMAS is a veRL fork: its `trainer.*`
 * keys and defaults are veRL's), and the stand-in's own pace and failure knobs.
 */
function loopSettings(cfg: Cfg) {
  return {
    total: get(cfg, 'trainer.total_training_steps', 2),
    testFreq: get(cfg, 'trainer.test_freq', -1),
    saveFreq: get(cfg, 'trainer.save_freq', -1),
    rolloutDir: get<string | null>(cfg, 'trainer.rollout_data_dir', null),
    ckptDir: get(cfg, 'trainer.default_local_dir', 'checkpoints'),
    stepMs: Number(env.STANDIN_STEP_MS ?? 20),
    failAt: env.STANDIN_FAIL_AT_STEP && (!env.STANDIN_FAIL_ONLY || env.STANDIN_FAIL_ONLY === env.RAY_JOB_SUBMISSION_ID) ? Number(env.STANDIN_FAIL_AT_STEP) : null,
    holdAt: env.STANDIN_HOLD_AT_STEP ? Number(env.STANDIN_HOLD_AT_STEP) : null,
  };
}

/**
 * A test knob, not engine behaviour: with STANDIN_HOLD_AT_STEP a job that started from scratch
 * waits before that step until it is stopped, so a test's stop lands mid-job however slow the
 * machine; a resumed job (from a checkpoint) never waits.
 */
async function holdIfAsked(holdAt: number | null, step: number, resumedFrom: number): Promise<void> {
  if (holdAt === null || step !== holdAt || resumedFrom > 0) return;
  say(`(stand-in) holding before step ${step} until stopped`);
  for (;;) await sleep(60_000);
}

async function runVerl(args: string[]): Promise<void> {
  const version = env.STANDIN_VERL_VERSION ?? '0.7.1';
  const v = versionTuple(version);
  const keysVersion = !atLeast(v, 0, 7) ? '0.6.1' : !atLeast(v, 0, 7, 1) ? '0.7.0' : !atLeast(v, 0, 8) ? '0.7.1' : !atLeast(v, 0, 9) ? '0.8.0' : '0.9.0';
  const cfg = parseArgs(args, 'verl', keysVersion);
  const v1 = atLeast(v, 0, 9) && get<boolean>(cfg, 'trainer.use_v1', true) !== false;
  const asyncWriter = atLeast(v, 0, 8);
  actorName = v1 ? 'TaskRunnerV1' : 'TaskRunner';
  seed = Number(get(cfg, 'data.seed', 1)) || 1;
  const logger = get<string[]>(cfg, 'trainer.logger', ['console']);
  for (const l of logger) {
    if (!['wandb', 'mlflow', 'swanlab', 'vemlp_wandb', 'tensorboard', 'console', 'clearml', 'trackio', 'file'].includes(l)) {
      driver(`AssertionError: ${l} is not supported`);
      process.exit(1);
    }
  }
  say(`${actorName} hostname: standin, PID: ${PID}`);
  const rewardPath = (atLeast(v, 0, 7, 1) ? get(cfg, 'reward.custom_reward_function.path', null) : null) ?? get(cfg, 'custom_reward_function.path', null);
  if (rewardPath === null) {
    driver(`NotImplementedError: Reward function is not implemented for data_source='marsrl/math'`);
    process.exit(1);
  }
  const train = await readRows(get(cfg, 'data.train_files', ''));
  const test = await readRows(get(cfg, 'data.val_files', ''));
  const n = get(cfg, 'actor_rollout_ref.rollout.n', 1);
  const batch = get(cfg, 'data.train_batch_size', 8);
  const valN = get(cfg, 'actor_rollout_ref.rollout.val_kwargs.n', 1);
  const { total, testFreq, saveFreq, rolloutDir, ckptDir, stepMs, failAt, holdAt } = loopSettings(cfg);
  const validationDir = get<string | null>(cfg, 'trainer.validation_data_dir', null);
  const hf = get<string[]>(cfg, 'actor_rollout_ref.actor.checkpoint.save_contents', []).includes('hf_model');
  const penalty = Number(env.MARSRL_FORMAT_PENALTY ?? 0);

  let metricsFd: number | null = null;
  if (logger.includes('file')) {
    const file = env.VERL_FILE_LOGGER_PATH ?? path.join('.', 'marsrl', 'run.jsonl');
    if (atLeast(v, 0, 8)) say(`Creating file logger at ${path.resolve(file)}`);
    metricsFd = fs.openSync(file, 'w');
  }
  const tb = logger.includes('tensorboard') ? new EventWriter(env.TENSORBOARD_DIR ?? 'tensorboard_log') : null;
  const floatKeys = new Set(['score', 'reward', 'acc', 'format_valid']);

  const log = (step: number, data: Record<string, number>) => {
    if (metricsFd !== null) {
      const line = atLeast(v, 0, 7, 1) ? JSON.stringify({ step, data }) : `{"step": ${step}, "data": {${Object.entries(data).map(([k, x]) => `${JSON.stringify(k)}: ${pyFloat(x)}`).join(', ')}}}`;
      fs.writeSync(metricsFd, `${line}\n`);
    }
    if (tb) for (const [k, x] of Object.entries(data)) tb.addScalar(k, x, step);
    const wrap = (k: string, x: number) => (atLeast(v, 0, 9) && !k.startsWith('training/') ? `np.float64(${pyRepr(k, x)})` : pyRepr(k, x));
    say(['step:' + step, ...Object.entries(data).map(([k, x]) => `${k}:${wrap(k, x)}`)].join(' - '));
  };

  const sample = (row: Row, correctP: number) => {
    const gt = row.reward_model.ground_truth;
    const correct = rand() < correctP;
    const boxed = rand() < 0.9;
    const output = solverOutput(gt, correct, boxed);
    const score = (correct ? 1 : 0) - (boxed ? 0 : penalty);
    return { input: decodedPrompt(row.prompt), output, gts: gt, score, acc: correct ? 1 : 0, pred: correct ? gt : `${gt}1`, format_valid: boxed ? 1 : 0 };
  };

  const validate = async (step: number): Promise<Record<string, number>> => {
    const lines: string[] = [];
    const accs: number[] = [];
    const rewards: number[] = [];
    const rows: { uid: string; line: Record<string, unknown> }[] = [];
    for (const row of test) {
      const u = uuid();
      for (let s = 0; s < valN; s++) {
        const x = sample(row, 0.3 + step * 0.05);
        accs.push(x.acc);
        rewards.push(x.score);
        const line: Record<string, unknown> = { input: x.input, output: x.output, ...(atLeast(v, 0, 6) ? { gts: x.gts } : {}), score: x.score, step, reward: x.score, acc: x.acc, pred: x.pred, format_valid: x.format_valid };
        if (v1) line.uid = `${u}_${s}_0`;
        rows.push({ uid: `${u}_${s}_0`, line });
      }
    }
    if (v1) rows.sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
    for (const r of rows) lines.push(pyJsonLine(r.line, floatKeys));
    if (validationDir) await dump(validationDir, step, lines, asyncWriter);
    return { [`val-core/marsrl/math/acc/mean@${valN}`]: mean(accs), [`val-aux/marsrl/math/reward/mean@${valN}`]: mean(rewards), [`val-aux/marsrl/math/format_valid/mean@${valN}`]: 0.9 };
  };

  let step = resumeStep(ckptDir, get(cfg, 'trainer.resume_mode', 'auto'));
  const resumedFrom = step;
  if (get(cfg, 'trainer.val_before_train', true)) log(step, await validate(step));
  step++;
  let cursor = (step - 1) * batch;
  for (; step <= total; step++) {
    await holdIfAsked(holdAt, step, resumedFrom);
    await sleep(stepMs);
    const lines: string[] = [];
    const scores: number[] = [];
    const entries: { uid: string; line: Record<string, unknown> }[] = [];
    for (let p = 0; p < batch; p++) {
      const row = train[cursor++ % train.length];
      const u = uuid();
      for (let s = 0; s < n; s++) {
        const x = sample(row, 0.3 + step * 0.05);
        scores.push(x.score);
        const line: Record<string, unknown> = v1
          ? { input: x.input, output: x.output, gts: x.gts, score: x.score, step, uid: `${u}_${s}_0` }
          : { input: x.input, output: x.output, ...(atLeast(v, 0, 6) ? { gts: x.gts } : {}), score: x.score, step, acc: x.acc, pred: x.pred, format_valid: x.format_valid };
        entries.push({ uid: `${u}_${s}_0`, line });
      }
    }
    if (v1) entries.sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
    else entries.sort(() => rand() - 0.5); // _balance_batch reorders: groups are not contiguous
    for (const e of entries) lines.push(pyJsonLine(e.line, floatKeys));
    const isTest = testFreq > 0 && (step === total || step % testFreq === 0);
    let val: Record<string, number> = {};
    if (v1 && isTest) val = await validate(step);
    if (rolloutDir) {
      if (failAt === step) {
        await dump(rolloutDir, step, lines, asyncWriter, true);
        failNow(step, 'verl');
      }
      await dump(rolloutDir, step, lines, asyncWriter);
    } else if (failAt === step) failNow(step, 'verl');
    if (!v1 && isTest) val = await validate(step);
    if (saveFreq > 0 && (step === total || step % saveFreq === 0)) saveCheckpoint(ckptDir, step, ['actor'], hf, 'verl', [get<string>(cfg, 'actor_rollout_ref.model.path', '')]);
    progressBar(step, total);
    log(step, {
      'actor/entropy': 0.52 - step * 0.01,
      'actor/pg_loss': -0.003,
      'actor/kl_loss': 0,
      'actor/pg_clipfrac': 0.0012,
      'actor/grad_norm': 0.184 + step * 0.01,
      'actor/lr': get(cfg, 'actor_rollout_ref.actor.optim.lr', 1e-6),
      'training/global_step': step,
      'training/epoch': 0,
      'critic/score/mean': mean(scores),
      'critic/score/max': Math.max(...scores),
      'critic/score/min': Math.min(...scores),
      'critic/advantages/mean': 0,
      'response_length/mean': 212.4,
      'timing_s/gen': 0.02,
      'timing_s/update_actor': 0.01,
      'timing_s/step': stepMs / 1000,
      'perf/throughput': 2689.2,
      ...val,
    });
  }
  await dumpQueue;
  if (metricsFd !== null) fs.closeSync(metricsFd);
  say(`Final validation metrics: {'val-core/marsrl/math/acc/mean@${valN}': 0.5}`);
}

// ── DrMAS ───────────────────────────────────────────────────────────────────────────────────────

const AGENT_REGISTRY = ['Solver Agent', 'Verifier Agent'];

function hookLoaded(): boolean {
  if (env.__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR !== 'marsrl_drmas_hook.install') return false;
  return (env.PYTHONPATH ?? '').split(':').some((d) => d && fs.existsSync(path.join(d, 'marsrl_drmas_hook.py')));
}

async function runDrmas(args: string[]): Promise<void> {
  if (!fs.existsSync(path.join(process.cwd(), 'agent_system')) && !(env.PYTHONPATH ?? '').split(':').some((d) => d && fs.existsSync(path.join(d, 'agent_system')))) {
    driver("ModuleNotFoundError: No module named 'agent_system'");
    process.exit(1);
  }
  const cfg = parseArgs(args, 'drmas', '19c632bc');
  seed = Number(get(cfg, 'env.seed', 0)) + 1;
  const logger = get<string[]>(cfg, 'trainer.logger', ['console']);
  for (const l of logger) {
    if (!['wandb', 'mlflow', 'swanlab', 'vemlp_wandb', 'tensorboard', 'console', 'clearml'].includes(l)) {
      say(`AssertionError: ${l} is not supported`);
      process.exit(1);
    }
  }
  const hook = hookLoaded();
  const marsrl = hook && env.MARSRL_DRMAS_ORCHESTRA === 'marsrl';
  const agentIds = get<string[]>(cfg, 'agent.agent_ids', AGENT_REGISTRY);
  const modelIds = get<string[]>(cfg, 'agent.model_ids', []);
  const sharing = get(cfg, 'agent.model_sharing', false);
  if (get(cfg, 'actor_rollout_ref.rollout.n', 1) !== 1) {
    say('AssertionError: In verl, actor_rollout_ref.rollout.n>1 is for GRPO. In verl+env, we keep n=1, and achieve GRPO by env.rollout.n');
    process.exit(1);
  }
  if (marsrl) say('[marsrl hook] MarsRL orchestra (Solver → Verifier → Corrector) installed as the math orchestra');
  const registered = marsrl ? [...AGENT_REGISTRY, 'Corrector Agent'] : AGENT_REGISTRY;
  const unknown = agentIds.find((a) => !registered.includes(a));
  if (unknown) {
    say(`Traceback (most recent call last):\n  File "/opt/DrMAS/agent_system/agent/registry.py", line 38, in create\nKeyError: "Unknown agent '${unknown}'. Registered: [${registered.map((r) => `'${r}'`).join(', ')}]"`);
    driver(`ray.exceptions.RayTaskError(KeyError): ray::TaskRunner.run() (pid=${PID}, ip=127.0.0.1)\nKeyError: "Unknown agent '${unknown}'. Registered: [${registered.map((r) => `'${r}'`).join(', ')}]"`);
    process.exit(1);
  }
  const norm = (x: string) => x.split('/').pop()!;
  const groups: { wg: string; agents: string[] }[] = [];
  if (!sharing) agentIds.forEach((a, i) => groups.push({ wg: `${norm(modelIds[i])}_${norm(a)}`, agents: [a] }));
  else {
    const byModel = new Map<string, string[]>();
    agentIds.forEach((a, i) => byModel.set(modelIds[i], [...(byModel.get(modelIds[i]) ?? []), a]));
    for (const [m, as] of byModel) groups.push({ wg: [norm(m), ...as.map((a) => a.trim().replace(/ /g, ''))].join('_'), agents: as });
  }
  const wgOf = (agent: string) => groups.find((g) => g.agents.includes(agent))!.wg;
  const train = await readRows(get(cfg, 'data.train_files', ''));
  const batch = get(cfg, 'data.train_batch_size', 4);
  const groupN = get(cfg, 'env.rollout.n', 2);
  const valN = get(cfg, 'env.rollout.val_n', 1);
  const loops = get(cfg, 'agent.orchestra.math.max_loop_num', 3);
  const { total, testFreq, saveFreq, rolloutDir, ckptDir, stepMs, failAt } = loopSettings(cfg);
  const hf = get<string[]>(cfg, 'actor_rollout_ref.actor.checkpoint.contents', []).includes('hf_model');
  const penalty = get(cfg, 'actor_rollout_ref.actor.use_invalid_action_penalty', true) ? get(cfg, 'actor_rollout_ref.actor.invalid_action_penalty_coef', 0.1) : 0;
  const byAgent = get(cfg, 'algorithm.group_by_agent_id', false);
  const tb = logger.includes('tensorboard') ? new EventWriter(env.TENSORBOARD_DIR ?? 'tensorboard_log') : null;
  const floatKeys = new Set(['score', 'advantage']);

  const log = (step: number, data: Record<string, number>) => {
    if (tb) for (const [k, x] of Object.entries(data)) tb.addScalar(k, x, step);
    say(['step:' + step, ...Object.entries(data).map(([k, x]) => `${k}:${Number.isNaN(x) ? 'nan' : x.toFixed(3)}`)].join(' - '));
  };

  let step = resumeStep(ckptDir, get(cfg, 'trainer.resume_mode', 'auto'));
  if (get(cfg, 'trainer.val_before_train', true)) log(step, { 'val/marsrl/math/test_score': 0.3, [`val/pass@${valN}`]: 0.31, [`val/avg@${valN}`]: 0.3, [`val/marsrl/math/pass@${valN}`]: 0.31 });
  step++;
  let cursor = (step - 1) * batch;
  for (; step <= total; step++) {
    await sleep(stepMs);
    interface Turn { agent: string; round: number; turn: number; input: string; output: string; valid: boolean; uid: string; traj: string; score: number; adv: number }
    const turns: Turn[] = [];
    for (let p = 0; p < batch; p++) {
      const row = train[cursor++ % train.length];
      const gt = row.env_kwargs?.ground_truth ?? row.reward_model.ground_truth;
      const question = row.env_kwargs?.question ?? row.prompt[0].content;
      const uid = uuid();
      for (let t = 0; t < groupN; t++) {
        const traj = uuid();
        const chain: Turn[] = [];
        let context = '';
        let correct = rand() < 0.4;
        let boxed = rand() < 0.9;
        const add = (agent: string, output: string, valid: boolean) => {
          const round = chain.filter((c) => c.agent === agent).length;
          chain.push({ agent, round, turn: chain.length, input: `user\n# Task Introduction\n${question}\n# Your Teammates' Outputs\n${context}\n# Your Role\nYou are a "${agent}".\nassistant\n`, output, valid, uid, traj, score: 0, adv: 0 });
          context += `\nThe output of "${agent}": ${output}\n`;
        };
        add('Solver Agent', solverOutput(gt, correct, boxed), boxed);
        for (let loop = 1; loop < loops && agentIds.includes('Verifier Agent'); loop++) {
          const approve = correct ? rand() < 0.8 : rand() < 0.3;
          add('Verifier Agent', `Checking… <verify>${approve ? 'approve' : 'reject'}</verify>`, true);
          if (approve) break;
          const fixer = marsrl && agentIds.includes('Corrector Agent') ? 'Corrector Agent' : 'Solver Agent';
          correct = rand() < 0.5;
          boxed = rand() < 0.9;
          add(fixer, solverOutput(gt, correct, boxed), boxed);
        }
        for (const c of chain) c.score = (correct ? 1 : 0) - (c.valid ? 0 : penalty);
        turns.push(...chain);
      }
    }
    // Per worker group, in its order: padded with copies to a multiple of 4 (adjust_batch mode="copy"), then reordered.
    const rows: (Turn & { dup: number })[] = [];
    for (const g of groups) {
      const block: (Turn & { dup: number })[] = turns.filter((t) => g.agents.includes(t.agent)).map((t) => ({ ...t, dup: 0 }));
      const pad = (4 - (block.length % 4)) % 4;
      const originals = block.slice();
      for (let i = 0; i < pad; i++) block.push({ ...originals[Math.floor(rand() * originals.length)], dup: 1 });
      block.sort(() => rand() - 0.5);
      rows.push(...block);
    }
    // GRPO advantages (core_algos.py:497-569): unbiased std, eps 1e-6, group of one → (R − 0) / 1; copies count.
    const key = (r: Turn) => (byAgent ? `${r.uid}_${r.agent}` : r.uid);
    const stats = new Map<string, number[]>();
    for (const r of rows) stats.set(key(r), [...(stats.get(key(r)) ?? []), r.score]);
    for (const r of rows) {
      const s = stats.get(key(r))!;
      const m = s.length === 1 ? 0 : mean(s);
      const sd = s.length === 1 ? 1 : Math.sqrt(s.reduce((a, b) => a + (b - m) ** 2, 0) / (s.length - 1));
      r.adv = (r.score - m) / (sd + 1e-6);
    }
    // The Studio hook's dup flag: first occurrence of (traj, agent, turn, input, output) in file order.
    const seen = new Set<string>();
    const lines = rows.map((r) => {
      const line: Record<string, unknown> = { input: r.input, output: r.output, score: r.score, step };
      if (hook) {
        const id = JSON.stringify([r.traj, r.agent, r.turn, r.input, r.output]);
        Object.assign(line, { agent_id: r.agent, wg_id: wgOf(r.agent), uid: r.uid, traj_uid: r.traj, env_step: 1, turn: r.turn, round: r.round, is_action_valid: r.valid ? 1 : 0, advantage: r.adv, dup: seen.has(id) ? 1 : 0 });
        seen.add(id);
      }
      return pyJsonLine(line, floatKeys);
    });
    driver('list(reward_extra_infos_dict.keys())=[]');
    say(`group_by_agent_id:  ${byAgent ? 'True' : 'False'}`);
    if (rolloutDir) {
      say("_StringKeys(dict_keys(['prompts', 'responses', 'input_ids', 'attention_mask', 'position_ids', 'token_level_scores', 'advantages', 'returns']))");
      if (failAt === step) {
        await dump(rolloutDir, step, lines, false, true);
        failNow(step, 'DrMAS');
      }
      await dump(rolloutDir, step, lines, false);
    } else if (failAt === step) failNow(step, 'DrMAS');
    const isTest = testFreq > 0 && (step === total || step % testFreq === 0);
    if (saveFreq > 0 && (step === total || step % saveFreq === 0)) saveCheckpoint(ckptDir, step, groups.map((g) => path.join('actor', g.wg)), hf, 'drmas', groups.map((g) => modelIds[agentIds.indexOf(g.agents[0])] ?? ''));
    const data: Record<string, number> = {};
    for (const g of groups) {
      const mine = rows.filter((r) => g.agents.includes(r.agent));
      data[`global_seqlen/${g.wg}/mean`] = 51234;
      data[`actor/${g.wg}/pg_loss`] = -0.012;
      data[`actor/${g.wg}/entropy_loss`] = 0.61;
      data[`actor/${g.wg}/pg_clipfrac`] = 0.002;
      data[`actor/${g.wg}/grad_norm`] = 0.1 + 0.05 * groups.indexOf(g) + step * 0.001;
      data[`actor/${g.wg}/lr`] = 1e-6;
      data[`critic/${g.wg}/score/mean`] = mean(mine.map((r) => r.score));
    }
    Object.assign(data, { [`episode/pass@${groupN}`]: 0.781, [`episode/avg@${groupN}`]: 0.422, 'response_length/mean': 300, 'training/global_step': step, 'training/epoch': 0, 'timing_s/step': stepMs / 1000 });
    if (isTest) Object.assign(data, { 'val/marsrl/math/test_score': 0.4, [`val/pass@${valN}`]: 0.45, [`val/avg@${valN}`]: 0.4, [`val/marsrl/math/pass@${valN}`]: 0.45 });
    progressBar(step, total);
    log(step, data);
  }
}

// ── Entry ───────────────────────────────────────────────────────────────────────────────────────

async function main(): Promise<void> {
  if (argv[0] === '-c') {
    const probe = env.STANDIN_PROBE ? JSON.parse(env.STANDIN_PROBE) : {};
    process.stdout.write(`MARSRL_PROBE ${JSON.stringify({ python: process.argv[1], python_version: '3.11.7', verl: '0.7.1', drmas_root: null, drmas: false, ray: '2.58.0', torch: '2.8.0', vllm: '0.11.0', sglang: null, tensorboard: '2.20.0', ...probe })}\n`);
    return;
  }
  if (argv[0] === '-m' && argv[1] === 'ray.scripts.scripts' && argv[2] === 'start') {
    const port = Number(/--dashboard-port=(\d+)/.exec(argv.join(' '))?.[1] ?? 8265);
    const fake = await new FakeRay({ port }).start();
    process.stdout.write('Local node IP: 127.0.0.1\n\n--------------------\nRay runtime started.\n--------------------\n');
    process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
    await new Promise(() => undefined);
    return;
  }
  if (argv[0] === '-m' && argv[1] === 'verl.trainer.main_ppo') {
    const rest = argv.slice(2);
    if (rest.some((a) => a.startsWith('agent.agent_ids='))) await runDrmas(rest);
    else await runVerl(rest);
    return;
  }
  process.stderr.write(`standin python: unsupported arguments ${JSON.stringify(argv)}\n`);
  process.exit(2);
}

await main();

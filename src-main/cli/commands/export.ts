import { EXPORT_FORMATS, ExportError, runExport, type ExportContainer, type ExportOptions, type ExportResult, type TensorboardExportOptions, type TensorboardExportResult } from '../../engine/export';
import { METRICS_EXPORT_FORMAT, validateOptions } from '../../engine/export/options';
import { validateTensorboardOptions } from '../../engine/export/tensorboard';
import type { Split } from '../../engine/store/types';
import { runRef, UsageError } from '../args';
import { openCliStudio, defineCommand } from '../context';
import { formatDuration } from '#shared/format';
import { printJson } from '../format';

const usage = `Usage: marsrl export RUN... --format FORMAT --out PATH [--jsonl | --parquet] [filters] [--dedupe] [--force] [--db PATH] [--json]

Exports the turns of one or more runs (ids or names) as a dataset file, with a dataset card
written beside it as PATH.card.md. The file appears only when complete; an error or Ctrl-C
leaves nothing behind.

Formats:
  trajectories  one row per turn: ids to rebuild each episode tree, prompt, text, parsed answer or
                verdict, correctness, reward and components, advantage (mode, μ, σ), versions
  verl          veRL RL Parquet: one row per problem (data_source, prompt, ability,
                reward_model {style, ground_truth}, extra_info {split, index, run_id, …})
  sft           chat-messages SFT rows per agent; by default only correct, well-formed turns
  pairs         preference pairs (prompt, chosen, rejected) from one group and agent
  tensorboard   the runs' metrics as TensorBoard event files: PATH is an existing folder and
                each run is written to PATH/<name>-<id>/events.out.tfevents.* (every metric
                point, in step order; no container, filters or card)

Container: --jsonl or --parquet; by default from PATH's extension, else Parquet for
trajectories and verl, JSONL for sft and pairs.

Filters:
  --agent NAME        only this agent (repeat, or comma-separate: --agent solver,verifier1)
  --steps FROM..TO    RL steps, inclusive (either end may be left out: --steps 100..)
  --split train|test  only this split
  --correct true|false|any        correctness (sft default: true)
  --format-valid true|false|any   output parsed (sft default: true)
  --min-reward X / --max-reward X reward range, inclusive (drops unrewarded turns)
  --include-superseded  also turns of killed attempts whose steps a resume redid
                        (left out by default; every row names its attempt)
  --dedupe            drop rows whose content repeats an earlier one
  --counterfactual    trajectories: add reward_<scheme> and advantage_<mode> columns (issue 40)
  --no-system         no system message in sft/pairs/verl prompts
  --force             replace an existing PATH (and its card)`;

const OPTIONS = {
  format: { type: 'string' },
  out: { type: 'string', short: 'o' },
  jsonl: { type: 'boolean', default: false },
  parquet: { type: 'boolean', default: false },
  agent: { type: 'string', multiple: true },
  steps: { type: 'string' },
  split: { type: 'string' },
  correct: { type: 'string' },
  'format-valid': { type: 'string' },
  'min-reward': { type: 'string' },
  'max-reward': { type: 'string' },
  dedupe: { type: 'boolean', default: false },
  counterfactual: { type: 'boolean', default: false },
  'no-system': { type: 'boolean', default: false },
  force: { type: 'boolean', default: false },
  'include-superseded': { type: 'boolean', default: false },
} as const;

function triFlag(name: string, raw: string | undefined): boolean | 'any' | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === 'yes') return true;
  if (raw === 'false' || raw === 'no') return false;
  if (raw === 'any' || raw === 'all') return 'any';
  throw new UsageError(`--${name} must be true, false or any (got ${JSON.stringify(raw)})`, usage);
}

function numberFlag(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) throw new UsageError(`--${name} must be a number (got ${JSON.stringify(raw)})`, usage);
  return value;
}

/** `--steps 10..20`, `--steps 10..`, `--steps ..20` or `--steps 7`. */
function stepRange(raw: string | undefined): { stepFrom?: number; stepTo?: number } {
  if (raw === undefined) return {};
  const match = /^(\d*)(?:\.\.|:)(\d*)$/.exec(raw.trim()) ?? (/^\d+$/.test(raw.trim()) ? [raw, raw.trim(), raw.trim()] : null);
  if (!match || (match[1] === '' && match[2] === '')) {
    throw new UsageError(`--steps must be FROM..TO, FROM.., ..TO or one step (got ${JSON.stringify(raw)})`, usage);
  }
  return { stepFrom: match[1] === '' ? undefined : Number(match[1]), stepTo: match[2] === '' ? undefined : Number(match[2]) };
}

const fmt = (n: number) => n.toLocaleString('en-US');

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

/** A one-line bar on stderr, redrawn at most ten times a second. */
function progressBar(unit: string): { update(done: number, total: number): void; clear(): void } {
  const started = performance.now();
  let last = 0;
  let drawn = false;
  return {
    update(done, total) {
      const now = performance.now();
      if (now - last < 100 && done < total) return;
      last = now;
      const fraction = total > 0 ? Math.min(1, done / total) : 1;
      const width = 24;
      const filled = Math.round(fraction * width);
      const seconds = (now - started) / 1000;
      const rate = seconds > 0 ? done / seconds : 0;
      const eta = rate > 0 ? formatDuration((total - done) / rate) : '?';
      process.stderr.write(
        `\r\x1b[K${(fraction * 100).toFixed(0).padStart(3)}% [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${fmt(done)}/${fmt(total)} ${unit}  ${fmt(Math.round(rate))}/s  ETA ${eta}`,
      );
      drawn = true;
    },
    clear() {
      if (drawn) process.stderr.write('\r\x1b[K');
    },
  };
}

function tensorboardSummary(result: TensorboardExportResult): string {
  const runs = result.runs.map((r) => `  ${r.id} (${r.name}): ${fmt(r.points)} points → ${r.file}`).join('\n');
  return `Exported ${fmt(result.rows)} metric points (${bytes(result.bytes)}) of ${result.runs.length} run${result.runs.length > 1 ? 's' : ''} as TensorBoard event files in ${formatDuration(result.seconds)}; view them with: tensorboard --logdir ${result.out}\n${runs}`;
}

function summary(result: ExportResult): string {
  const runs = result.runs.map((r) => `${r.id} (${r.name})`).join(', ');
  const extra: string[] = [];
  if (result.duplicatesDropped) extra.push(`${fmt(result.duplicatesDropped)} duplicates dropped`);
  if (result.pairs) extra.push(`${fmt(result.pairs.unpairedTurns)} turns unpaired, ${fmt(result.pairs.unrewardedTurns)} unrewarded`);
  return (
    `Exported ${fmt(result.rows)} ${result.format} rows (${result.container}, ${bytes(result.bytes)}) from ${fmt(result.sourceRows)} ${result.sourceUnit} of run${result.runs.length > 1 ? 's' : ''} ${runs} ` +
    `in ${formatDuration(result.seconds)} to ${result.out}${extra.length ? `; ${extra.join(', ')}` : ''}; card: ${result.card}`
  );
}

export const exportCommand = defineCommand({
  name: 'export',
  summary: 'export runs as datasets (trajectories, veRL, SFT, preference pairs)',
  usage,
  options: OPTIONS,
  async run({ values, positionals }, ctx) {
    if (positionals.length === 0) throw new UsageError('export needs at least one RUN (id or name); list runs with: marsrl runs', usage);
    for (const ref of positionals) runRef(ref, 'each RUN', usage);
    if (values.format === undefined) throw new UsageError(`export needs --format, one of ${[...EXPORT_FORMATS, METRICS_EXPORT_FORMAT].join(', ')}`, usage);
    if (values.out === undefined) throw new UsageError('export needs --out PATH (the dataset file to write)', usage);
    if (values.jsonl && values.parquet) throw new UsageError('choose one of --jsonl and --parquet', usage);
    const container: ExportContainer | undefined = values.jsonl ? 'jsonl' : values.parquet ? 'parquet' : undefined;
    const agents = (values.agent ?? []).flatMap((a) => a.split(',')).map((a) => a.trim()).filter((a) => a !== '');

    const options: ExportOptions | TensorboardExportOptions = {
      runs: positionals,
      format: values.format as ExportOptions['format'] | 'tensorboard',
      container,
      out: values.out,
      force: values.force,
      dedupe: values.dedupe,
      ...(values.counterfactual ? { counterfactual: true } : {}),
      systemPrompt: !values['no-system'],
      filters: {
        agents: agents.length ? agents : undefined,
        ...stepRange(values.steps),
        split: values.split as Split | undefined,
        correct: triFlag('correct', values.correct),
        formatValid: triFlag('format-valid', values['format-valid']),
        minReward: numberFlag('min-reward', values['min-reward']),
        maxReward: numberFlag('max-reward', values['max-reward']),
        includeSuperseded: values['include-superseded'],
      },
    };

    const fail = (error: unknown): number => {
      if (!(error instanceof ExportError)) throw error;
      ctx.err(`marsrl export: ${error.message}`);
      if (error.code === 'aborted') return 130;
      return error.isUsage ? 2 : 1;
    };

    // Everything checkable without the store fails before the database is opened (or created).
    try {
      if (options.format === 'tensorboard') validateTensorboardOptions(options);
      else validateOptions(options);
    } catch (error) {
      return fail(error);
    }

    const { store } = openCliStudio(values.db, ctx.env);
    // Ctrl-C, a closed terminal or a polite kill cancel the export, which then removes its
    // temporary files; only SIGKILL leaves one, swept by the next export to the same path.
    const controller = new AbortController();
    const onSignal = () => controller.abort();
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    for (const s of signals) process.once(s, onSignal);
    const unit = options.format === 'tensorboard' ? 'metric points' : options.format === 'verl' ? 'problems' : 'turns';
    const bar = process.stderr.isTTY && !values.json ? progressBar(unit) : null;
    try {
      const result = await runExport(store, options, { signal: controller.signal, onProgress: bar ? (d, t) => bar.update(d, t) : undefined });
      bar?.clear();
      if (values.json) printJson(ctx.out, result);
      else ctx.out(result.format === 'tensorboard' ? tensorboardSummary(result) : summary(result));
      return 0;
    } catch (error) {
      bar?.clear();
      return fail(error);
    } finally {
      for (const s of signals) process.off(s, onSignal);
      store.close();
    }
  },
});

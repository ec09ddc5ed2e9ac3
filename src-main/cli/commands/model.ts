/**
 * `marsrl model …`: Hugging Face models from the terminal (issue #13) — inspect a downloaded
 * folder, export a folder or a Studio checkpoint as a Hugging Face folder or GGUF, and generate
 * (model-generate.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { HfArchConfig } from '../../engine/hf/config';
import type { HfExportSource } from '../../engine/hf/export';
import type { SafetensorsDtype } from '../../engine/hf/safetensors';
import { parseCommand, printedHelp, UsageError } from '../args';
import type { Command, CommandContext } from '../context';
import { printJson } from '../format';
import { formatBytes, formatDuration } from '#shared/format';

const usage = `Usage: marsrl model inspect DIR [--json]
       marsrl model export SRC --format hf|gguf|peft [--dtype f32|f16|bf16] [--base DIR] --out PATH [--force]
       marsrl model export RUN|CHECKPOINT --format peft|hf [--policy ID] [--step N] [--db PATH] --out PATH [--force]
       marsrl model generate DIR|CHECKPOINT (--prompt TEXT | --chat FILE | --prompt-ids 1,2,3) [options]

Hugging Face decoder models (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM) in the layout
the Hub uses: config.json, model.safetensors (or an index and shards), tokenizer.json,
tokenizer_config.json, generation_config.json.

  inspect   architecture, parameters, weights and dtypes, context, tokenizer, chat template, and
            whether the Studio can run it (if not, why: file and key). Exit code 1 when not.
  export    SRC is a model folder, a Studio checkpoint of a Hugging Face policy, or a PEFT LoRA
            adapter folder (adapter_config.json + adapter_model.safetensors, issue #14) whose
            base is --base DIR or its base_model_name_or_path when that is a local folder;
            an adapter exports merged (W + (alpha/r)·B A) as hf or gguf.
            --format peft  the adapter again as a PEFT folder, checked against the base (its
                           names and shapes are PEFT's; only for an adapter SRC)
            --format hf    a Hugging Face folder (config.json, model.safetensors, tokenizer files,
                           generation_config.json); --dtype f32, f16 or bf16 (default: the
                           source's torch_dtype, else f32)
            --format gguf  one GGUF file for llama.cpp / Ollama; --dtype f32 (default) or f16
            --force        replace an existing PATH (otherwise an existing PATH is refused)
            RUN|CHECKPOINT (issue #14): a run id (in --db, like other commands; its newest
            checkpoint, or --step N's) or a run's checkpoint folder (one policy's, or a step's
            folder of policies); --policy ID picks the policy when there are several.
            --format peft  the run's LoRA adapters as PEFT writes them (PeftModel.from_pretrained,
                           vLLM --lora-modules); a full fine-tune has none: use hf
            --format hf    a merged Hugging Face folder (base + (alpha/r)·B A, or the full weights)
  generate  see \`marsrl model generate --help\``;

const INSPECT_OPTIONS = {} as const;
const EXPORT_OPTIONS = {
  format: { type: 'string' },
  dtype: { type: 'string' },
  out: { type: 'string', short: 'o' },
  force: { type: 'boolean', default: false },
  base: { type: 'string' },
  policy: { type: 'string' },
  step: { type: 'string' },
} as const;

async function inspect(argv: string[], ctx: CommandContext): Promise<number> {
  const { values, positionals } = parseCommand(argv, INSPECT_OPTIONS, usage, 1);
  if (printedHelp(values, usage, ctx)) return 0;
  const dir = positionals[0];
  if (!dir) throw new UsageError('inspect needs the model folder: marsrl model inspect DIR', usage);
  const { inspectHfFolder, formatInspectReport } = await import('../../engine/checkpoint/inspect');
  const report = inspectHfFolder(dir);
  if (values.json) printJson(ctx.out, report);
  else ctx.out(formatInspectReport(report));
  if (!report.supported) {
    for (const p of report.problems) ctx.err(`marsrl model inspect: ${p}`);
    return 1;
  }
  return 0;
}

const HF_DTYPES: Record<string, SafetensorsDtype> = { f32: 'F32', f16: 'F16', bf16: 'BF16' };
const TORCH_TO_DTYPE: Record<string, 'f32' | 'f16' | 'bf16'> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16' };

/**
 * The export source: a Hugging Face folder (tensors stream from its files), or a Studio
 * checkpoint of the hf family (loaded into the engine; its current weights are written).
 */
async function exportSource(src: string, baseFlag: string | undefined): Promise<{ source: HfExportSource; release: () => void; adapter?: PeftSource }> {
  if (!fs.existsSync(src)) throw new Error(`${src}: not found (give a model folder or a Studio checkpoint folder)`);
  const lora = await import('../../engine/hf/lora');
  if (lora.isPeftAdapterFolder(src)) return adapterSource(src, baseFlag);
  if (baseFlag !== undefined) throw new UsageError(`--base is for a LoRA adapter SRC (a folder with ${lora.PEFT_CONFIG}); ${src} is a full model`, usage);
  const { CHECKPOINT_MANIFEST, checkpointFamily } = await import('../../engine/checkpoint/manifest');
  if (fs.existsSync(path.join(src, CHECKPOINT_MANIFEST))) {
    const family = checkpointFamily(src);
    if (family !== 'hf') throw new Error(`${path.join(src, CHECKPOINT_MANIFEST)}: family ${family}: a checkpoint of the Studio's own GPT has no Hugging Face architecture to export to (only Llama / Qwen2 / Qwen3 policies export as hf or gguf)`);
    const { initBackend } = await import('../../engine/model/backend');
    await initBackend('auto');
    const { loadHfCheckpoint } = await import('../../engine/checkpoint/checkpoint');
    const { hfNamedTensors } = await import('../../engine/hf/load');
    const { hfConfigJson } = await import('../../engine/hf/config');
    const loaded = loadHfCheckpoint(src);
    loaded.optimizer?.dispose();
    const config: HfArchConfig = loaded.model.config;
    return {
      source: { config, configJson: hfConfigJson(config), tensors: hfNamedTensors(loaded.model), tokenizerDir: loaded.tokenizerDir },
      release: () => loaded.model.dispose(),
    };
  }
  const { hfFolderSource } = await import('../../engine/hf/export');
  return { source: hfFolderSource(src), release: () => {} };
}

interface PeftSource {
  config: HfArchConfig;
  settings: import('../../engine/hf/lora').LoraSettings;
  weights: import('../../engine/hf/lora').LoraWeights;
  baseModelNameOrPath: string;
}

/**
 * A PEFT LoRA adapter as an export source: its base folder (--base, else the adapter's
 * base_model_name_or_path when that is a local folder) streamed with the adapters merged in.
 */
async function adapterSource(src: string, baseFlag: string | undefined): Promise<{ source: HfExportSource; release: () => void; adapter: PeftSource }> {
  const lora = await import('../../engine/hf/lora');
  const { hfFolderSource } = await import('../../engine/hf/export');
  const { readHfConfig } = await import('../../engine/hf/load');
  const configFile = path.join(src, lora.PEFT_CONFIG);
  let named: unknown = null;
  try {
    named = (JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>).base_model_name_or_path;
  } catch {
    // readPeftAdapter below reports the file that does not parse.
  }
  const baseDir = baseFlag ?? (typeof named === 'string' && fs.existsSync(path.join(named, 'config.json')) ? named : null);
  if (baseDir === null) {
    throw new UsageError(`${configFile} (base_model_name_or_path): ${JSON.stringify(named)} is not a local model folder; give the base with --base DIR (the folder of the model the adapter was trained on)`, usage);
  }
  const { config } = readHfConfig(baseDir);
  const adapter = lora.readPeftAdapter(src, config);
  const base = hfFolderSource(baseDir);
  const tensors = lora.mergeLoraTensors(base.tensors, adapter.settings, adapter.weights);
  return {
    source: { ...base, tensors },
    release: () => {},
    adapter: { config, settings: adapter.settings, weights: adapter.weights, baseModelNameOrPath: adapter.baseModelNameOrPath ?? path.resolve(baseDir) },
  };
}

async function exportCommand(argv: string[], ctx: CommandContext): Promise<number> {
  const { values, positionals } = parseCommand(argv, EXPORT_OPTIONS, usage, 1);
  if (printedHelp(values, usage, ctx)) return 0;
  const src = positionals[0];
  if (!src) throw new UsageError('export needs the source: marsrl model export SRC --format hf|gguf --out PATH', usage);
  if (values.format !== 'hf' && values.format !== 'gguf' && values.format !== 'peft') throw new UsageError(`--format must be hf, gguf or peft (got ${JSON.stringify(values.format ?? null)})`, usage);
  if (values.format === 'peft' && values.dtype !== undefined && values.dtype !== 'f32') throw new UsageError('--dtype: PEFT adapters are written in f32', usage);
  if (!values.out) throw new UsageError('--out PATH is required (a folder for --format hf, a .gguf file for --format gguf)', usage);
  if (values.dtype !== undefined && !(values.dtype in HF_DTYPES)) throw new UsageError(`--dtype must be f32, f16 or bf16 (got ${JSON.stringify(values.dtype)})`, usage);
  if (values.format === 'gguf' && values.dtype === 'bf16') throw new UsageError('--dtype bf16 is not offered for GGUF: use f32 or f16', usage);
  const out = path.resolve(values.out);
  // Refuse before reading anything: an existing output stays as it is.
  if (fs.existsSync(out) && !values.force) throw new Error(`${out} already exists; choose another --out or pass --force to replace it`);
  if (path.resolve(src) === out) throw new Error(`--out ${out} is the source itself; write the export somewhere else`);
  let step: number | undefined;
  if (values.step !== undefined) {
    step = Number(values.step);
    if (!/^\d+$/.test(values.step) || !Number.isSafeInteger(step)) throw new UsageError(`--step must be an RL step, a whole number from 0 (got ${JSON.stringify(values.step)})`, usage);
  }

  // A run or a run's checkpoint (issue #14): engine/checkpoint/run-export.ts, shared with the API.
  const fromRun = /^\d+$/.test(src) && !fs.existsSync(src);
  const { CHECKPOINT_MANIFEST } = await import('../../engine/checkpoint/manifest');
  const isStudioCheckpoint = (dir: string) => fs.existsSync(path.join(dir, CHECKPOINT_MANIFEST)) || (fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory() === true && fs.readdirSync(dir).some((d) => fs.existsSync(path.join(dir, d, CHECKPOINT_MANIFEST))));
  if (fromRun || isStudioCheckpoint(src)) {
    if (values.base !== undefined) throw new UsageError('--base is for a PEFT adapter folder SRC; a run\'s checkpoint names its own base', usage);
    const runExport = await import('../../engine/checkpoint/run-export');
    const opened = fromRun ? (await import('../context')).openCliStudio(values.db, ctx.env) : null;
    try {
      const source = opened ? { runId: Number(src), store: opened.store } : { checkpoint: src };
      if (values.format === 'gguf') {
        // GGUF goes through the folder path below, from the checkpoint the run names.
        const picked = runExport.resolvePolicyCheckpoint({ source, policy: values.policy, step });
        return await exportFolder(picked.dir, { ...values, format: values.format }, out, ctx);
      }
      const started = Date.now();
      const result = await runExport.exportPolicyModel({ source, format: values.format, out, policy: values.policy, step, dtype: values.dtype as 'f32' | 'f16' | 'bf16' | undefined, force: values.force });
      const seconds = (Date.now() - started) / 1000;
      if (values.json) printJson(ctx.out, { ...result, seconds });
      else ctx.out(`Wrote ${out} (${result.format === 'peft' ? 'PEFT LoRA adapter' : result.lora ? 'Hugging Face folder, adapters merged' : 'Hugging Face folder'}) from policy ${result.policy} at step ${result.step} (${result.checkpoint}) in ${formatDuration(seconds)}`);
      return 0;
    } finally {
      opened?.store.close();
    }
  }
  if (values.policy !== undefined || values.step !== undefined) throw new UsageError(`--policy and --step pick a checkpoint of a run; ${src} is a model folder, not a run id or a run's checkpoint`, usage);
  return exportFolder(src, { ...values, format: values.format }, out, ctx);
}

type ExportValues = { format: 'hf' | 'gguf' | 'peft'; dtype?: string; base?: string; force: boolean; json: boolean };

/** Export a model folder, a PEFT adapter folder or a Studio checkpoint folder (hf, gguf, peft). */
async function exportFolder(src: string, values: ExportValues, out: string, ctx: CommandContext): Promise<number> {
  const { exportGguf, exportHfFolder } = await import('../../engine/hf/export');
  const { source, release, adapter } = await exportSource(src, values.base);
  const started = Date.now();
  try {
    if (values.format === 'peft') {
      if (!adapter) throw new UsageError(`--format peft needs a LoRA adapter as SRC (a folder with adapter_config.json); ${src} is a full model: export it with --format hf or gguf`, usage);
      const { writePeftAdapter } = await import('../../engine/hf/lora');
      writePeftAdapter(out, { ...adapter, force: values.force });
      const result = { format: 'peft', out, rank: adapter.settings.rank, targets: adapter.settings.targets, tensors: 2 * adapter.weights.size, seconds: (Date.now() - started) / 1000 };
      if (values.json) printJson(ctx.out, result);
      else ctx.out(`Wrote ${out} (PEFT LoRA adapter, r ${adapter.settings.rank}, ${adapter.settings.targets.join(', ')}, ${result.tensors} tensors) in ${formatDuration(result.seconds)}`);
    } else if (values.format === 'hf') {
      const dtype = values.dtype ?? TORCH_TO_DTYPE[source.config.torchDtype ?? ''] ?? 'f32';
      exportHfFolder(out, { ...source, dtype: HF_DTYPES[dtype], force: values.force });
      const result = { format: 'hf', dtype, out, tensors: source.tensors.length, seconds: (Date.now() - started) / 1000 };
      if (values.json) printJson(ctx.out, result);
      else ctx.out(`Wrote ${out} (Hugging Face folder, ${dtype}, ${source.tensors.length} tensors) in ${formatDuration(result.seconds)}`);
    } else {
      const dtype = (values.dtype ?? 'f32') as 'f32' | 'f16';
      exportGguf(out, { ...source, dtype, force: values.force, name: path.basename(path.resolve(src)) });
      const result = { format: 'gguf', dtype, out, bytes: fs.statSync(out).size, seconds: (Date.now() - started) / 1000 };
      if (values.json) printJson(ctx.out, result);
      else ctx.out(`Wrote ${out} (GGUF ${dtype}, ${formatBytes(result.bytes)}) in ${formatDuration(result.seconds)}`);
    }
  } finally {
    release();
  }
  return 0;
}

export const modelCommand: Command = {
  name: 'model',
  summary: 'Hugging Face models: inspect a folder, export as hf/gguf, generate',
  usage,
  async run(argv, ctx) {
    const [sub, ...rest] = argv;
    if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
      ctx.out(usage);
      return sub === undefined ? 2 : 0;
    }
    if (sub === 'inspect') return inspect(rest, ctx);
    if (sub === 'export') return exportCommand(rest, ctx);
    if (sub === 'generate') return (await import('./model-generate')).generateCommand(rest, ctx);
    throw new UsageError(`unknown subcommand ${JSON.stringify(sub)} (inspect, export, generate)`, usage);
  },
};

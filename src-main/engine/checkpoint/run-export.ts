/**
 * Models out of a run (issue #14, "Adapters out"): a policy's checkpoint — picked from a run by
 * policy id and step, or given as a folder — written as a PEFT LoRA adapter folder
 * (adapter_config.json + adapter_model.safetensors with PEFT's names and shapes, what
 * `PeftModel.from_pretrained` and vLLM's `--lora-modules` load) or as a merged Hugging Face folder
 * (W + (alpha/r)·B A per target, PEFT's merge_and_unload; or a full fine-tune's own weights).
 *
 * One function (`exportPolicyModel`) serves the CLI (`marsrl model export RUN|CHECKPOINT`), the
 * API and the run page's export dialog, so every caller refuses the same things with the same
 * messages: a GPT checkpoint (no Hugging Face architecture), peft asked of full weights (use hf),
 * a run with several policies and no policy named, a step whose checkpoint is gone.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelExportResult } from '#shared/contract';
import { loadHfCheckpoint } from './checkpoint';
import { CHECKPOINT_MANIFEST, readAnyCheckpointManifest, type HfCheckpointManifest, type LoraBaseIdentity } from './manifest';
import { initBackend } from '../model/backend';
import type { Store } from '../store';
import { hfConfigJson, type HfArchConfig } from '../hf/config';
import { exportHfFolder, hfFolderSource, OutputExistsError } from '../hf/export';
import { hfModelIdentity, hfNamedTensors, type HfNamedTensors } from '../hf/load';
import { mergeLoraTensors, readPeftAdapter, writePeftAdapter } from '../hf/lora';
import type { SafetensorsDtype } from '../hf/safetensors';

/** What to export and where (the CLI's flags, the API's payload). */
export interface PolicyModelExportRequest {
  /**
   * A run (its id and the store that holds it: its newest checkpoint of the policy, or the one of
   * `step`), or a checkpoint folder: one policy's (with checkpoint.json) or one step's (a folder of
   * policy folders, as a run writes them under checkpoints/step-N).
   */
  source: { runId: number; store: Store } | { checkpoint: string };
  /** peft: the LoRA adapters as PEFT writes them; hf: a merged Hugging Face folder. */
  format: 'peft' | 'hf';
  /** The folder to write (refused when it exists, unless `force`). */
  out: string;
  /** The policy id; needed when the run or the step folder has several policies. */
  policy?: string;
  /** The RL step of the checkpoint (a run only); default its newest. */
  step?: number;
  /** hf only: the tensors' type; default the base's torch_dtype, else f32. PEFT adapters are f32. */
  dtype?: 'f32' | 'f16' | 'bf16';
  /** Replace an existing `out`. */
  force?: boolean;
}

/** What an export wrote: the StudioApi's ModelExportResult, less the time the API adds. */
export type PolicyModelExportResult = Omit<ModelExportResult, 'seconds'>;

/** A request the checkpoint cannot satisfy; `field` names the flag / payload field to change. */
export class PolicyExportError extends Error {
  constructor(
    readonly field: 'source' | 'format' | 'policy' | 'step' | 'dtype' | 'out',
    message: string,
  ) {
    super(message);
    this.name = 'PolicyExportError';
  }
}

const DTYPES: Record<NonNullable<PolicyModelExportRequest['dtype']>, SafetensorsDtype> = { f32: 'F32', f16: 'F16', bf16: 'BF16' };
const TORCH_TO_DTYPE: Record<string, NonNullable<PolicyModelExportRequest['dtype']>> = { float32: 'f32', float16: 'f16', bfloat16: 'bf16' };

/** The checkpoint folder a request names, with its policy id and step. */
export function resolvePolicyCheckpoint(request: Pick<PolicyModelExportRequest, 'source' | 'policy' | 'step'>): { dir: string; policy: string; step: number } {
  const { source } = request;
  if ('runId' in source) {
    const run = source.store.runs.get(source.runId);
    if (!run) throw new PolicyExportError('source', `run ${source.runId} is not in this database; list the runs with \`marsrl runs\``);
    const rows = source.store.events.checkpoints(source.runId);
    if (rows.length === 0) throw new PolicyExportError('source', `run ${source.runId} has no checkpoints yet (optimization.checkpoint_every sets how often a run writes them)`);
    const ids = [...new Set(rows.map((r) => r.policyId))];
    const policy = request.policy ?? (ids.length === 1 ? ids[0] : null);
    if (policy === null) throw new PolicyExportError('policy', `run ${source.runId} has checkpoints of several policies (${ids.join(', ')}); pick one with --policy ID`);
    if (!ids.includes(policy)) throw new PolicyExportError('policy', `run ${source.runId} has no policy "${policy}"; its policies are ${ids.join(', ')}`);
    const mine = rows.filter((r) => r.policyId === policy);
    const present = mine.filter((r) => fs.existsSync(path.join(r.path, CHECKPOINT_MANIFEST)) || isEngineHfFolder(r.path));
    const kept = present.map((r) => r.step).join(', ') || 'none';
    if (request.step !== undefined) {
      const row = mine.find((r) => r.step === request.step);
      if (!row) throw new PolicyExportError('step', `run ${source.runId} has no checkpoint of "${policy}" at step ${request.step}; steps on disk: ${kept}`);
      if (!present.includes(row)) throw new PolicyExportError('step', `the checkpoint of step ${request.step} (${row.path}) was pruned as the run went on; steps on disk: ${kept}`);
      return { dir: row.path, policy, step: row.step };
    }
    const newest = present[present.length - 1];
    if (!newest) throw new PolicyExportError('source', `run ${source.runId}: no checkpoint of "${policy}" is on disk any more (the rows name ${mine.map((r) => r.path).join(', ')})`);
    return { dir: newest.path, policy, step: newest.step };
  }
  const dir = path.resolve(source.checkpoint);
  if (request.step !== undefined) throw new PolicyExportError('step', '--step picks a checkpoint of a run; a checkpoint folder is one step already (leave out --step)');
  if (!fs.existsSync(dir)) throw new PolicyExportError('source', `${dir}: not found (give a run id or a checkpoint folder)`);
  if (fs.existsSync(path.join(dir, CHECKPOINT_MANIFEST))) {
    const manifest = readAnyCheckpointManifest(dir);
    const policy = path.basename(dir);
    if (request.policy !== undefined && request.policy !== policy) throw new PolicyExportError('policy', `${dir} is the checkpoint of one policy ("${policy}"); leave out --policy or give the step folder above it`);
    return { dir, policy, step: manifest.step };
  }
  const ids = fs.existsSync(dir) && fs.statSync(dir).isDirectory() ? fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, CHECKPOINT_MANIFEST))).sort() : [];
  if (ids.length === 0) throw new PolicyExportError('source', `${dir} is not a checkpoint (no ${CHECKPOINT_MANIFEST} in it or in its policy folders)`);
  const policy = request.policy ?? (ids.length === 1 ? ids[0] : null);
  if (policy === null) throw new PolicyExportError('policy', `${dir} holds checkpoints of several policies (${ids.join(', ')}); pick one with --policy ID`);
  if (!ids.includes(policy)) throw new PolicyExportError('policy', `${dir} has no checkpoint of policy "${policy}"; it has ${ids.join(', ')}`);
  const sub = path.join(dir, policy);
  return { dir: sub, policy, step: readAnyCheckpointManifest(sub).step };
}

/** The folder a LoRA base's Hugging Face tensors and config come from, with its digest checked. */
function folderBase(base: LoraBaseIdentity): { configJson: Record<string, unknown>; tensors: HfNamedTensors; release: () => void } {
  const now = hfModelIdentity(base.path);
  if (now.weightsDigest !== base.weightsDigest || now.configDigest !== base.configDigest) {
    throw new PolicyExportError('source', `LoRA base ${base.path} now holds other weights or another config.json than the adapters were trained on (weights digest ${now.weightsDigest.slice(0, 12)}…, recorded ${base.weightsDigest.slice(0, 12)}…); restore the original folder to merge`);
  }
  const src = hfFolderSource(base.path);
  return { configJson: src.configJson, tensors: src.tensors, release: () => {} };
}

/** A Studio checkpoint of full hf weights, loaded, as named tensors (its digest checked for a LoRA base). */
async function checkpointTensors(dir: string, expectedDigest?: string): Promise<{ config: HfArchConfig; configJson: Record<string, unknown>; tensors: HfNamedTensors; release: () => void }> {
  if (expectedDigest !== undefined) {
    const manifest = readAnyCheckpointManifest(dir) as HfCheckpointManifest;
    const digest = manifest.files['weights.safetensors']?.sha256;
    if (digest !== expectedDigest) throw new PolicyExportError('source', `LoRA base checkpoint ${dir} now holds other weights than the adapters were trained on; restore it to merge`);
  }
  await initBackend('auto');
  const loaded = loadHfCheckpoint(dir);
  loaded.optimizer?.dispose();
  return { config: loaded.model.config, configJson: hfConfigJson(loaded.model.config), tensors: hfNamedTensors(loaded.model), release: () => loaded.model.dispose() };
}

function listFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .sort();
}

/**
 * Export a policy's checkpoint from a run or a folder as a PEFT adapter folder or a merged
 * Hugging Face folder (see the file comment). Nothing is written until the source checks out; the
 * output appears only when complete.
 */
export async function exportPolicyModel(request: PolicyModelExportRequest): Promise<PolicyModelExportResult> {
  if (request.format !== 'peft' && request.format !== 'hf') throw new PolicyExportError('format', `--format must be peft or hf (got ${JSON.stringify(request.format)})`);
  if (request.dtype !== undefined && !(request.dtype in DTYPES)) throw new PolicyExportError('dtype', `--dtype must be f32, f16 or bf16 (got ${JSON.stringify(request.dtype)})`);
  if (request.format === 'peft' && request.dtype !== undefined && request.dtype !== 'f32') throw new PolicyExportError('dtype', '--dtype: PEFT adapters are written in f32 (leave out --dtype)');
  const out = path.resolve(request.out);
  if (fs.existsSync(out) && !request.force) throw new OutputExistsError(out);
  const { dir, policy, step } = resolvePolicyCheckpoint(request);
  if (path.resolve(dir) === out || out.startsWith(`${path.resolve(dir)}${path.sep}`)) throw new PolicyExportError('out', `--out ${out} is inside the checkpoint ${dir}; write the export somewhere else`);
  if (isEngineHfFolder(dir)) return exportEngineCheckpoint(request, dir, out, policy, step);
  const manifest = readAnyCheckpointManifest(dir);
  if (manifest.family !== 'hf') {
    throw new PolicyExportError(
      'format',
      request.format === 'peft'
        ? `--format peft: ${dir} is a checkpoint of the Studio's own GPT, which has no LoRA adapters (only Hugging Face policies with model.lora train them)`
        : `--format hf: ${dir} is a checkpoint of the Studio's own GPT, which has no Hugging Face architecture to export to (only Llama / Qwen2 / Qwen3 policies export)`,
    );
  }
  const result = (written: string[]): PolicyModelExportResult => ({ format: request.format, out, written, checkpoint: dir, policy, step, lora: Boolean(manifest.lora) });

  if (request.format === 'peft') {
    if (!manifest.lora) throw new PolicyExportError('format', `--format peft: ${dir} holds full fine-tuned weights (the policy had no model.lora), not LoRA adapters; use --format hf for a Hugging Face folder of them`);
    const adapter = readPeftAdapter(dir, manifest.model.config);
    // A base that is itself a Studio checkpoint is named as it is: PEFT needs it exported first (marsrl model export BASE --format hf).
    writePeftAdapter(out, { config: manifest.model.config, settings: adapter.settings, weights: adapter.weights, baseModelNameOrPath: manifest.lora.base.path, force: request.force });
    return result(listFiles(out));
  }

  let source: { configJson: Record<string, unknown>; tensors: HfNamedTensors; release: () => void };
  if (manifest.lora) {
    const { base } = manifest.lora;
    const baseSource = base.kind === 'folder' ? folderBase(base) : await checkpointTensors(base.path, base.weightsDigest);
    const adapter = readPeftAdapter(dir, manifest.model.config);
    source = { ...baseSource, tensors: mergeLoraTensors(baseSource.tensors, adapter.settings, adapter.weights) };
  } else {
    source = await checkpointTensors(dir);
  }
  try {
    const config = manifest.model.config;
    const dtype = request.dtype ?? TORCH_TO_DTYPE[config.torchDtype ?? ''] ?? 'f32';
    exportHfFolder(out, { config, configJson: source.configJson, tensors: source.tensors, dtype: DTYPES[dtype], tokenizerDir: path.join(dir, manifest.tokenizer.dir), force: request.force });
  } finally {
    source.release();
  }
  return result(listFiles(out));
}

/**
 * A checkpoint an outside engine saved (issue 38: veRL's and DrMAS's `hf_model`, in
 * `global_step_N/actor/huggingface/`): a plain Hugging Face folder, no Studio manifest.
 */
function isEngineHfFolder(dir: string): boolean {
  return !fs.existsSync(path.join(dir, CHECKPOINT_MANIFEST)) && fs.existsSync(path.join(dir, 'config.json'));
}

/** An engine's checkpoint holds full weights: exported as a Hugging Face folder (as `marsrl model export DIR` does), never as adapters. */
function exportEngineCheckpoint(request: PolicyModelExportRequest, dir: string, out: string, policy: string, step: number): PolicyModelExportResult {
  if (request.format === 'peft') throw new PolicyExportError('format', `--format peft: ${dir} holds the engine's full fine-tuned weights, not LoRA adapters; use --format hf`);
  const source = hfFolderSource(dir);
  const dtype = request.dtype ?? TORCH_TO_DTYPE[source.config.torchDtype ?? ''] ?? 'f32';
  exportHfFolder(out, { ...source, dtype: DTYPES[dtype], force: request.force });
  return { format: 'hf', out, written: listFiles(out), checkpoint: dir, policy, step, lora: false };
}

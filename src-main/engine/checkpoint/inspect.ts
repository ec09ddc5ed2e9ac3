/**
 * What `marsrl model inspect` and the new-run form show about a Hugging Face model folder before
 * a run starts (issue #13): its architecture, size, weights, tokenizer and chat template, and
 * whether the Studio can run it — and if not, why, naming the file and the key. Reads headers
 * and JSON only (no weights), so it is quick on a multi-gigabyte folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CHECKPOINT_MANIFEST, readAnyCheckpointManifest } from './manifest';
import { hfParameterCount, hfWeightsProblem, type HfArchConfig } from '../hf/config';
import { checkHfTensors, readHfConfig } from '../hf/load';
import { openSafetensors, type SafetensorsDtype } from '../hf/safetensors';
import { HfTokenizer, TOKENIZER_JSON } from '../hf/tokenizer';
import { LIMITS, readTextFile } from '../util/bounded-read';
import { formatBytes } from '#shared/format';

export interface HfInspectReport {
  path: string;
  /** True when the Studio can load and run this folder as a policy. */
  supported: boolean;
  /** Why not: each names the file and the key. */
  problems: string[];
  /** config.json's architectures[0] / model_type as written (also when unsupported). */
  architecture: string | null;
  modelType: string | null;
  config: HfArchConfig | null;
  parameters: number | null;
  /** Longest sequence in tokens (max_position_embeddings). */
  context: number | null;
  weights: null | { files: string[]; tensors: number; bytes: number; dtypes: Partial<Record<SafetensorsDtype, number>> };
  /** For a Studio checkpoint of the hf family: its step and the base model it started from. */
  checkpoint: null | { step: number; base: { path: string; configDigest: string; weightsDigest: string } };
  tokenizer: null | {
    vocabSize: number;
    bos: { id: number; text: string } | null;
    stopTokens: Array<{ id: number; text: string }>;
    pad: { id: number; text: string };
    chatTemplate: null | { source: string; renders: boolean; length: number };
  };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The tokenizer part of a report (the folder holding tokenizer.json), its problems added to `report`. */
function inspectTokenizer(report: HfInspectReport, tokDir: string, configFile: string): void {
  try {
    const tok = HfTokenizer.fromFolder(tokDir);
    const named = (id: number) => ({ id, text: tok.idToToken(id) ?? `<id ${id}>` });
    let chatTemplate: NonNullable<HfInspectReport['tokenizer']>['chatTemplate'] = null;
    if (tok.chatTemplate !== null && tok.chatTemplateSource) {
      let renders = true;
      try {
        tok.checkChatTemplate();
      } catch (error) {
        renders = false;
        report.problems.push(message(error));
      }
      chatTemplate = { source: `${path.basename(tok.chatTemplateSource.file)} (${tok.chatTemplateSource.key})`, renders, length: tok.chatTemplate.length };
    }
    report.tokenizer = {
      vocabSize: tok.vocabSize,
      bos: tok.bosId === null ? null : named(tok.bosId),
      stopTokens: tok.stopTokens.map(named),
      pad: named(tok.padId),
      chatTemplate,
    };
    if (report.config && tok.vocabSize > report.config.vocabSize) {
      report.problems.push(`${path.join(tokDir, TOKENIZER_JSON)} (model.vocab): the tokenizer has ${tok.vocabSize} ids but ${configFile} vocab_size (the embedding's rows) is ${report.config.vocabSize}: the tokenizer does not belong to these weights`);
    }
    if (tok.stopTokens.length === 0) report.problems.push(`${path.join(tokDir, 'generation_config.json')} (eos_token_id): no stop token (nor eos_token in tokenizer_config.json): generation would never stop`);
  } catch (error) {
    report.problems.push(message(error));
  }
}

function weightsSummary(fileOrDir: string): NonNullable<HfInspectReport['weights']> {
  const st = openSafetensors(fileOrDir);
  const dtypes: Partial<Record<SafetensorsDtype, number>> = {};
  let bytes = 0;
  for (const t of st.tensors.values()) {
    dtypes[t.dtype] = (dtypes[t.dtype] ?? 0) + 1;
    bytes += t.byteLength;
  }
  return { files: st.files.map((f) => path.basename(f)), tensors: st.tensors.size, bytes, dtypes };
}

/** A Studio checkpoint of the hf family: architecture from its manifest, its own weights and tokenizer. */
function inspectCheckpoint(report: HfInspectReport, dir: string): HfInspectReport {
  const manifestFile = path.join(dir, CHECKPOINT_MANIFEST);
  try {
    const m = readAnyCheckpointManifest(dir);
    if (m.family !== 'hf') {
      report.problems.push(`${manifestFile} (family): a checkpoint of the Studio's own GPT, not of a Hugging Face model (marsrl show / marsrl runs describe those)`);
      return report;
    }
    const c = m.model.config;
    // readAnyCheckpointManifest has checked the architecture and that it fits this machine.
    Object.assign(report, { architecture: c.architecture, modelType: c.modelType, config: c, parameters: hfParameterCount(c), context: c.maxPositions, checkpoint: { step: m.step, base: m.model.base } });
    try {
      report.weights = weightsSummary(path.join(dir, m.model.weights));
    } catch (error) {
      report.problems.push(message(error));
    }
    inspectTokenizer(report, path.join(dir, m.tokenizer.dir), manifestFile);
  } catch (error) {
    report.problems.push(message(error));
  }
  report.supported = report.problems.length === 0;
  return report;
}

/**
 * Inspect a model folder (or a Studio checkpoint of the hf family); never throws for a bad
 * folder (problems are reported instead).
 */
export function inspectHfFolder(dir: string): HfInspectReport {
  const report: HfInspectReport = {
    path: path.resolve(dir),
    supported: false,
    problems: [],
    architecture: null,
    modelType: null,
    config: null,
    parameters: null,
    context: null,
    weights: null,
    checkpoint: null,
    tokenizer: null,
  };
  if (fs.existsSync(path.join(dir, CHECKPOINT_MANIFEST))) return inspectCheckpoint(report, dir);
  const configFile = path.join(dir, 'config.json');
  try {
    const raw = JSON.parse(readTextFile(configFile, { maxBytes: LIMITS.settings, what: 'config.json' })) as { architectures?: unknown; model_type?: unknown };
    if (Array.isArray(raw.architectures) && typeof raw.architectures[0] === 'string') report.architecture = raw.architectures[0];
    if (typeof raw.model_type === 'string') report.modelType = raw.model_type;
  } catch {
    // readHfConfig below reports a missing or unparsable config.json with its own message.
  }
  try {
    report.config = readHfConfig(dir).config;
    report.parameters = hfParameterCount(report.config);
    report.context = report.config.maxPositions;
    // Its size, by arithmetic, before any list of its tensors is made (issue #36).
    const tooLarge = hfWeightsProblem(report.config);
    if (tooLarge) {
      report.problems.push(`${configFile} (${tooLarge.key}): ${tooLarge.message}`);
      return report;
    }
  } catch (error) {
    report.problems.push(message(error));
    // Without config.json this is not a model folder: nothing else to say.
    if (!fs.existsSync(configFile)) return report;
  }

  try {
    report.weights = weightsSummary(dir);
    if (report.config) checkHfTensors(dir, report.config);
  } catch (error) {
    report.problems.push(message(error));
  }
  inspectTokenizer(report, dir, configFile);
  report.supported = report.problems.length === 0;
  return report;
}

function human(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

/** The report as terminal text. */
export function formatInspectReport(r: HfInspectReport): string {
  const lines = [`model        ${r.path}`];
  if (r.checkpoint) lines.push(`checkpoint   step ${r.checkpoint.step}, started from ${r.checkpoint.base.path}`);
  const c = r.config;
  lines.push(`architecture ${r.architecture ?? '(unknown)'}${r.modelType ? ` (model_type ${r.modelType})` : ''}`);
  if (c) {
    lines.push(`parameters   ${human(r.parameters ?? 0)} (${r.parameters})`);
    lines.push(`layers       ${c.numLayers}, hidden ${c.hiddenSize}, MLP ${c.intermediateSize}`);
    lines.push(`attention    ${c.numHeads} heads × ${c.headDim}, ${c.numKvHeads} KV heads${c.numKvHeads < c.numHeads ? ' (grouped-query)' : ''}${c.attentionBias ? ', q/k/v bias' : ''}${c.qkNorm ? ', q/k RMSNorm' : ''}`);
    const scaling = c.ropeScaling === null ? 'none' : c.ropeScaling.type === 'linear' ? `linear ×${c.ropeScaling.factor}` : `llama3 ×${c.ropeScaling.factor} (original ${c.ropeScaling.originalMaxPositions})`;
    lines.push(`rope         θ = ${c.ropeTheta}, scaling ${scaling}`);
    lines.push(`context      ${r.context} tokens`);
    lines.push(`vocabulary   ${c.vocabSize} embedding rows${c.tieWordEmbeddings ? ', tied LM head' : ', separate LM head'}`);
  }
  if (r.weights) {
    const dtypes = Object.entries(r.weights.dtypes).map(([d, n]) => `${d} ×${n}`).join(', ');
    lines.push(`weights      ${r.weights.files.join(', ')}: ${r.weights.tensors} tensors, ${formatBytes(r.weights.bytes)} (${dtypes})${c?.torchDtype ? `, torch_dtype ${c.torchDtype}` : ''}`);
  }
  const t = r.tokenizer;
  if (t) {
    lines.push(`tokenizer    ${t.vocabSize} ids; bos ${t.bos ? `${t.bos.text} (${t.bos.id})` : 'none'}; stop ${t.stopTokens.map((s) => `${s.text} (${s.id})`).join(', ') || 'none'}; pad ${t.pad.text} (${t.pad.id})`);
    lines.push(`chat         ${t.chatTemplate ? `template from ${t.chatTemplate.source}, ${t.chatTemplate.length} chars, ${t.chatTemplate.renders ? 'renders' : 'FAILS to render'}` : 'no chat template (prompts are plain text)'}`);
  }
  lines.push(`supported    ${r.supported ? 'yes: loads as a policy, exports as Hugging Face and GGUF' : 'no'}`);
  for (const p of r.problems) lines.push(`  - ${p}`);
  return lines.join('\n');
}

/**
 * Sizes computed from a config, a model folder or a checkpoint before anything is allocated, and
 * refused with the figure and this machine's limit (issue #36).
 *
 * Why: a config can ask for more than any machine holds, and the failure then comes far from the
 * field that caused it. `num_hidden_layers: 1000000` in a model folder's config.json was accepted
 * and its tensor list alone took 2.8 GB (the server blocked for minutes); `problems_per_step: 4096`
 * with `solver_group: 256` passed validation, then a step built one decode batch of 1 048 576
 * sequences and died in `Maximum call stack size exceeded`.
 *
 * Every figure here is a LOWER bound on what the run or load will hold at its peak: weights as
 * float32 (what the Studio computes in), Adam's two moments for what is trained, and the largest
 * decode batch's key/value cache for responses of `max_response_tokens` (a prompt only adds to it)
 * plus one row of logits per sequence. So a refusal is never wrong about a config that would have
 * fit; a config that passes can still run short of memory later, where the device-memory budget
 * (gpu-memory.ts) and the backend's own errors take over.
 */
import fs from 'node:fs';
import os from 'node:os';
import { formatBytes } from '#shared/format';

/** Bytes of one value as the Studio computes (float32). */
export const BYTES_PER_FLOAT = 4;

/**
 * The memory this process may use: the machine's, or the control group's limit when it is lower
 * (a container's memory.max, cgroup v2).
 */
export function machineMemoryBytes(): number {
  let limit = os.totalmem();
  try {
    const text = fs.readFileSync('/sys/fs/cgroup/memory.max', 'utf8').trim();
    const cgroup = Number(text);
    if (/^\d+$/.test(text) && cgroup > 0 && cgroup < limit) limit = cgroup;
  } catch {
    // no cgroup v2 limit: the machine's memory
  }
  return limit;
}

export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return n >= 1e12 ? n.toExponential(2) : Math.round(n).toLocaleString('en-US');
}

/** This machine's limit in words, for the end of a refusal. */
export function machineLimitText(memory: number): string {
  return `this machine has ${formatBytes(memory)} of memory`;
}

/** What the run-size check needs of a policy's architecture (lower bounds where unknown). */
export interface PolicyShape {
  /** Parameters held in float32. */
  params: number;
  /** Parameters Adam keeps two moments for (all of them, the adapters of a LoRA policy, 0 if served). */
  trained: number;
  layers: number;
  /** Values cached per position and layer, for keys and again for values. */
  kvWidth: number;
  /** Logits per sequence and decoding step. */
  vocab: number;
  context: number;
}

/**
 * The parameters of the Studio's GPT (gpt/config.ts paramSpecs), a vocabulary of `vocab` tokens: token
 * and position embeddings, per layer two norm gains, q/k/v/o and the MLP, then the final norm and
 * the untied head.
 */
export function gptParameterCount(m: { d_model: number; n_layers: number; mlp_ratio: number; context: number }, vocab: number): number {
  const d = m.d_model;
  const perLayer = 4 * d * d + 2 * m.mlp_ratio * d * d + 2 * d;
  return 2 * vocab * d + m.context * d + m.n_layers * perLayer + d;
}

/** One decode batch: how many sequences an agent decodes at once in a step or an evaluation. */
export interface DecodeBatch {
  /** `rollout.problems_per_step × rollout.solver_group` and the like, in words. */
  what: string;
  /** The config field the refusal is placed on. */
  field: string;
  /** What to lower, in words (the fields whose product `rows` is). */
  shrink: string;
  rows: number;
  /** The policy that decodes it. */
  policy: string;
}

/**
 * The lower bound on a decode batch's memory: keys and values of every layer for `positions`
 * tokens of every sequence, and one row of logits per sequence.
 */
export function decodeBatchBytes(shape: PolicyShape, rows: number, positions: number): number {
  return rows * (2 * shape.layers * shape.kvWidth * Math.min(positions, shape.context) + shape.vocab) * BYTES_PER_FLOAT;
}

/** Bytes every policy holds for the whole run: weights, and Adam's moments of what it trains. */
export function residentBytes(shapes: Iterable<PolicyShape>): number {
  let bytes = 0;
  for (const s of shapes) bytes += (s.params + 2 * s.trained) * BYTES_PER_FLOAT;
  return bytes;
}

export interface SizeIssue {
  path: string;
  message: string;
}

/**
 * The run's peak, as a lower bound: every policy resident, plus the largest decode batch. Refused
 * (on the batch's field, or on the largest policy when the weights alone do not fit) when it
 * exceeds the machine's memory.
 */
export function runSizeIssues(shapes: ReadonlyMap<string, PolicyShape>, batches: readonly DecodeBatch[], responseTokens: number, memory = machineMemoryBytes()): SizeIssue[] {
  const resident = residentBytes(shapes.values());
  if (resident > memory) {
    const [id, largest] = [...shapes].sort((a, b) => b[1].params - a[1].params)[0];
    return [
      {
        path: `policies.${id}.model`,
        message: `the policies hold at least ${formatBytes(resident)} (weights as float32 and Adam's two moments of what is trained; policy "${id}" alone has ${formatCount(largest.params)} parameters), and ${machineLimitText(memory)}; use a smaller model`,
      },
    ];
  }
  let worst: { batch: DecodeBatch; bytes: number } | null = null;
  for (const batch of batches) {
    const shape = shapes.get(batch.policy);
    if (!shape || batch.rows === 0) continue;
    const bytes = decodeBatchBytes(shape, batch.rows, responseTokens + 1);
    if (!worst || bytes > worst.bytes) worst = { batch, bytes };
  }
  if (!worst || resident + worst.bytes <= memory) return [];
  const { batch, bytes } = worst;
  return [
    {
      path: batch.field,
      message:
        `${batch.what} = ${formatCount(batch.rows)} sequences decoded at once by policy "${batch.policy}": their key/value cache and logits need at least ${formatBytes(bytes)} ` +
        `(${formatCount(responseTokens + 1)} tokens each), ${formatBytes(resident + bytes)} with the policies' weights, and ${machineLimitText(memory)}; nothing was allocated. Lower ${batch.shrink}`,
    },
  ];
}

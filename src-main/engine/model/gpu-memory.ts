/**
 * Memory accounting of the policies on the tensor backend's device (issue #15): weights, optimizer
 * state and key/value caches, in bytes from tensor sizes (float32: 4 bytes an element), per policy.
 *
 * Why: on a GPU, running out of memory shows up as a WebGPU out-of-memory error on an allocation
 * (or, in tfjs, as later kernels reading invalid buffers), far from the config field that caused
 * it. Accounting what each policy keeps resident, and what a decode batch's cache will take
 * before it is built, turns that into one message that names what did not fit and the fields that
 * shrink it, and lets `runtime.gpu_memory_limit_mb` stop a run before it reaches the device's
 * limit. The error ends the run like any training error, after the last checkpoint, so the run
 * can be resumed with a larger limit or a smaller config.
 *
 * Counted: every weight (a model's variables; a LoRA base shared by several policies once, issue #14), Adam's moments where they are tensors ('tensor'
 * mode: two per parameter; in 'js' mode they live in host memory and count 0), and each decode
 * batch's cache (keys and values: 2 · layers · rows · width · positions). Not counted:
 * activations of a forward/backward pass, which tfjs frees as it goes.
 */
import type { PolicyModel } from './policy-model';
import type { Adam } from './optim';
import { BYTES_PER_FLOAT } from './size-limits';

export interface PolicyMemory {
  weights: number;
  optimizer: number;
}

/** Bytes of a model's trainable weights. */
export function weightBytes(model: Pick<PolicyModel, 'numParams'>): number {
  return model.numParams * BYTES_PER_FLOAT;
}

/** Bytes of an optimizer's state on the device (Adam's two moments in 'tensor' mode; 0 in 'js' mode). */
export function optimizerBytes(optimizer: Pick<Adam, 'mode'> | null, numParams: number): number {
  if (!optimizer || optimizer.mode === 'js') return 0;
  return 2 * numParams * BYTES_PER_FLOAT;
}

/** A budget or a device allocation was exceeded; the message names what did not fit and the fix. */
export class GpuMemoryError extends Error {
  override readonly name = 'GpuMemoryError';
}

const MiB = 2 ** 20;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(2)} MiB`;

/**
 * What one process holds, per policy, against an optional limit. The trainer registers each
 * policy's resident memory; decoding reserves a cache's bytes before building it.
 */
export class MemoryBudget {
  private readonly resident = new Map<string, PolicyMemory>();
  private readonly caches = new Map<string, number>();
  /** Frozen weights several policies share (a LoRA base, issue #14), by key: counted once. */
  private readonly shared = new Map<string, number>();

  /** `limitBytes` 0 means no limit (memory is still accounted and reported). */
  constructor(readonly limitBytes: number) {}

  /** Total bytes accounted now. */
  get totalBytes(): number {
    let t = 0;
    for (const m of this.resident.values()) t += m.weights + m.optimizer;
    for (const b of this.caches.values()) t += b;
    for (const b of this.shared.values()) t += b;
    return t;
  }

  /** Bytes of each shared frozen base, by key (for metrics and events). */
  sharedReport(): Record<string, number> {
    return Object.fromEntries(this.shared);
  }

  /**
   * Register frozen weights shared by several policies (a LoRA base held once per process, issue
   * #14): the same key registered again is still counted once. Throws when over the limit.
   */
  setShared(key: string, bytes: number, policyIds: readonly string[]): void {
    this.shared.set(key, bytes);
    this.check(
      `the frozen base (${mib(bytes)}) that ${policyIds.map((id) => `"${id}"`).join(', ')} share`,
      policyIds.map((id) => `policies.${id}.model.path (a smaller base)`),
    );
  }

  /** Per-policy figures, for metrics and events. */
  report(): Record<string, PolicyMemory & { kvCache: number }> {
    const out: Record<string, PolicyMemory & { kvCache: number }> = {};
    for (const [id, m] of this.resident) out[id] = { ...m, kvCache: this.caches.get(id) ?? 0 };
    return out;
  }

  /** Register (or update) a policy's weights and optimizer state; throws when over the limit. */
  setResident(policyId: string, memory: PolicyMemory): void {
    this.resident.set(policyId, memory);
    this.check(
      `the weights (${mib(memory.weights)}) and optimizer state (${mib(memory.optimizer)}) of policy "${policyId}"`,
      [`policies.${policyId}.model.d_model`, `policies.${policyId}.model.n_layers`, `policies.${policyId}.model.mlp_ratio`],
    );
  }

  /**
   * Reserve a decode batch's cache for a policy (replacing its previous reservation); throws when
   * over the limit. `what` describes the batch for the message.
   */
  reserveCache(policyId: string, bytes: number, what: string): void {
    this.caches.set(policyId, bytes);
    this.check(`the key/value cache of policy "${policyId}" for ${what} (${mib(bytes)})`, [
      'rollout.solver_group',
      'rollout.problems_per_step',
      'rollout.max_response_tokens',
      `policies.${policyId}.model.context`,
    ]);
  }

  releaseCache(policyId: string): void {
    this.caches.delete(policyId);
  }

  private check(what: string, fields: string[]): void {
    if (this.limitBytes <= 0 || this.totalBytes <= this.limitBytes) return;
    const held = [
      ...Object.entries(this.report()).map(([id, m]) => `${id}: weights ${mib(m.weights)}, optimizer ${mib(m.optimizer)}, KV cache ${mib(m.kvCache)}`),
      ...[...this.shared.values()].map((bytes) => `a shared frozen base: ${mib(bytes)}`),
    ].join('; ');
    throw new GpuMemoryError(
      `out of GPU memory budget: ${what} does not fit in runtime.gpu_memory_limit_mb = ${(this.limitBytes / MiB).toFixed(2)} ` +
        `(${mib(this.totalBytes)} needed in all — ${held}). Shrink ${fields.join(', ')}, or raise runtime.gpu_memory_limit_mb; ` +
        'the run can be resumed from its last checkpoint',
    );
  }
}

let processBudget: MemoryBudget | null = null;

/** The budget of this process's run (set by the trainer), or null outside a run. */
export function memoryBudget(): MemoryBudget | null {
  return processBudget;
}

export function setMemoryBudget(budget: MemoryBudget | null): void {
  processBudget = budget;
}

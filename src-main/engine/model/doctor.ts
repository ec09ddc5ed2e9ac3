/**
 * `marsrl doctor`: which tensor backend this machine uses, with its threads and SIMD, the WebGPU
 * adapter Dawn offers (used or not: vendor, architecture, device, driver, limits, f16), why every
 * other backend was passed over, and the kernel workarounds in effect.
 */
import * as tf from '@tensorflow/tfjs-core';
import os from 'node:os';
import { initBackend, type BackendInfo, type BackendPreference } from './backend';
import { strategyForBackend, type KernelStrategy } from './ops';
import { formatBytes } from '#shared/format';

export interface DoctorReport extends BackendInfo {
  kernels: KernelStrategy;
  node: string;
  platform: string;
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
}

export async function doctorReport(preference: BackendPreference = 'auto'): Promise<DoctorReport> {
  const info = await initBackend(preference);
  const cpus = os.cpus();
  return {
    ...info,
    kernels: strategyForBackend(info.name),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model?.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  };
}

const KERNEL_NOTES: Record<string, string> = {
  js: 'embedding lookups and their gradient (a scatter-add) in JavaScript (wasm has no gather gradient)',
  gather: 'embedding with tf.gather',
  fused: 'one custom-gradient op per sublayer, gradients through explicit transposes (wasm matMul with transpose flags is ~10x slower)',
  autograd: "gradients from TensorFlow.js's own rules",
  depthwise: 'attention matmuls as depthwise convolutions (wasm batched matMul runs a naive loop); decoding attention in JavaScript',
  batchMatMul: 'attention with batched matMul',
};

export function formatDoctorReport(r: BackendInfo & Partial<DoctorReport>): string {
  const lines: string[] = [];
  lines.push(`backend   ${r.name} — ${r.provider}${r.fallback ? `  (fallback: "${r.requested}" was requested)` : ''}`);
  lines.push(`threads   ${r.threads}`);
  lines.push(`simd      ${r.simd ? 'yes' : 'no'}`);
  lines.push(`tfjs      @tensorflow/tfjs-core ${r.tfjsVersion}`);
  for (const w of r.warnings ?? []) lines.push(`warning   ${w}`);
  if (r.adapter) {
    const a = r.adapter;
    lines.push(`adapter   ${a.vendor || '(vendor not reported)'} — ${a.software ? 'software (runs on the CPU)' : 'hardware'}`);
    lines.push(`  architecture  ${a.architecture || '(not reported)'}`);
    lines.push(`  device        ${a.device || '(not reported)'}`);
    lines.push(`  driver        ${a.description || '(not reported)'}`);
    lines.push(`  shader-f16    ${a.f16 ? 'yes' : 'no'}`);
    for (const [k, v] of Object.entries(a.limits)) lines.push(`  ${k.padEnd(34)}${formatLimit(k, v)}`);
  } else {
    lines.push('adapter   (no WebGPU adapter; see skipped)');
  }
  if (r.kernels) {
    lines.push('kernels');
    for (const v of Object.values(r.kernels)) lines.push(`  - ${KERNEL_NOTES[v] ?? v}`);
  }
  lines.push(r.skipped.length ? 'skipped' : 'skipped   (none)');
  for (const s of r.skipped) lines.push(`  - ${s.backend}: ${s.reason}`);
  if (r.node) lines.push(`host      node ${r.node}, ${r.platform}, ${r.cpus} CPU (${r.cpuModel}), ${r.memoryGiB} GiB`);
  return lines.join('\n');
}

/** Byte limits in binary units as well, counts as they are. */
function formatLimit(name: string, value: number): string {
  if (!/Size$/.test(name)) return String(value);
  return `${value} (${formatBytes(value)})`;
}

/** Current TensorFlow.js memory counters (for leak checks in long runs). */
export function memoryReport(): { numTensors: number; numBytes: number } {
  const m = tf.memory();
  return { numTensors: m.numTensors, numBytes: m.numBytes };
}

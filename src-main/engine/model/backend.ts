/**
 * Tensor backend selection.
 *
 * Order for `auto`: WebGPU on a hardware adapter → tfjs-node-gpu (CUDA) → tfjs-node (native CPU) →
 * wasm → cpu (pure JS). The two native packages are optional dependencies: their installers download
 * libtensorflow, which fails offline, so they may simply be absent. They are loaded with a dynamic
 * import inside try/catch and every backend that is passed over is recorded with the reason, so the
 * choice can be shown by `marsrl doctor` and stored with every run.
 *
 * WebGPU (issue #15) is @tensorflow/tfjs-backend-webgpu on Dawn's Node bindings (the `webgpu`
 * package's prebuilt dawn.node; Vulkan on Linux, Metal on macOS, D3D12 on Windows). It comes first
 * because tfjs-node-gpu needs libtensorflow 2.9 for CUDA 11.2 / cuDNN 8.1 and fails on current CUDA.
 * A software adapter (Mesa's llvmpipe/lavapipe, SwiftShader) computes correctly but on the CPU,
 * slower than wasm, so `auto` passes it over and says so; asking for `webgpu` explicitly uses it
 * with a warning (this is how CI tests the WebGPU path on machines without a GPU). WebGPU in Node
 * reads tensors back only asynchronously, so every read of a run (rollout, evaluation, warm start,
 * checkpoints, the pipeline's weight transfer) goes through readback.ts's asynchronous paths there.
 *
 * The first call decides the backend for the whole process (TensorFlow.js has one global engine);
 * later calls return the same `BackendInfo` whatever they ask for.
 */
import * as tf from '@tensorflow/tfjs-core';
// The pure-JS backend registers itself as 'cpu' on import. It is installed as a dependency of
// @tensorflow/tfjs-backend-wasm (see the issue note: it should be listed in package.json too).
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { registerMissingGradients } from './gradients';

export type BackendPreference = 'auto' | 'webgpu' | 'tensorflow' | 'wasm' | 'cpu';

export interface SkippedBackend {
  /** Which candidate was passed over: 'webgpu', 'tensorflow-gpu', 'tensorflow-cpu', 'wasm' or 'cpu'. */
  backend: string;
  /** Why, in words a user can act on (package missing, libcudart not found, not requested, …). */
  reason: string;
}

export interface BackendInfo {
  /** TensorFlow.js backend name in use: 'webgpu', 'tensorflow', 'wasm' or 'cpu'. */
  name: string;
  /** Threads the backend computes with (1 for wasm in Node and for cpu). */
  threads: number;
  /** Whether vectorised (SIMD) kernels are in use. */
  simd: boolean;
  /** Candidates passed over before `name` was chosen, in order, with reasons. */
  skipped: SkippedBackend[];
  /** What was asked for. */
  requested: BackendPreference;
  /** True when an explicit request could not be honoured and a later backend was used. */
  fallback: boolean;
  /** Which package/device provides the backend, e.g. 'tfjs-node-gpu (CUDA)' or 'tfjs-backend-wasm (SIMD)'. */
  provider: string;
  /** @tensorflow/tfjs-core version. */
  tfjsVersion: string;
  /** The WebGPU adapter Dawn offered (whether or not it was used); null when there was none or it was not probed. */
  adapter: GpuAdapterSummary | null;
  /** Things the user should know about the choice (e.g. a software WebGPU adapter in use). */
  warnings: string[];
}

/** What `marsrl doctor` and the run page show of a WebGPU adapter (GPUAdapterInfo plus the limits that size a model). */
export interface GpuAdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  /** Driver and version as the driver describes itself (e.g. "llvmpipe: Mesa 25.0.7 (LLVM 15.0.6)"). */
  description: string;
  /** A CPU implementation (Dawn's isFallbackAdapter, or a known software rasteriser by name). */
  software: boolean;
  /** The 'shader-f16' feature (half-precision arithmetic in shaders). */
  f16: boolean;
  /** Limits that bound tensor sizes and kernels, in bytes or counts as the WebGPU spec names them. */
  limits: Record<(typeof ADAPTER_LIMITS)[number], number>;
}

/** The limits worth showing: buffer sizes bound the largest tensor, the workgroup ones the kernels tfjs can compile. */
export const ADAPTER_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
] as const;

const require = createRequire(import.meta.url);

let chosen: Promise<BackendInfo> | null = null;

/**
 * Select and initialise the tensor backend. Idempotent: the first call decides, later calls
 * (whatever their preference) return the same info.
 */
export function initBackend(preference: BackendPreference = 'auto'): Promise<BackendInfo> {
  if (!chosen) {
    chosen = selectBackend(preference).catch((err: unknown) => {
      chosen = null; // allow a retry after a hard failure
      throw err;
    });
  }
  return chosen;
}

/** The info of the backend already chosen, or null when `initBackend` has not completed. */
export function currentBackendInfo(): Promise<BackendInfo> | null {
  return chosen;
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n').find((l) => l.trim().length > 0)?.trim() ?? text;
}

function isInstalled(pkg: string): boolean {
  try {
    require.resolve(`${pkg}/package.json`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Try one of the native TensorFlow packages. Returns null on success, else the reason it was skipped.
 * Both packages register the backend under the same name, 'tensorflow'.
 */
async function tryNative(pkg: '@tensorflow/tfjs-node-gpu' | '@tensorflow/tfjs-node'): Promise<string | null> {
  if (!isInstalled(pkg)) {
    return `package ${pkg} is not installed (optional dependency: its installer downloads libtensorflow and fails offline; run \`npm install ${pkg}\` online to enable it)`;
  }
  try {
    // A variable specifier keeps bundlers and the type checker from requiring the optional package.
    const specifier: string = pkg;
    await import(/* @vite-ignore */ specifier);
  } catch (err) {
    const msg = firstLine(err);
    if (/libcudart|libcudnn|libcublas|cuda/i.test(msg)) return `CUDA runtime not found: ${msg}`;
    if (/libtensorflow/i.test(msg)) return `libtensorflow failed to load: ${msg}`;
    return `failed to load: ${msg}`;
  }
  if (!tf.findBackendFactory('tensorflow')) {
    return `${pkg} loaded but registered its backend on another copy of @tensorflow/tfjs-core (version mismatch with ${tf.version_core})`;
  }
  try {
    if (!(await tf.setBackend('tensorflow'))) return 'backend "tensorflow" failed to initialise';
  } catch (err) {
    return `backend "tensorflow" failed to initialise: ${firstLine(err)}`;
  }
  return null;
}

function wasmDistDir(): string {
  return path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
}

let wasmPathsSet = false;

async function tryWasm(): Promise<string | null> {
  try {
    // In Node the .wasm binaries are read from disk; point at the package's dist folder explicitly
    // so that bundling the JavaScript (electron-vite) does not break the default lookup.
    if (!wasmPathsSet) {
      setWasmPaths(wasmDistDir());
      wasmPathsSet = true;
    }
    if (!(await tf.setBackend('wasm'))) return 'backend "wasm" failed to initialise';
    return null;
  } catch (err) {
    return `failed to initialise: ${firstLine(err)}`;
  }
}

/** CPU rasterisers Dawn may offer as an adapter without flagging it as a fallback adapter. */
const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|softpipe|swiftshader|\bwarp\b|basic render driver/i;

function summariseAdapter(adapter: GPUAdapter): GpuAdapterSummary {
  const info = adapter.info;
  const limits = {} as GpuAdapterSummary['limits'];
  for (const k of ADAPTER_LIMITS) limits[k] = Number(adapter.limits[k]);
  const named = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`;
  return {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    // isFallbackAdapter moved from GPUAdapter to GPUAdapterInfo in the spec; Dawn 0.6 has the latter.
    software: Boolean((info as { isFallbackAdapter?: boolean }).isFallbackAdapter ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter) || SOFTWARE_ADAPTER.test(named),
    f16: adapter.features.has('shader-f16'),
    limits,
  };
}

/** One line naming an adapter for messages: "mesa llvmpipe (llvmpipe: Mesa 25.0.7 …)". */
export function adapterLabel(a: GpuAdapterSummary): string {
  const name = [a.vendor, a.device || a.architecture].filter(Boolean).join(' ');
  return a.description ? `${name} (${a.description})` : name;
}

interface WebGpuProbe {
  /** Why WebGPU cannot be used at all (bindings missing, no adapter), or null. */
  reason: string | null;
  adapter: GpuAdapterSummary | null;
  gpuAdapter: GPUAdapter | null;
}

// Kept for the life of the process: the adapter and device belong to this instance.
let dawnGpu: GPU | null = null;

/**
 * Load Dawn's Node bindings, expose them as the browser globals tfjs-backend-webgpu expects
 * (navigator.gpu and the GPUBufferUsage/GPUMapMode/GPUShaderStage constants), and ask for the
 * high-performance adapter. Never throws: a failure is a reason to skip the backend.
 */
async function probeWebGpu(): Promise<WebGpuProbe> {
  if (!dawnGpu) {
    try {
      const dawn = await import('webgpu');
      for (const [key, value] of Object.entries(dawn.globals as Record<string, unknown>)) {
        if (!(key in globalThis)) Object.defineProperty(globalThis, key, { value, configurable: true, writable: true });
      }
      dawnGpu = dawn.create([]);
    } catch (err) {
      return {
        reason: `Dawn's WebGPU bindings (package webgpu, dist/${process.platform}-${process.arch}/dawn.node) failed to load: ${firstLine(err)}`,
        adapter: null,
        gpuAdapter: null,
      };
    }
    const nav = (globalThis as { navigator?: object }).navigator;
    // Node 21+ defines navigator (without gpu); Node 20 and Electron's utility processes may not.
    if (!nav) Object.defineProperty(globalThis, 'navigator', { value: { gpu: dawnGpu }, configurable: true, writable: true });
    else if (!('gpu' in nav)) Object.defineProperty(nav, 'gpu', { value: dawnGpu, configurable: true });
  }
  let gpuAdapter: GPUAdapter | null;
  try {
    gpuAdapter = await dawnGpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (err) {
    return { reason: `requesting a WebGPU adapter failed: ${firstLine(err)}`, adapter: null, gpuAdapter: null };
  }
  if (!gpuAdapter) {
    const driver =
      process.platform === 'linux'
        ? "Dawn found no Vulkan device: install the GPU's Vulkan driver (NVIDIA's driver ships one; AMD/Intel: mesa-vulkan-drivers ≥ 23 — Debian 12's 22.3 is refused)"
        : process.platform === 'darwin'
          ? 'Dawn found no Metal device'
          : 'Dawn found no D3D12 or Vulkan device';
    return { reason: `no WebGPU adapter: ${driver}`, adapter: null, gpuAdapter: null };
  }
  return { reason: null, adapter: summariseAdapter(gpuAdapter), gpuAdapter };
}

/**
 * Open a device on the adapter and make it TensorFlow.js's 'webgpu' backend. The device is asked
 * for the adapter's own limits (the defaults cap storage buffers at 128 MiB), as tfjs-backend-webgpu
 * does in its own registration, which is replaced here so that the adapter checked above is the
 * one used.
 */
async function startWebGpu(adapter: GPUAdapter): Promise<string | null> {
  try {
    const { WebGPUBackend } = await import('@tensorflow/tfjs-backend-webgpu');
    const features: GPUFeatureName[] = [];
    if (adapter.features.has('timestamp-query')) features.push('timestamp-query');
    const l = adapter.limits;
    const device = await adapter.requestDevice({
      requiredFeatures: features,
      requiredLimits: {
        maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
        maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxBufferSize: l.maxBufferSize,
        maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
        maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      },
    });
    watchDevice(device);
    if (tf.findBackendFactory('webgpu')) tf.removeBackend('webgpu');
    tf.registerBackend('webgpu', () => new WebGPUBackend(device, adapter.info), 3);
    if (!(await tf.setBackend('webgpu'))) return 'backend "webgpu" failed to initialise';
    return null;
  } catch (err) {
    return `backend "webgpu" failed to initialise: ${firstLine(err)}`;
  }
}

/**
 * Make another already-registered backend the active one (benchmarks measure a baseline in the
 * same process this way). The process's chosen backend stays what `initBackend` returned.
 */
export async function activateBackend(name: 'webgpu' | 'wasm' | 'cpu'): Promise<void> {
  if (name === 'wasm' && !wasmPathsSet) {
    setWasmPaths(wasmDistDir());
    wasmPathsSet = true;
  }
  if (!(await tf.setBackend(name))) throw new Error(`backend "${name}" failed to initialise`);
}

/** The first error the WebGPU device reported on its own (out of memory, validation, device lost), for the memory guard. */
let gpuFault: string | null = null;

function watchDevice(device: GPUDevice): void {
  device.onuncapturederror = (event) => {
    const error = (event as GPUUncapturedErrorEvent).error;
    const kind = error?.constructor?.name === 'GPUOutOfMemoryError' ? 'out of GPU memory' : 'WebGPU error';
    gpuFault ??= `${kind}: ${error?.message ?? 'unknown'}`;
  };
  void device.lost.then((info) => {
    gpuFault ??= `WebGPU device lost (${info.reason}): ${info.message}`;
  });
}

/** The WebGPU device's first unhandled error since the last call (then cleared), or null. */
export function takeGpuFault(): string | null {
  const fault = gpuFault;
  gpuFault = null;
  return fault;
}

async function selectBackend(preference: BackendPreference): Promise<BackendInfo> {
  const skipped: SkippedBackend[] = [];
  const warnings: string[] = [];
  const order = ['webgpu', 'tensorflow-gpu', 'tensorflow-cpu', 'wasm', 'cpu'] as const;
  const startAt: Record<BackendPreference, number> = { auto: 0, webgpu: 0, tensorflow: 1, wasm: 3, cpu: 4 };
  const first = startAt[preference];
  for (let i = 0; i < first; i++) {
    skipped.push({ backend: order[i], reason: `not requested (backend preference is "${preference}")` });
  }
  let provider = '';
  let adapter: GpuAdapterSummary | null = null;
  for (let i = first; i < order.length && !provider; i++) {
    const candidate = order[i];
    let reason: string | null;
    if (candidate === 'webgpu' && process.env.MARSRL_WEBGPU === '0') {
      // An escape hatch for a machine whose Vulkan driver crashes Dawn while it is probed.
      reason = 'disabled by MARSRL_WEBGPU=0 (the WebGPU adapter was not probed)';
    } else if (candidate === 'webgpu') {
      const probe = await probeWebGpu();
      adapter = probe.adapter;
      reason = probe.reason;
      if (!reason && probe.adapter!.software && preference === 'auto') {
        reason = `software adapter ${adapterLabel(probe.adapter!)}: it runs the kernels on the CPU, slower than wasm, so auto does not choose it (set runtime.backend: webgpu to use it anyway)`;
      }
      if (!reason) reason = await startWebGpu(probe.gpuAdapter!);
      if (!reason) {
        provider = `tfjs-backend-webgpu on Dawn (${adapterLabel(probe.adapter!)})`;
        if (probe.adapter!.software) {
          warnings.push(`webgpu runs on a software adapter (${adapterLabel(probe.adapter!)}): results are correct but training is slower than on wasm`);
        }
      }
    } else if (candidate === 'tensorflow-gpu') {
      reason = await tryNative('@tensorflow/tfjs-node-gpu');
      if (!reason) provider = 'tfjs-node-gpu (CUDA)';
    } else if (candidate === 'tensorflow-cpu') {
      reason = await tryNative('@tensorflow/tfjs-node');
      if (!reason) provider = 'tfjs-node (native CPU)';
    } else if (candidate === 'wasm') {
      reason = await tryWasm();
      if (!reason) provider = 'tfjs-backend-wasm';
    } else {
      reason = (await tf.setBackend('cpu')) ? null : 'backend "cpu" failed to initialise';
      if (!reason) provider = 'tfjs-backend-cpu (JavaScript)';
    }
    if (reason) skipped.push({ backend: candidate, reason });
  }
  if (!provider) {
    throw new Error(`no tensor backend could be initialised: ${skipped.map((s) => `${s.backend}: ${s.reason}`).join('; ')}`);
  }
  await tf.ready();
  // After the backend (and with tfjs-node, the umbrella package's gradients) is loaded, so that
  // only the gaps are filled.
  registerMissingGradients();
  const name = tf.getBackend();
  const { threads, simd } = await describeThreads(name);
  if (name === 'wasm') provider += simd ? ' (SIMD)' : ' (no SIMD)';
  const fallbackFrom = preference === 'auto' ? null : preference;
  if (fallbackFrom !== null && name !== fallbackFrom) {
    warnings.push(`"${preference}" was requested but could not be used (${skipped.find((s) => s.backend.startsWith(fallbackFrom))?.reason ?? 'see skipped'}); using ${name}`);
  }
  return {
    name,
    threads,
    simd,
    skipped,
    requested: preference,
    fallback: fallbackFrom !== null && name !== fallbackFrom,
    provider,
    tfjsVersion: tf.version_core,
    adapter,
    warnings,
  };
}

async function describeThreads(name: string): Promise<{ threads: number; simd: boolean }> {
  if (name === 'wasm') {
    const simd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
    // The threaded build needs SharedArrayBuffer workers, which tfjs-backend-wasm only sets up in
    // browsers; in Node it runs the single-threaded SIMD build.
    const wasm = (tf.backend() as unknown as { wasm?: { _get_threads_count?: () => number } }).wasm;
    const threads = wasm?._get_threads_count?.() ?? 1;
    return { threads: Math.max(1, threads), simd };
  }
  if (name === 'tensorflow') {
    // libtensorflow sizes its intra-op pool to the machine unless told otherwise.
    const env = Number(process.env.TF_NUM_INTRAOP_THREADS);
    const threads = Number.isFinite(env) && env > 0 ? env : (os.availableParallelism?.() ?? os.cpus().length);
    return { threads, simd: true };
  }
  return { threads: 1, simd: false };
}

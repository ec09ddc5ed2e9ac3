/**
 * Tensor backend selection.
 *
 * Order for `auto`: tfjs-node-gpu (CUDA) → tfjs-node (native CPU) → wasm → cpu (pure JS). The two
 * native packages are optional dependencies: their installers download libtensorflow, which fails
 * offline, so they may simply be absent. They are loaded with a dynamic import inside try/catch and
 * every backend that is passed over is recorded with the reason, so the choice can be shown by
 * `marsrl doctor` and stored with every run.
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

export type BackendPreference = 'auto' | 'tensorflow' | 'wasm' | 'cpu';

export interface SkippedBackend {
  /** Which candidate was passed over: 'tensorflow-gpu', 'tensorflow-cpu', 'wasm' or 'cpu'. */
  backend: string;
  /** Why, in words a user can act on (package missing, libcudart not found, not requested, …). */
  reason: string;
}

export interface BackendInfo {
  /** TensorFlow.js backend name in use: 'tensorflow', 'wasm' or 'cpu'. */
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
}

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

async function selectBackend(preference: BackendPreference): Promise<BackendInfo> {
  const skipped: SkippedBackend[] = [];
  const order = ['tensorflow-gpu', 'tensorflow-cpu', 'wasm', 'cpu'] as const;
  const startAt: Record<BackendPreference, number> = { auto: 0, tensorflow: 0, wasm: 2, cpu: 3 };
  const first = startAt[preference];
  for (let i = 0; i < first; i++) {
    skipped.push({ backend: order[i], reason: `not requested (backend preference is "${preference}")` });
  }
  let provider = '';
  for (let i = first; i < order.length && !provider; i++) {
    const candidate = order[i];
    let reason: string | null;
    if (candidate === 'tensorflow-gpu') {
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
  return {
    name,
    threads,
    simd,
    skipped,
    requested: preference,
    fallback: fallbackFrom !== null && name !== fallbackFrom,
    provider,
    tfjsVersion: tf.version_core,
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

/**
 * The bundle scripts/device-bench.sh carries to a GPU machine (issue #15): it must run from a
 * folder with nothing but itself (no repository node_modules), reach Dawn through the copied
 * webgpu package, and stay well inside the 64 MiB the device tool carries. It holds the model bench
 * and the Hugging Face bench (with the real Qwen tokenizer files for its vocabulary).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let dir: string;

const bundled = (args: string[]) =>
  // cwd outside the repository, so nothing resolves from its node_modules.
  spawnSync(process.execPath, [path.join(dir, 'bench.mjs'), ...args], { cwd: tmp.dir, encoding: 'utf8', timeout: 120_000 });

beforeAll(() => {
  tmp = tempDir('marsrl-bundle-');
  dir = path.join(tmp.dir, 'device');
  const r = spawnSync('bash', ['scripts/device-bench.sh', 'bundle', dir], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  // `pack` carries dawn.node compressed and `device` unpacks it here; the test copies it.
  fs.mkdirSync(path.join(dir, 'node_modules/webgpu/dist/linux-x64'), { recursive: true });
  fs.copyFileSync(path.join(REPO_ROOT, 'node_modules/webgpu/dist/linux-x64/dawn.node'), path.join(dir, 'node_modules/webgpu/dist/linux-x64/dawn.node'));
});

afterAll(() => tmp.cleanup());

describe('the device bench bundle', () => {
  it('holds only the bench, the webgpu loader and the wasm binaries, a few MB in all', () => {
    const files = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    const names = files.map((f) => path.relative(dir, path.join(f.parentPath, f.name))).sort();
    expect(names).toEqual([
      'bench.mjs',
      'node_modules/@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm',
      'node_modules/@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm',
      'node_modules/@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm',
      'node_modules/@tensorflow/tfjs-backend-wasm/package.json',
      'node_modules/webgpu/dist/linux-x64/dawn.node',
      'node_modules/webgpu/index.js',
      'node_modules/webgpu/package.json',
      'tokenizer-qwen3/tokenizer.json',
      'tokenizer-qwen3/tokenizer_config.json',
    ]);
    // dawn.node and the tokenizer (11 MB; the hf bench's real Qwen vocabulary) travel xz-compressed (`pack`).
    const rest = names.filter((n) => !n.endsWith('dawn.node') && n !== 'tokenizer-qwen3/tokenizer.json').reduce((s, n) => s + fs.statSync(path.join(dir, n)).size, 0);
    expect(rest).toBeLessThan(8 * 2 ** 20);
  });

  it('runs on its own: the doctor reaches the WebGPU adapter through the copied Dawn binary', () => {
    const r = bundled(['doctor', '--backend', 'webgpu']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^backend {3}webgpu — tfjs-backend-webgpu on Dawn/);
    expect(r.stdout).toMatch(/maxStorageBufferBindingSize/);
  });

  it('the bundled model bench checks its options, and the wasm binaries load', () => {
    const bad = bundled(['model', '--backend', 'bogus']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/--backend must be auto, webgpu, tensorflow, wasm or cpu, got bogus/);
    const wasm = bundled(['doctor', '--backend', 'wasm']);
    expect(wasm.status, wasm.stderr).toBe(0);
    expect(wasm.stdout).toMatch(/^backend {3}wasm — tfjs-backend-wasm \(SIMD\)/);
    expect(bundled(['nope']).status).toBe(2);
  });

  it('the bundled hf bench checks its options before it writes or loads anything', () => {
    const bad = bundled(['hf', '--shape', 'bogus']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/--shape must be one of bench, qwen2\.5-0\.5b, tiny, got bogus/);
    const peer = bundled(['hf', '--peer-device', 'tpu']);
    expect(peer.stderr).toMatch(/--peer-device must be cpu or cuda, got tpu/);
  });
});

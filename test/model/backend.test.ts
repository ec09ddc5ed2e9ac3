/**
 * Backend selection on this machine: the WebGPU adapter here is at best Mesa's llvmpipe (a
 * software adapter, which auto refuses) and the native packages are optional and absent offline,
 * so `auto` must fall through to wasm and say why. test/model/webgpu.test.ts covers every
 * WebGPU fallback reason.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { doctorReport, formatDoctorReport } from '../../src-main/engine/model/doctor';

const require = createRequire(import.meta.url);
const installed = (pkg: string) => {
  try {
    require.resolve(`${pkg}/package.json`);
    return true;
  } catch {
    return false;
  }
};

describe('initBackend', () => {
  it('picks the best available backend, records why others were skipped, and is idempotent', async () => {
    const info = await initBackend('auto');
    const nativeMissing = !installed('@tensorflow/tfjs-node-gpu') && !installed('@tensorflow/tfjs-node');
    // A hardware WebGPU adapter would be chosen first; this machine has none (or a software one).
    if (nativeMissing && !(info.adapter && !info.adapter.software)) {
      expect(info.name).toBe('wasm');
      expect(info.skipped.map((s) => s.backend)).toEqual(['webgpu', 'tensorflow-gpu', 'tensorflow-cpu']);
      expect(info.skipped[0].reason).toMatch(/^(software adapter|no WebGPU adapter|Dawn's WebGPU bindings)/);
      for (const s of info.skipped.slice(1)) expect(s.reason).toMatch(/not installed/);
      expect(info.simd).toBe(true);
      expect(info.threads).toBe(1);
    }
    expect(info.fallback).toBe(false);
    // The first call decides; later ones return the same answer.
    expect(await initBackend('cpu')).toBe(info);
    const report = await doctorReport();
    const text = formatDoctorReport(report);
    expect(text).toContain(`backend   ${info.name}`);
    expect(text).toContain(`threads   ${info.threads}`);
    for (const s of info.skipped) expect(text).toContain(`${s.backend}: ${s.reason}`);
    expect(text).toMatch(/kernels/);
  });
});

/**
 * Checkpoints of both families round-trip bit for bit and resume training exactly.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { loadHfModel } from '../../src-main/engine/hf/load';
import { loadCheckpoint, loadHfCheckpoint, saveCheckpoint, saveHfCheckpoint } from '../../src-main/engine/checkpoint/checkpoint';
import { readAnyCheckpointManifest } from '../../src-main/engine/checkpoint/manifest';
import { createModel } from '../../src-main/engine/gpt/model';
import { createOptimizer } from '../../src-main/engine/model/optim';
import { Tokenizer } from '../../src-main/engine/gpt/tokenizer';
import { supervisedStep, type SupervisedBatch } from '../../src-main/engine/model/train';
import { Rng } from '../../src-main/engine/util/rng';
import { writeTinyQwen3Model } from '../training/hf-tiny';
import { randomTokens } from './helpers';

let root = '';
beforeAll(async () => {
  await initBackend('wasm');
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-ckpt-'));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const tokenizer = new Tokenizer('0123456789 ');
const config = { vocabSize: tokenizer.vocabSize, d_model: 16, n_layers: 2, n_heads: 2, context: 12, mlp_ratio: 2 };
const OPT = { lr: 3e-3, beta1: 0.9, beta2: 0.99, weight_decay: 0.01, grad_clip: 1 };
const SCHEDULE = { warmupSteps: 2, decaySteps: 12 };

function batches(n: number): SupervisedBatch[] {
  const rng = new Rng(91, 'ckpt-data');
  return Array.from({ length: n }, () => {
    const tokens = randomTokens(rng, 4, 10, tokenizer.vocabSize);
    return { tokens, lossMask: tokens.map((r) => r.map(() => 1)) };
  });
}

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

describe('checkpoints', () => {
  it('round-trip weights, optimizer state, tokenizer and config snapshot bit for bit', () => {
    const model = createModel(config, 92);
    const opt = createOptimizer(model, OPT, SCHEDULE);
    for (const b of batches(3)) supervisedStep(model, opt, b);
    const dir = path.join(root, 'a');
    const snapshot = { seed: 7, policies: { solver: { model: { d_model: 16 } } } };
    saveCheckpoint(dir, { model, optimizer: opt, tokenizer, config: snapshot, step: 3, extra: { dataRng: 123 } });
    expect(fs.readdirSync(dir).sort()).toEqual(['checkpoint.json', 'optimizer.bin', 'weights.bin']);
    expect(fs.statSync(path.join(dir, 'weights.bin')).size).toBe(4 * model.numParams);
    expect(fs.statSync(path.join(dir, 'optimizer.bin')).size).toBe(8 * model.numParams);
    const loaded = loadCheckpoint(dir);
    expect(bytes(loaded.model.getWeights()).equals(bytes(model.getWeights()))).toBe(true);
    const a = opt.getState();
    const b = loaded.optimizer!.getState();
    expect(b.step).toBe(3);
    expect(bytes(b.m).equals(bytes(a.m))).toBe(true);
    expect(bytes(b.v).equals(bytes(a.v))).toBe(true);
    expect(b.config).toEqual(OPT);
    expect(b.schedule).toEqual(SCHEDULE);
    expect(loaded.tokenizer.toJSON()).toEqual(tokenizer.toJSON());
    expect(loaded.config).toEqual(snapshot);
    expect(loaded.extra).toEqual({ dataRng: 123 });
    expect(loaded.step).toBe(3);
    expect(loaded.model.config).toEqual(config);
    [model, loaded.model].forEach((m) => m.dispose());
    [opt, loaded.optimizer!].forEach((o) => o.dispose());
  });

  it('resuming from a checkpoint continues training exactly as without the interruption', () => {
    const data = batches(8);
    const model = createModel(config, 93);
    const opt = createOptimizer(model, OPT, SCHEDULE);
    data.slice(0, 4).forEach((b) => supervisedStep(model, opt, b));
    const dir = path.join(root, 'b');
    saveCheckpoint(dir, { model, optimizer: opt, tokenizer, config: null, step: 4 });
    const losses = data.slice(4).map((b) => supervisedStep(model, opt, b).loss);
    const resumed = loadCheckpoint(dir);
    const resumedLosses = data.slice(4).map((b) => supervisedStep(resumed.model, resumed.optimizer!, b).loss);
    expect(resumedLosses).toEqual(losses);
    expect(bytes(resumed.model.getWeights()).equals(bytes(model.getWeights()))).toBe(true);
    expect(resumed.optimizer!.stepCount).toBe(8);
    [model, resumed.model].forEach((m) => m.dispose());
    [opt, resumed.optimizer!].forEach((o) => o.dispose());
  });

  it('detects a corrupted weights file and a missing checkpoint', () => {
    const model = createModel(config, 94);
    const dir = path.join(root, 'c');
    saveCheckpoint(dir, { model, tokenizer, config: {}, step: 0 });
    expect(fs.existsSync(path.join(dir, 'optimizer.bin'))).toBe(false);
    const ok = loadCheckpoint(dir);
    expect(ok.optimizer).toBeNull();
    ok.model.dispose();
    const file = path.join(dir, 'weights.bin');
    const buf = fs.readFileSync(file);
    buf[10] ^= 0xff;
    fs.writeFileSync(file, buf);
    expect(() => loadCheckpoint(dir)).toThrow(/corrupt/);
    expect(() => loadCheckpoint(path.join(root, 'nothing-here'))).toThrow(/no checkpoint/);
    model.dispose();
  });
});

describe('checkpoints of the Hugging Face family (issue #13)', () => {
  it('round-trip the trainable weights and Adam state bit for bit, and resume training exactly', () => {
    const folder = writeTinyQwen3Model(path.join(root, 'qwen3-tiny'));
    const { model, tokenizer: hfTok, identity } = loadHfModel(folder);
    const opt = createOptimizer(model, OPT, SCHEDULE);
    const rng = new Rng(95, 'hf-ckpt-data');
    const data: SupervisedBatch[] = Array.from({ length: 6 }, () => {
      const tokens = randomTokens(rng, 3, 9, hfTok.vocabSize);
      return { tokens, lossMask: tokens.map((r) => r.map(() => 1)) };
    });
    data.slice(0, 3).forEach((b) => supervisedStep(model, opt, b));
    const dir = path.join(root, 'hf-a');
    const prompts = { systemPrompts: { solver: 'Solve.' }, enableThinking: false };
    const manifest = saveHfCheckpoint(dir, { model, base: identity, tokenizerDir: folder, prompts, optimizer: opt, config: { seed: 9 }, step: 3, extra: { note: 'x' } });
    expect(manifest.family).toBe('hf');
    expect(readAnyCheckpointManifest(dir)).toEqual(manifest);
    expect(() => loadCheckpoint(dir)).toThrow(/checkpoint of a Hugging Face model; load it with loadHfCheckpoint/);
    const loaded = loadHfCheckpoint(dir);
    expect(bytes(loaded.model.getWeights()).equals(bytes(model.getWeights()))).toBe(true);
    expect(loaded.model.config).toEqual(model.config);
    expect(loaded.base).toEqual(identity);
    expect(loaded.prompts).toEqual(prompts);
    expect(loaded.config).toEqual({ seed: 9 });
    expect(loaded.extra).toEqual({ note: 'x' });
    expect(loaded.tokenizer.encode('sort 3 1 2')).toEqual(hfTok.encode('sort 3 1 2'));
    const losses = data.slice(3).map((b) => supervisedStep(model, opt, b).loss);
    const resumedLosses = data.slice(3).map((b) => supervisedStep(loaded.model, loaded.optimizer!, b).loss);
    expect(resumedLosses).toEqual(losses);
    expect(bytes(loaded.model.getWeights()).equals(bytes(model.getWeights()))).toBe(true);
    [model, loaded.model].forEach((m) => m.dispose());
    [opt, loaded.optimizer!].forEach((o) => o.dispose());
  });

  it('refuses a corrupted weights file, a missing tokenizer file and a missing manifest, naming the file', () => {
    const folder = path.join(root, 'qwen3-tiny');
    const { model, identity } = loadHfModel(folder);
    const dir = path.join(root, 'hf-b');
    saveHfCheckpoint(dir, { model, base: identity, tokenizerDir: folder, prompts: { systemPrompts: {}, enableThinking: false }, config: null, step: 0 });
    expect(fs.existsSync(path.join(dir, 'optimizer.bin'))).toBe(false);
    const ok = loadHfCheckpoint(dir);
    expect(ok.optimizer).toBeNull();
    ok.model.dispose();
    // No temporary files are left beside the checkpoint's own.
    expect(fs.readdirSync(dir).sort()).toEqual(['checkpoint.json', 'tokenizer', 'weights.safetensors']);
    const file = path.join(dir, 'weights.safetensors');
    const buf = fs.readFileSync(file);
    buf[buf.length - 3] ^= 0xff;
    fs.writeFileSync(file, buf);
    expect(() => loadHfCheckpoint(dir)).toThrow(/weights\.safetensors is corrupt \(checksum mismatch\)/);
    buf[buf.length - 3] ^= 0xff;
    fs.writeFileSync(file, buf);
    fs.rmSync(path.join(dir, 'tokenizer', 'tokenizer.json'));
    expect(() => loadHfCheckpoint(dir)).toThrow(/tokenizer\/tokenizer\.json is missing/);
    expect(() => saveHfCheckpoint(path.join(root, 'hf-c'), { model, base: identity, tokenizerDir: path.join(root, 'nowhere'), prompts: { systemPrompts: {}, enableThinking: false }, config: null, step: 0 })).toThrow(/nowhere\/tokenizer\.json is missing/);
    expect(() => loadHfCheckpoint(path.join(root, 'nothing-here'))).toThrow(/no checkpoint/);
    model.dispose();
  });
});

/**
 * `marsrl model inspect|export` as a user runs them (a separate Node process through the bin
 * entry): the happy paths (a folder and a Studio checkpoint of the hf family), and every bad
 * input the issue lists refused with the file and the key, a non-zero exit code, and nothing
 * written. The checkpoint and the bad inputs run through the CLI's `main` in this process (the
 * same command code and exit code, without a Node start-up each); the folder and the existing
 * export path go through the real bin.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gguf } from '@huggingface/gguf';
import { hfModelIdentity, loadHfModel } from '../../src-main/engine/hf/load';
import { writeRandomHfModel } from '../../src-main/engine/hf/random-model';
import { openSafetensors, readTensorBytes } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { saveHfCheckpoint } from '../../src-main/engine/checkpoint/checkpoint';
import { marsrl, marsrlMain } from '../helpers/cli';
import { tempFolder } from '../helpers/tmp';
import { QWEN3_TOKENIZER } from './corpus';

const tmp = tempFolder('marsrl-modelcli-');
let good = '';

beforeAll(() => {
  good = path.join(tmp.dir, 'good');
  writeRandomHfModel(good, { arch: 'qwen3', layers: 1, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 48, tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'F32', seed: 21, shards: 2 });
});

/** A copy of the good folder, changed by `edit`. */
function variant(name: string, edit: (dir: string) => void): string {
  const dir = path.join(tmp.dir, name);
  fs.cpSync(good, dir, { recursive: true });
  edit(dir);
  return dir;
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
const writeJson = (file: string, value: unknown) => fs.writeFileSync(file, JSON.stringify(value));

describe('marsrl model inspect / export', () => {
  it('inspects a good folder and exports it as hf and gguf', async () => {
    const text = marsrl(['model', 'inspect', good]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/architecture Qwen3ForCausalLM \(model_type qwen3\)/);
    expect(text.stdout).toMatch(/attention +4 heads × 16, 2 KV heads \(grouped-query\), q\/k RMSNorm/);
    expect(text.stdout).toMatch(/stop <\|im_end\|> \(151645\)/);
    expect(text.stdout).toMatch(/supported +yes/);
    const json = marsrl(['model', 'inspect', good, '--json']);
    const report = JSON.parse(json.stdout) as { supported: boolean; parameters: number; weights: { files: string[]; dtypes: Record<string, number> }; tokenizer: { vocabSize: number; chatTemplate: { renders: boolean } } };
    expect(report.supported).toBe(true);
    // embed 151669·32 + per layer (2 norms 64 + q 2048 + k 1024 + v 1024 + o 2048 + q/k norm 32 + MLP 3·1536) + final norm 32
    expect(report.parameters).toBe(151669 * 32 + (64 + 2048 + 1024 + 1024 + 2048 + 32 + 3 * 1536) + 32);
    expect(report.weights.files).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect(report.weights.dtypes).toEqual({ F32: 13 }); // embedding, 11 per layer, final norm
    expect(report.tokenizer.chatTemplate.renders).toBe(true);

    const hfOut = path.join(tmp.dir, 'out-hf');
    const hf = marsrl(['model', 'export', good, '--format', 'hf', '--dtype', 'bf16', '--out', hfOut, '--json']);
    expect(hf.code, hf.stderr).toBe(0);
    expect(openSafetensors(hfOut).tensors.get('model.embed_tokens.weight')!.dtype).toBe('BF16');
    expect(readJson(path.join(hfOut, 'config.json')).torch_dtype).toBe('bfloat16');
    const ggufOut = path.join(tmp.dir, 'out.gguf');
    const g = marsrl(['model', 'export', good, '--format', 'gguf', '--out', ggufOut]);
    expect(g.code, g.stderr).toBe(0);
    expect(g.stdout).toMatch(/Wrote .*out\.gguf \(GGUF f32/);
    const parsed = await gguf(ggufOut, { allowLocalFile: true });
    expect(parsed.metadata['general.architecture']).toBe('qwen3');
    expect(parsed.tensorInfos.length).toBe(13);
  });

  it('exports a Studio checkpoint of the hf family bit-exactly', async () => {
    await initBackend('wasm');
    const { model, tokenizer } = loadHfModel(good);
    const ckpt = path.join(tmp.dir, 'ckpt');
    try {
      saveHfCheckpoint(ckpt, { model, base: hfModelIdentity(good), tokenizerDir: tokenizer.dir, prompts: { systemPrompts: {}, enableThinking: false }, config: null, step: 3 });
    } finally {
      model.dispose();
    }
    const shown = await marsrlMain(['model', 'inspect', ckpt]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`checkpoint   step 3, started from ${good}`);
    expect(shown.stdout).toMatch(/architecture Qwen3ForCausalLM/);
    expect(shown.stdout).toMatch(/weights +weights\.safetensors: 13 tensors/);
    const out = path.join(tmp.dir, 'ckpt-hf');
    const r = await marsrlMain(['model', 'export', ckpt, '--format', 'hf', '--dtype', 'f32', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const a = openSafetensors(good).tensors;
    const b = openSafetensors(out).tensors;
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    for (const [name, t] of a) expect(Buffer.from(readTensorBytes(b.get(name)!)).equals(Buffer.from(readTensorBytes(t))), name).toBe(true);
    expect(fs.readFileSync(path.join(out, 'tokenizer.json')).equals(fs.readFileSync(path.join(good, 'tokenizer.json')))).toBe(true);
  });

  const bad: Array<{ name: string; make: () => string; message: RegExp; exportToo?: boolean }> = [
    { name: 'a folder without config.json', make: () => variant('no-config', (d) => fs.rmSync(path.join(d, 'config.json'))), message: /no-config\/config\.json: not found/, exportToo: true },
    {
      name: 'an unsupported architecture (MixtralForCausalLM)',
      make: () => variant('mixtral', (d) => writeJson(path.join(d, 'config.json'), { ...readJson(path.join(d, 'config.json')), architectures: ['MixtralForCausalLM'], model_type: 'mixtral', num_local_experts: 8 })),
      message: /mixtral\/config\.json.*(architectures|model_type).*Mixtral/i,
      exportToo: true,
    },
    { name: 'a missing shard', make: () => variant('missing-shard', (d) => fs.rmSync(path.join(d, 'model-00002-of-00002.safetensors'))), message: /model\.safetensors\.index\.json \(weight_map\.[^)]+\): shard model-00002-of-00002\.safetensors is missing/, exportToo: true },
    {
      name: 'a truncated safetensors file',
      make: () => variant('truncated', (d) => {
        const f = path.join(d, 'model-00001-of-00002.safetensors');
        fs.truncateSync(f, fs.statSync(f).size - 1000);
      }),
      message: /model-00001-of-00002\.safetensors \([^)]+\.data_offsets\): data ends at byte \d+ of the data section but the file holds only \d+ data bytes \(truncated\?\)/,
      exportToo: true,
    },
    {
      name: 'a header that lies about sizes',
      make: () => variant('lying-header', (d) => {
        const f = path.join(d, 'model-00002-of-00002.safetensors');
        const bytes = fs.readFileSync(f);
        const n = Number(bytes.readBigUInt64LE(0));
        const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { shape: number[] }>;
        const name = Object.keys(header).find((k) => k !== '__metadata__' && header[k].shape.length === 2)!;
        header[name].shape = [header[name].shape[0] * 2, header[name].shape[1]];
        let text = JSON.stringify(header);
        text += ' '.repeat(Math.max(0, n - Buffer.byteLength(text)));
        expect(Buffer.byteLength(text)).toBe(n);
        fs.writeFileSync(f, Buffer.concat([bytes.subarray(0, 8), Buffer.from(text), bytes.subarray(8 + n)]));
      }),
      message: /model-00002-of-00002\.safetensors \([^)]+\.data_offsets\): byte range \[\d+, \d+\) holds \d+ bytes but shape \[\d+, \d+\] × F32 needs \d+/,
      exportToo: true,
    },
    { name: 'a tokenizer.json that does not parse', make: () => variant('bad-tokenizer', (d) => fs.writeFileSync(path.join(d, 'tokenizer.json'), '{"version": "1.0", "model": {')), message: /bad-tokenizer\/tokenizer\.json: not valid JSON/, exportToo: true },
    {
      name: 'a vocabulary larger than the embedding',
      make: () => variant('big-vocab', (d) => {
        // A tokenizer with added tokens past the embedding's 151669 rows (a tokenizer from another model).
        const f = path.join(d, 'tokenizer.json');
        const tok = readJson(f) as { added_tokens: Array<Record<string, unknown>> };
        tok.added_tokens.push({ id: 151700, content: '<|extra_0|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
        writeJson(f, tok);
      }),
      message: /big-vocab\/tokenizer\.json \(model\.vocab\): the tokenizer has 151701 ids but .*big-vocab\/config\.json vocab_size \(the embedding's rows\) is 151669/,
      exportToo: true,
    },
    {
      name: 'a chat template that fails to render',
      make: () => variant('bad-template', (d) => {
        const f = path.join(d, 'tokenizer_config.json');
        writeJson(f, { ...readJson(f), chat_template: "{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}" });
      }),
      message: /bad-template\/tokenizer_config\.json \(chat_template\): chat template (failed to render|does not parse)/,
    },
  ];

  for (const c of bad) {
    it(`refuses ${c.name}, naming the file and the key`, async () => {
      const dir = c.make();
      const before = fs.readdirSync(dir).sort();
      const r = await marsrlMain(['model', 'inspect', dir]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(c.message);
      if (c.exportToo) {
        const out = path.join(tmp.dir, `${path.basename(dir)}-export`);
        const e = await marsrlMain(['model', 'export', dir, '--format', 'hf', '--out', out]);
        expect(e.code).not.toBe(0);
        expect(e.stderr).toMatch(c.message);
        expect(fs.existsSync(out)).toBe(false);
      }
      expect(fs.readdirSync(dir).sort()).toEqual(before);
      expect(fs.readdirSync(tmp.dir).filter((n) => n.includes('.partial-'))).toEqual([]);
    });
  }

  it('refuses an export path that exists without --force, leaving it as it was', () => {
    const out = path.join(tmp.dir, 'existing.gguf');
    fs.writeFileSync(out, 'precious');
    const r = marsrl(['model', 'export', good, '--format', 'gguf', '--out', out]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${out} already exists; choose another --out or pass --force to replace it`);
    expect(fs.readFileSync(out, 'utf8')).toBe('precious');
    const usage = marsrl(['model', 'export', good, '--format', 'onnx', '--out', path.join(tmp.dir, 'x')]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--format must be hf, gguf or peft \(got "onnx"\)/);
    expect(fs.existsSync(path.join(tmp.dir, 'x'))).toBe(false);
  });
});

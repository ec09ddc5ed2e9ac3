/**
 * StudioApi.inspectModel (issue #13): what the new-run form shows about a Hugging Face folder,
 * validated at the boundary and answered by the same function over IPC and over HTTP.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { EventHub } from '../../src-main/api/hub';
import { handleStudioCall } from '../../src-main/electron/ipc';
import { createStudioServer, type StudioServer } from '../../src-main/server/server';
import { buildStudioBridge } from '../../src-preload/bridge';
import type { ModelInspection, StudioApi } from '#shared/contract';
import { refusal } from '../helpers/errors';
import { serviceInTemp } from '../helpers/service';
import { api } from '../server/http';
import { writeTinyQwen3Model } from '../training/hf-tiny';

const studio = serviceInTemp('http', 'marsrl-inspect-');
let service: StudioApi;
let server: StudioServer;
let modelDir: string;

beforeAll(async () => {
  service = studio.service;
  server = await createStudioServer({ service, hub: new EventHub(), port: 0, rendererDir: path.join(studio.dir, 'no-renderer'), log: () => {} });
  modelDir = writeTinyQwen3Model(path.join(studio.dir, 'qwen3-tiny'), { context: 384 });
});
afterAll(async () => {
  await server?.close();
});

describe('inspectModel', () => {
  it('summarises a supported folder: architecture, shape, context, weights, tokenizer and template', async () => {
    const report = (await callStudio(service, 'inspectModel', [modelDir])) as ModelInspection;
    expect(report).toMatchObject({
      path: modelDir,
      supported: true,
      problems: [],
      architecture: 'Qwen3ForCausalLM',
      modelType: 'qwen3',
      context: 384,
      shape: { layers: 1, hidden: 16, heads: 2, kvHeads: 1, headDim: 8, tiedEmbeddings: true },
    });
    expect(report.shape!.vocabSize).toBe(report.tokenizer!.vocabSize);
    expect(report.parameters).toBeGreaterThan(report.shape!.vocabSize * 16);
    expect(report.weights).toMatchObject({ files: ['model.safetensors'], dtypes: { F32: report.weights!.tensors } });
    expect(report.weights!.bytes).toBe(report.parameters! * 4);
    expect(report.tokenizer!.stopTokens).toContain('<|im_end|>');
    expect(report.tokenizer!.chatTemplate?.renders).toBe(true);
    // The LoRA targets the form offers (issue #14): Qwen3's seven linears, shapes from the tiny
    // config by hand (hidden 16, 2 heads × 8 = 16 for q, 1 KV head × 8 = 8 for k/v, MLP 32).
    expect(report.linearModules).toEqual([
      { name: 'q_proj', inDim: 16, outDim: 16, parent: 'self_attn' },
      { name: 'k_proj', inDim: 16, outDim: 8, parent: 'self_attn' },
      { name: 'v_proj', inDim: 16, outDim: 8, parent: 'self_attn' },
      { name: 'o_proj', inDim: 16, outDim: 16, parent: 'self_attn' },
      { name: 'gate_proj', inDim: 16, outDim: 32, parent: 'mlp' },
      { name: 'up_proj', inDim: 16, outDim: 32, parent: 'mlp' },
      { name: 'down_proj', inDim: 32, outDim: 16, parent: 'mlp' },
    ]);
  });

  it('says why a folder cannot be used instead of failing the call', async () => {
    const empty = path.join(studio.dir, 'empty');
    fs.mkdirSync(empty);
    const report = (await callStudio(service, 'inspectModel', [empty])) as ModelInspection;
    expect(report.supported).toBe(false);
    expect(report.problems.join('\n')).toMatch(/config\.json/);
    expect(report.linearModules).toEqual([]);
    const mixtral = path.join(studio.dir, 'mixtral');
    fs.mkdirSync(mixtral);
    const config = JSON.parse(fs.readFileSync(path.join(modelDir, 'config.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(mixtral, 'config.json'), JSON.stringify({ ...config, architectures: ['MixtralForCausalLM'], model_type: 'mixtral' }));
    const refused = (await callStudio(service, 'inspectModel', [mixtral])) as ModelInspection;
    expect(refused).toMatchObject({ supported: false, architecture: 'MixtralForCausalLM' });
    expect(refused.problems.join('\n')).toMatch(/architectures.*MixtralForCausalLM is not supported/);
  });

  it('rejects a bad argument at the boundary, naming it', async () => {
    for (const [args, message] of [
      [[], /inspectModel/],
      [[''], /inspectModel\.0: give the path of a Hugging Face model folder/],
      [[42], /inspectModel\.0/],
      [['a\0b'], /NUL/],
    ] as const) {
      const shape = await refusal(service, 'inspectModel', args);
      expect(shape?.code).toBe('invalid_request');
      expect(shape?.message).toMatch(message);
    }
  });

  it('answers the same over IPC (through the preload bridge) and over HTTP', async () => {
    const direct = await service.inspectModel(modelDir);
    const rendererDir = path.resolve('/opt/marsrl/out/renderer');
    const appFrame = { senderFrame: { url: pathToFileURL(path.join(rendererDir, 'index.html')).href, parent: null } } as unknown as Parameters<typeof handleStudioCall>[0];
    const bridge = buildStudioBridge(
      (method, args) => handleStudioCall(appFrame, method, structuredClone(args), { rendererDir }, (m, a) => callStudio(service, m, a)),
      () => () => {},
    );
    expect(await bridge.inspectModel(modelDir)).toEqual(direct);
    await expect(bridge.inspectModel('')).rejects.toThrow(/give the path of a Hugging Face model folder/);
    const res = await api(server.port, 'inspectModel', [modelDir]);
    expect(res.status).toBe(200);
    expect(res.json<{ result: ModelInspection }>().result).toEqual(direct);
    expect((await api(server.port, 'inspectModel', [''])).status).toBe(400);
  });

  it('the desktop bridge offers the folder picker only when main provides it', async () => {
    const noop = buildStudioBridge(async () => ({ ok: true, value: null }), () => () => {});
    expect(noop.pickFolder).toBeUndefined();
    const titles: string[] = [];
    const desktop = buildStudioBridge(async () => ({ ok: true, value: null }), () => () => {}, async (title) => {
      titles.push(title);
      return '/models/Qwen3-0.6B';
    });
    expect(await desktop.pickFolder!('Choose a model folder')).toBe('/models/Qwen3-0.6B');
    expect(titles).toEqual(['Choose a model folder']);
  });
});

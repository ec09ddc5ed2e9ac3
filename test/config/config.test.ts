import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyOverrides, ConfigError, listPresets, readConfigFile } from '../../src-main/engine/config/load';
import { loadRunConfig, resolveConfig, validateConfig } from '../../src-main/engine/preflight';
import { RunConfigSchema } from '../../src-main/engine/config/schema';
import { configSchemaInfo } from '../../src-main/engine/config/fields';
import { resolveModelFolder } from '../../src-main/engine/preflight/model-folder';
import { tempFolder } from '../helpers/tmp';

const tmp = tempFolder();

function issuesOf(doc: unknown) {
  const result = validateConfig(doc);
  if (result.ok) throw new Error(`expected ${JSON.stringify(doc)} to be rejected`);
  return result.issues;
}

describe('run configuration schema', () => {
  it('fills every default from an empty document', () => {
    const config = resolveConfig({});
    expect(config.seed).toBe(1);
    expect(config.rollout.solver_group).toBe(8);
    expect(config.advantage).toEqual({ mode: 'agentwise', std: 'unbiased', single_sample: 'zero', eps: 1e-6, verifier_class_balance: false });
    expect(Object.keys(config.policies).sort()).toEqual(['corrector', 'solver', 'verifier']);
    const model = config.policies.solver.model;
    expect(model.kind).toBe('gpt');
    expect(model.kind === 'gpt' && model.d_model).toBe(64);
    expect(config.policies.solver.optimizer.lr).toBe(1e-4);
  });

  it('describes every field, so the form and docs can show it', () => {
    const missing: string[] = [];
    const visit = (schema: unknown, at: string) => {
      const s = schema as { description?: string; def?: { type: string; innerType?: unknown; shape?: Record<string, unknown>; valueType?: unknown; in?: unknown } };
      let inner = s;
      let described = Boolean(s.description);
      while (inner.def && ['default', 'prefault', 'optional', 'pipe'].includes(inner.def.type)) {
        inner = (inner.def.innerType ?? inner.def.in) as typeof s;
        described ||= Boolean(inner.description);
      }
      if (at && !described) missing.push(at);
      const shape = (inner as { shape?: Record<string, unknown> }).shape;
      if (inner.def?.type === 'object' && shape) for (const [k, v] of Object.entries(shape)) visit(v, at ? `${at}.${k}` : k);
      if (inner.def?.type === 'record') visit(inner.def.valueType, `${at}.*`);
    };
    visit(RunConfigSchema, '');
    expect(missing).toEqual([]);
  });

  const BAD: [string, unknown, string, RegExp][] = [
    ['unknown top-level key', { sed: 3 }, 'sed', /unknown key.*seed/],
    ['unknown nested key', { rollout: { solver_groups: 4 } }, 'rollout.solver_groups', /unknown key.*solver_group/],
    ['group size 0', { rollout: { solver_group: 0 } }, 'rollout.solver_group', /at least 1/],
    ['negative learning rate', { policies: { solver: { optimizer: { lr: -0.001 } } } }, 'policies.solver.optimizer.lr', /greater than 0/],
    ['wrong type', { seed: 'seven' }, 'seed', /must be a number/],
    ['non-integer', { rollout: { select_k: 1.5 } }, 'rollout.select_k', /integer/],
    ['unknown enum value', { advantage: { mode: 'per-agent' } }, 'advantage.mode', /one of "agentwise", "global"/],
    ['segment larger than the budget', { pipeline: { segment_tokens: 100 }, rollout: { max_response_tokens: 64 } }, 'pipeline.segment_tokens', /exceeds the response budget/],
    ['agent using an undefined policy', { agents: { verifier: 'judge' } }, 'agents.verifier', /policy "judge" is not defined; defined policies: solver, verifier, corrector/],
    ['heads not dividing width', { policies: { solver: { model: { d_model: 60, n_heads: 8 } } } }, 'policies.solver.model.n_heads', /must divide d_model/],
    ['select more than the group', { rollout: { solver_group: 2, select_k: 3 } }, 'rollout.select_k', /exceeds solver_group/],
    ['jsonl without a path', { task: { family: 'jsonl' } }, 'task.jsonl_path', /required when task.family is "jsonl"/],
    ['response budget filling the context', { rollout: { max_response_tokens: 128 } }, 'rollout.max_response_tokens', /leaves no room for the prompt/],
    ['bad policy id', { policies: { 'Big Model': {} } }, 'policies.Big Model', /lower-case/],
    ['temperature out of range', { rollout: { temperature: 0 } }, 'rollout.temperature', /greater than 0/],
  ];

  it.each(BAD)('rejects %s with the field path', (_label, doc, fieldPath, message) => {
    const issues = issuesOf(doc);
    const issue = issues.find((i) => i.path === fieldPath);
    expect(issue, JSON.stringify(issues)).toBeDefined();
    expect(issue!.message).toMatch(message);
  });

  it('reports the value that was given', () => {
    const issue = issuesOf({ rollout: { solver_group: 0 } })[0];
    expect(issue.value).toBe(0);
    expect(() => resolveConfig({ rollout: { solver_group: 0 } }, 'my.yaml')).toThrow(/my\.yaml.*\n\s+rollout\.solver_group: must be at least 1 \(got 0\)/);
  });

  it('keeps the default role policies when only one is overridden', () => {
    const config = resolveConfig({ policies: { solver: { optimizer: { lr: 3e-4 } } } });
    expect(config.policies.solver.optimizer.lr).toBe(3e-4);
    expect(config.policies.verifier.optimizer.lr).toBe(1e-4);
  });

  it('accepts one shared policy used by every role', () => {
    const config = resolveConfig({ policies: { shared: {} }, agents: { solver: 'shared', verifier: 'shared', corrector: 'shared' } });
    expect(Object.keys(config.policies)).toEqual(['shared']);
  });
});

describe('config files, presets and overrides', () => {
  it('reads YAML and JSON, and names the file and line of malformed YAML', () => {
    const yamlFile = path.join(tmp.dir, 'a.yaml');
    fs.writeFileSync(yamlFile, 'seed: 5\nrollout:\n  solver_group: 4\n');
    expect(loadRunConfig({ file: yamlFile }).config.rollout.solver_group).toBe(4);
    const jsonFile = path.join(tmp.dir, 'a.json');
    fs.writeFileSync(jsonFile, '{"seed": 9}');
    expect(loadRunConfig({ file: jsonFile }).config.seed).toBe(9);
    const broken = path.join(tmp.dir, 'broken.yaml');
    fs.writeFileSync(broken, 'seed: 5\nrollout:\n  solver_group: [1, 2\n');
    expect(() => readConfigFile(broken)).toThrow(ConfigError);
    expect(() => readConfigFile(broken)).toThrow(/broken\.yaml.*malformed YAML.*line \d+/s);
    const list = path.join(tmp.dir, 'list.yaml');
    fs.writeFileSync(list, '- 1\n- 2\n');
    expect(() => readConfigFile(list)).toThrow(/must be a mapping/);
    expect(() => readConfigFile(path.join(tmp.dir, 'missing.yaml'))).toThrow(/missing\.yaml.*no such file/s);
  });

  it('applies --set overrides as typed values and rejects malformed ones', () => {
    const doc = applyOverrides({ rollout: { solver_group: 8 } }, ['rollout.solver_group=4', 'reward.scheme=shared', 'name="0123"', 'policies.solver.init=null']);
    expect(doc).toEqual({ rollout: { solver_group: 4 }, reward: { scheme: 'shared' }, name: '0123', policies: { solver: { init: null } } });
    expect(() => applyOverrides({}, ['rollout.solver_group'])).toThrow(/key\.path=value/);
    expect(() => applyOverrides({ seed: 1 }, ['seed.x=1'])).toThrow(/not a mapping/);
    expect(() => applyOverrides({}, ['__proto__.polluted=1'])).toThrow(/invalid key path/);
  });

  it('layers preset, file and overrides in that order', () => {
    const file = path.join(tmp.dir, 'layer.yaml');
    fs.writeFileSync(file, 'preset: quick\nseed: 21\nrollout:\n  solver_group: 6\n');
    const { config, preset } = loadRunConfig({ file, overrides: ['rollout.solver_group=5'] });
    expect(preset).toBe('quick');
    expect(config.seed).toBe(21);
    expect(config.rollout.solver_group).toBe(5);
    expect(config.task.family).toBe('sort');
  });

  it('ships valid presets, including quick, marsrl-paper and drmas-paper', () => {
    const names = listPresets().map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['quick', 'marsrl-paper', 'drmas-paper']));
    for (const p of listPresets()) {
      expect(p.description.length, p.name).toBeGreaterThan(20);
      // qwen-lora runs on the user's downloaded Qwen folder, which only they can name (test/config/qwen-lora-preset.test.ts).
      if (p.name === 'qwen-lora') expect(() => loadRunConfig({ preset: p.name })).toThrow(/set policies\.solver\.model\.path .* to your downloaded Qwen folder/);
      else expect(() => loadRunConfig({ preset: p.name }), p.name).not.toThrow();
    }
    expect(() => loadRunConfig({ preset: 'nope' })).toThrow(/unknown preset "nope"; known presets: .*quick/);
  });
});

/** A config.json as a Hugging Face Qwen3 checkpoint has it (only the keys the Studio reads). */
function qwen3ConfigJson(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
    num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16, vocab_size: 500, max_position_embeddings: 96,
    rms_norm_eps: 1e-6, rope_theta: 1000000, rope_scaling: null, tie_word_embeddings: true, hidden_act: 'silu',
    attention_bias: false, use_sliding_window: false, torch_dtype: 'float32', eos_token_id: 3, ...overrides,
  };
}

describe('a policy of the Hugging Face family (issue #13)', () => {
  let folder: string;
  beforeAll(() => {
    folder = path.join(tmp.dir, 'qwen3-tiny');
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(path.join(folder, 'config.json'), JSON.stringify(qwen3ConfigJson()));
  });
  const hf = (model: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    policies: { shared: { model: { kind: 'hf', ...model } } },
    agents: { solver: 'shared', verifier: 'shared', corrector: 'shared' },
    rollout: { max_response_tokens: 32 },
    pipeline: { segment_tokens: 16 },
    ...extra,
  });

  it('reads {kind: hf, path} with its defaults, and a block without kind is still a GPT', () => {
    const config = resolveConfig(hf({ path: folder }));
    expect(config.policies.shared.model).toEqual({ kind: 'hf', path: folder, dtype: 'float32', enable_thinking: false });
    const gpt = resolveConfig({ policies: { solver: { model: { d_model: 32 } } } }).policies.solver.model;
    expect(gpt).toEqual({ kind: 'gpt', d_model: 32, n_layers: 2, n_heads: 4, context: 128, mlp_ratio: 4 });
  });

  it('checks the response budget against the model\'s max_position_embeddings', () => {
    const issue = issuesOf(hf({ path: folder }, { rollout: { max_response_tokens: 96 } })).find((i) => i.path === 'rollout.max_response_tokens');
    expect(issue?.message).toMatch(/policy "shared" \(context 96\); use less than 96/);
    // 95 < 96 fits: the GPT default context (128) is not what is read.
    expect(validateConfig(hf({ path: folder }, { rollout: { max_response_tokens: 95 }, pipeline: { segment_tokens: 16 } })).ok).toBe(true);
  });

  it('reads ~/ in a model path as the home folder', () => {
    const home = path.join(tmp.dir, 'home');
    fs.mkdirSync(path.join(home, 'models'), { recursive: true });
    fs.copyFileSync(path.join(folder, 'config.json'), path.join(home, 'models', 'config.json'));
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      expect(resolveModelFolder('~/models')).toBe(path.join(home, 'models'));
      expect(validateConfig(hf({ path: '~/models' })).ok).toBe(true);
      expect(resolveModelFolder('models')).toBe(path.resolve('models'));
    } finally {
      process.env.HOME = saved;
    }
  });

  it('names policies.<id>.model.path and the fix for a missing folder, a folder without config.json and an unsupported architecture', () => {
    const missing = issuesOf(hf({ path: path.join(tmp.dir, 'nowhere') }));
    expect(missing.find((i) => i.path === 'policies.shared.model.path')?.message).toMatch(/no folder at .*nowhere; give the folder of a downloaded Hugging Face model/);
    const empty = path.join(tmp.dir, 'empty-model');
    fs.mkdirSync(empty, { recursive: true });
    expect(issuesOf(hf({ path: empty })).find((i) => i.path === 'policies.shared.model.path')?.message).toMatch(/has no config\.json/);
    const mixtral = path.join(tmp.dir, 'mixtral');
    fs.mkdirSync(mixtral, { recursive: true });
    fs.writeFileSync(path.join(mixtral, 'config.json'), JSON.stringify(qwen3ConfigJson({ architectures: ['MixtralForCausalLM'], model_type: 'mixtral' })));
    expect(issuesOf(hf({ path: mixtral })).find((i) => i.path === 'policies.shared.model.path')?.message).toMatch(/MixtralForCausalLM is not supported.*use a Llama, Qwen2 or Qwen3 checkpoint/);
  });

  it('reports the issues of the kind given, not every branch of the union', () => {
    const noPath = issuesOf(hf({}));
    expect(noPath.map((i) => i.path)).toEqual(['policies.shared.model.path']);
    const gptKey = issuesOf(hf({ path: folder, d_model: 64 }));
    expect(gptKey.map((i) => i.path)).toEqual(['policies.shared.model.d_model']);
    expect(gptKey[0].message).toMatch(/unknown key; allowed keys here: kind, path, dtype, enable_thinking/);
    const badKind = issuesOf(hf({ kind: 'onnx', path: folder }));
    expect(badKind).toEqual([{ path: 'policies.shared.model.kind', message: 'must be one of "gpt", "hf"', value: 'onnx' }]);
    expect(issuesOf({ policies: { solver: { model: { d_model: 'wide' } } } }).map((i) => i.path)).toEqual(['policies.solver.model.d_model']);
  });

  it('offers the model kind in the form, each kind\'s fields marked with it', () => {
    const fields = configSchemaInfo().fields.filter((f) => f.path.startsWith('policies.*.model.'));
    const byPath = new Map(fields.map((f) => [f.path, f]));
    expect(byPath.get('policies.*.model.kind')).toMatchObject({ kind: 'enum', options: ['gpt', 'hf'], default: 'gpt' });
    expect(byPath.get('policies.*.model.kind')?.whenKind).toBeUndefined();
    expect(byPath.get('policies.*.model.d_model')).toMatchObject({ kind: 'integer', whenKind: 'gpt', default: 64 });
    expect(byPath.get('policies.*.model.path')).toMatchObject({ kind: 'string', whenKind: 'hf' });
    expect(byPath.get('policies.*.model.dtype')).toMatchObject({ kind: 'enum', options: ['float32'], whenKind: 'hf' });
  });
});

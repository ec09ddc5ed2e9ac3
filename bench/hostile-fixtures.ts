/**
 * The hostile files of the suite (hostile.ts, issue #36), made in a sandbox: model folders with
 * hostile configs and chat templates (copies of the shipped tiny-qwen Solver, one thing changed
 * each), task files that are FIFOs, links, huge (sparse) or binary, and configs that name them.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { resourcesDir } from '../src-main/engine/resources';
import { Rng } from '../src-main/engine/util/rng';

/** Templates that never end or never stop growing, as a model folder from the internet may carry. */
export const HOSTILE_TEMPLATES: Record<string, string> = {
  'nested-loop': '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}',
  'huge-range': '{% for i in range(1000000000) %}x{% endfor %}',
  doubling: "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
  'list-growth': '{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [ns.l] %}{% endfor %}',
  'self-call': '{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}',
  'raise-exception': "{{ raise_exception('\\u001b]0;pwned\\u0007 refused by the template') }}",
};

export interface Fixtures {
  models: Record<string, string>;
  tasks: Record<string, string>;
  /** Config files (YAML), by what they hold. */
  configs: Record<string, string>;
  /** A Studio checkpoint folder (hf family) whose manifest claims a million layers. */
  checkpointLayers: string;
  /** A database file of random bytes. */
  corruptDb: string;
  /** A 4 KiB tmpfs to export onto (a disk that fills up), or why there is none (mount refused). */
  tinyDisk: { dir: string } | { skipped: string };
}

/** A 4 KiB tmpfs under `root`, where this process may mount one (root on Linux); unmounted by `release`. */
function tinyDisk(root: string): Fixtures['tinyDisk'] {
  const dir = path.join(root, 'tiny-disk');
  fs.mkdirSync(dir);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4k', 'tmpfs', dir], { stdio: 'ignore' });
    return { dir };
  } catch (error) {
    return { skipped: `the full-disk export needs a small tmpfs, and mount was refused (${(error as Error).message.split('\n')[0]})` };
  }
}

/** Undo what the fixtures mounted. */
export function releaseFixtures(fx: Fixtures): void {
  if ('dir' in fx.tinyDisk) {
    try {
      execFileSync('umount', [fx.tinyDisk.dir], { stdio: 'ignore' });
    } catch {
      // already gone
    }
  }
}

function mkfifo(file: string): void {
  execFileSync('mkfifo', [file]);
}

/** A copy of the shipped tiny-qwen Solver with `edit` applied. */
function modelFolder(root: string, name: string, edit: (dir: string) => void): string {
  const dir = path.join(root, 'models', name);
  fs.cpSync(path.join(resourcesDir(), 'checkpoints', 'tiny-qwen', 'solver'), dir, { recursive: true });
  edit(dir);
  return dir;
}

function editJson(file: string, edit: (json: Record<string, unknown>) => void): void {
  const json = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(json);
  fs.writeFileSync(file, JSON.stringify(json));
}

function hostileModels(root: string, rng: Rng): Record<string, string> {
  const models: Record<string, string> = { good: modelFolder(root, 'good', () => undefined) };
  for (const [name, template] of Object.entries(HOSTILE_TEMPLATES)) {
    models[`template-${name}`] = modelFolder(root, `template-${name}`, (d) => editJson(path.join(d, 'tokenizer_config.json'), (j) => (j.chat_template = template)));
  }
  models['million-layers'] = modelFolder(root, 'million-layers', (d) => editJson(path.join(d, 'config.json'), (j) => (j.num_hidden_layers = 1_000_000)));
  models['vocab-1e12'] = modelFolder(root, 'vocab-1e12', (d) => editJson(path.join(d, 'config.json'), (j) => (j.vocab_size = 1e12)));
  models['fifo-tokenizer'] = modelFolder(root, 'fifo-tokenizer', (d) => {
    fs.rmSync(path.join(d, 'tokenizer.json'));
    mkfifo(path.join(d, 'tokenizer.json'));
  });
  models['fifo-template'] = modelFolder(root, 'fifo-template', (d) => {
    editJson(path.join(d, 'tokenizer_config.json'), (j) => delete j.chat_template);
    mkfifo(path.join(d, 'chat_template.jinja'));
  });
  models['zero-config'] = modelFolder(root, 'zero-config', (d) => {
    fs.rmSync(path.join(d, 'config.json'));
    fs.symlinkSync('/dev/zero', path.join(d, 'config.json'));
  });
  models['sparse-tokenizer'] = modelFolder(root, 'sparse-tokenizer', (d) => fs.truncateSync(path.join(d, 'tokenizer.json'), 600 * 2 ** 20));
  models['binary-config'] = modelFolder(root, 'binary-config', (d) => fs.writeFileSync(path.join(d, 'config.json'), Buffer.from(Array.from({ length: 4096 }, () => rng.int(0, 255)))));
  models['deep-config'] = modelFolder(root, 'deep-config', (d) => fs.writeFileSync(path.join(d, 'config.json'), `${'['.repeat(200_000)}${']'.repeat(200_000)}`));
  models['config-is-folder'] = modelFolder(root, 'config-is-folder', (d) => {
    fs.rmSync(path.join(d, 'config.json'));
    fs.mkdirSync(path.join(d, 'config.json'));
  });
  models['fifo-weights'] = modelFolder(root, 'fifo-weights', (d) => {
    fs.rmSync(path.join(d, 'model.safetensors'));
    mkfifo(path.join(d, 'model.safetensors'));
  });
  return models;
}

function hostileTasks(root: string, rng: Rng): Record<string, string> {
  const dir = path.join(root, 'tasks');
  fs.mkdirSync(dir, { recursive: true });
  const at = (name: string) => path.join(dir, name);
  mkfifo(at('fifo.jsonl'));
  mkfifo(at('fifo-math.jsonl'));
  fs.symlinkSync('/dev/zero', at('zero-link.jsonl'));
  fs.writeFileSync(at('real.jsonl'), Array.from({ length: 40 }, (_, i) => JSON.stringify({ question: `${i} + ${i}`, answer: String(2 * i) })).join('\n'));
  fs.symlinkSync(at('real.jsonl'), at('link-to-real.jsonl'));
  fs.symlinkSync(at('fifo.jsonl'), at('link-to-fifo.jsonl'));
  fs.writeFileSync(at('sparse.jsonl'), '');
  fs.truncateSync(at('sparse.jsonl'), 600 * 2 ** 20);
  fs.writeFileSync(at('binary.jsonl'), Buffer.from(Array.from({ length: 65536 }, () => rng.int(0, 255))));
  fs.mkdirSync(at('folder.jsonl'));
  return {
    fifo: at('fifo.jsonl'),
    fifoMath: at('fifo-math.jsonl'),
    zeroLink: at('zero-link.jsonl'),
    real: at('real.jsonl'),
    linkToReal: at('link-to-real.jsonl'),
    linkToFifo: at('link-to-fifo.jsonl'),
    sparse: at('sparse.jsonl'),
    binary: at('binary.jsonl'),
    folder: at('folder.jsonl'),
  };
}

const CONTROL_STRING = 'pwn\u001b]0;owned\u0007\u001b[2J\u009b31m\u202eevil';

function hostileConfigs(root: string, tasks: Record<string, string>, models: Record<string, string>, trapUrl: string, legitUrl: string): Record<string, string> {
  const dir = path.join(root, 'configs');
  fs.mkdirSync(dir, { recursive: true });
  const write = (name: string, doc: Record<string, unknown>) => {
    const file = path.join(dir, `${name}.yaml`);
    fs.writeFileSync(file, YAML.stringify(doc));
    return file;
  };
  const trapEndpoint = { base_url: `${trapUrl}/v1`, model: 'm', api_key_env: 'MARSRL_HOSTILE_CANARY_KEY', timeout_s: 2 };
  return {
    fifoMath: write('fifo-math', { task: { family: 'math', math_path: tasks.fifoMath } }),
    fifoJsonl: write('fifo-jsonl', { task: { family: 'jsonl', jsonl_path: tasks.fifo } }),
    zeroJsonl: write('zero-jsonl', { task: { family: 'jsonl', jsonl_path: tasks.zeroLink } }),
    sparseJsonl: write('sparse-jsonl', { task: { family: 'jsonl', jsonl_path: tasks.sparse } }),
    episodes: write('episodes', { preset: 'quick', rollout: { problems_per_step: 4096, solver_group: 256 } }),
    millionLayers: write('million-layers', { policies: { solver: { model: { kind: 'hf', path: models['million-layers'] } } } }),
    controlStrings: write('control-strings', { name: CONTROL_STRING, prompts: { solver: { system: CONTROL_STRING } } }),
    trapProbe: write('trap-probe', { endpoints: { trap: trapEndpoint }, policies: { solver: {}, judge: { endpoint: 'trap' } }, agents: { verifier: 'judge', corrector: 'judge' } }),
    // Served by the approved endpoint: the probe, every call, its retries (every third chat
    // request fails) and the background health checks carry the key there, and only there.
    legitSystem: write('legit-system', {
      preset: 'quick',
      eval: { problems: 2, k: 1 },
      system: { mode: 'chain', controls: false },
      endpoints: { legit: { base_url: `${legitUrl}/flaky/v1`, model: 'legit-model', api_key_env: 'MARSRL_HOSTILE_CANARY_KEY', retries: 4, timeout_s: 10, health_check_s: 0.5 } },
      policies: { solver: { endpoint: 'legit' }, verifier: { endpoint: 'legit' }, corrector: { endpoint: 'legit' } },
    }),
    trapSystem: write('trap-system', {
      preset: 'quick',
      eval: { problems: 2, k: 1 },
      system: { mode: 'chain', controls: false },
      endpoints: { trap: trapEndpoint },
      policies: { solver: { endpoint: 'trap' }, verifier: { endpoint: 'trap' }, corrector: { endpoint: 'trap' } },
    }),
  };
}

export function makeFixtures(root: string, trapUrl: string, legitUrl: string, seed: number, opts: { tinyDisk: boolean }): Fixtures {
  const rng = new Rng(seed, 'hostile-fixtures');
  const models = hostileModels(root, rng);
  const tasks = hostileTasks(root, rng);
  const configs = hostileConfigs(root, tasks, models, trapUrl, legitUrl);
  const checkpointLayers = path.join(root, 'models', 'checkpoint-layers');
  fs.mkdirSync(checkpointLayers, { recursive: true });
  const config = JSON.parse(fs.readFileSync(path.join(models.good, 'config.json'), 'utf8')) as Record<string, number>;
  fs.writeFileSync(
    path.join(checkpointLayers, 'checkpoint.json'),
    JSON.stringify({
      format: 'marsrl-checkpoint', version: 1, family: 'hf', step: 1, savedAt: new Date().toISOString(),
      model: {
        base: { path: models.good, configDigest: '0', weightsDigest: '0' },
        config: { architecture: 'Qwen3ForCausalLM', modelType: 'qwen3', hiddenSize: config.hidden_size, intermediateSize: config.intermediate_size, numLayers: 1_000_000, numHeads: config.num_attention_heads, numKvHeads: config.num_key_value_heads, headDim: config.head_dim, vocabSize: config.vocab_size, maxPositions: config.max_position_embeddings, rmsNormEps: 1e-6, ropeTheta: 10000, ropeScaling: null, tieWordEmbeddings: true, attentionBias: false, qkNorm: true, torchDtype: 'float32', bosTokenId: null, eosTokenId: null },
        params: [], numParams: 0, dtype: 'float32', weights: 'weights.safetensors',
      },
      tokenizer: { kind: 'hf', dir: 'tokenizer', prompts: { systemPrompts: {}, enableThinking: false } },
      config: null, optimizer: null, files: {},
    }),
  );
  const corruptDb = path.join(root, 'corrupt.db');
  fs.writeFileSync(corruptDb, Buffer.from(Array.from({ length: 8192 }, () => rng.int(0, 255))));
  return { models, tasks, configs, checkpointLayers, corruptDb, tinyDisk: opts.tinyDisk ? tinyDisk(root) : { skipped: 'the full-disk export runs in the full suite only' } };
}

export { CONTROL_STRING };

/**
 * The tiny-qwen preset (issue #14): it validates as shipped, each role's shipped warm start is a
 * Hugging Face folder that loads (Qwen3 architecture, the Studio's tiny tokenizer with its ChatML
 * template, digests as recorded when pretrain wrote it, under 2 MB), all three from one pretrain
 * (one tokenizer, one architecture), and two RL steps of the preset run through LoRA adapters (one
 * per role, each on its role's folder) on the generated word problems, at smaller rollout sizes;
 * `marsrl serve-model` serves the run's LoRA checkpoints (issue #16) as the run decodes them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRunConfig } from '../../src-main/engine/preflight';
import { resolveModelFolder } from '../../src-main/engine/preflight/model-folder';
import { hfModelIdentity, loadHfModel } from '../../src-main/engine/hf/load';
import { heldHfBaseCount, PEFT_WEIGHTS } from '../../src-main/engine/hf/lora';
import { sample } from '../../src-main/engine/model/sampling';
import { describeCheckpointPolicy, loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer } from '../../src-main/server/openai/server';
import { openSafetensors } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { loadLoraCheckpoint } from '../../src-main/engine/checkpoint/checkpoint';
import { readAnyCheckpointManifest, type HfCheckpointManifest } from '../../src-main/engine/checkpoint/manifest';
import { resourcesDir } from '../../src-main/engine/resources';
import type { Store } from '../../src-main/engine/store';
import { PRETRAIN_INFO_FILE } from '../../src-main/engine/training/pretrain';
import type { TrainOutcome } from '../../src-main/engine/training/trainer';
import { trainedRun } from '../helpers/trained-run';
import { openAiClient } from '../helpers/model-server';

const { config: preset } = loadRunConfig({ preset: 'tiny-qwen' });
const ROLES = ['solver', 'verifier', 'corrector'] as const;
const folderOf = (role: string) => path.join(resourcesDir(), 'checkpoints/tiny-qwen', role);

describe('the tiny-qwen preset as shipped', () => {
  it('validates, with one LoRA policy per role on its role\'s shipped folder and the math generator', () => {
    expect(preset.task.family).toBe('math');
    expect(preset.task.math_path).toBeUndefined();
    for (const role of ROLES) {
      const policy = preset.policies[preset.agents[role]];
      expect(preset.agents[role]).toBe(role);
      expect(policy.model.kind).toBe('hf');
      if (policy.model.kind !== 'hf') return;
      expect(policy.model.lora?.rank).toBeGreaterThan(0);
      // The preset names the folder relative to the shipped resources.
      expect(resolveModelFolder(policy.model.path)).toBe(folderOf(role));
    }
    // The warm start the folders were made with: the Verifier and Corrector from the Solver's weights,
    // the Verifier shown the final answer only, half the Corrector's reports mistaken
    // (resources/checkpoints/README.md).
    expect(preset.pretrain.start_from_solver).toBe(true);
    expect(preset.pretrain.corrector_mistaken_reports).toBe(0.5);
    expect(preset.prompts.verifier.user).toContain('{answer}');
    expect(preset.prompts.verifier.user + preset.prompts.verifier.system).not.toContain('{solution}');
  });

  it.each(ROLES)('ships the %s as a Hugging Face Qwen3 folder under 2 MB whose digests are the ones pretrain recorded', async (role) => {
    await initBackend('wasm');
    const folder = folderOf(role);
    const info = JSON.parse(fs.readFileSync(path.join(folder, PRETRAIN_INFO_FILE), 'utf8')) as { configDigest: string; weightsDigest: string; chosenStep: number; steps: number };
    const identity = hfModelIdentity(folder);
    expect(identity.configDigest).toBe(info.configDigest);
    expect(identity.weightsDigest).toBe(info.weightsDigest);
    expect(info.chosenStep).toBeGreaterThan(0);
    expect(info.chosenStep).toBeLessThanOrEqual(info.steps);
    expect(fs.statSync(path.join(folder, 'model.safetensors')).size).toBeLessThan(2 * 1024 * 1024);
    const json = JSON.parse(fs.readFileSync(path.join(folder, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(json.architectures).toEqual(['Qwen3ForCausalLM']);
    // One pretrain made all three: the same architecture and the same tokenizer as the Solver's.
    expect(fs.readFileSync(path.join(folder, 'config.json'), 'utf8')).toBe(fs.readFileSync(path.join(folderOf('solver'), 'config.json'), 'utf8'));
    expect(fs.readFileSync(path.join(folder, 'tokenizer.json'), 'utf8')).toBe(fs.readFileSync(path.join(folderOf('solver'), 'tokenizer.json'), 'utf8'));
    const { model, tokenizer } = loadHfModel(folder);
    try {
      expect(model.config.qkNorm).toBe(true);
      expect(model.config.vocabSize).toBe(tokenizer.vocabSize);
      const text = tokenizer.renderChat([{ role: 'user', content: 'Mia has 7 apples.' }], { enableThinking: false });
      expect(text).toBe('<|im_start|>user\nMia has 7 apples.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
      expect(tokenizer.decode(tokenizer.encode('7 + 35 = 42\n\\boxed{42}'))).toBe('7 + 35 = 42\n\\boxed{42}');
    } finally {
      model.dispose();
    }
  });
});

describe('two RL steps of the tiny-qwen preset through LoRA', () => {
  let store: Store;
  let runId: number;
  let outcome: TrainOutcome;
  const { config } = loadRunConfig({
    preset: 'tiny-qwen',
    overrides: [
      'optimization.steps=2',
      'optimization.checkpoint_every=1',
      'rollout.problems_per_step=1',
      'rollout.solver_group=2',
      'rollout.select_k=1',
      'rollout.verifier_group=2',
      'rollout.corrector_group=2',
      'rollout.selection=random',
      'eval.every=0',
      'eval.problems=2',
      'eval.k=1',
      'pipeline.mode=sync',
    ],
  });

  const trained = trainedRun('tiny-qwen', () => config, 120_000);
  beforeAll(() => ({ store, runId, outcome } = trained));

  it('finishes, with every role’s turns parsed in the math format and rewarded', () => {
    expect(outcome).toEqual({ status: 'done', step: 2 });
    const turns = store.db
      .prepare(`SELECT t.agent, t.policy_id AS policy, r.value AS reward FROM turns t JOIN episodes e ON e.id = t.episode_id LEFT JOIN rewards r ON r.turn_id = t.id WHERE t.run_id = ? AND e.split = 'train'`)
      .all(runId) as { agent: string; policy: string; reward: number | null }[];
    expect(turns.filter((t) => t.agent === 'solver')).toHaveLength(2 * 2);
    expect(turns.some((t) => t.agent === 'verifier1')).toBe(true);
    for (const t of turns) {
      expect(t.reward).not.toBeNull();
      expect(t.policy).toBe(t.agent.replace(/\d+$/, ''));
    }
    // The run released the shared base when it ended.
    expect(heldHfBaseCount()).toBe(0);
  });

  it('checkpoints each role as LoRA adapters on its shipped folder, trained by its own optimizer', () => {
    for (const id of ROLES) {
      const rows = store.db.prepare('SELECT path FROM checkpoints WHERE run_id = ? AND policy_id = ? ORDER BY step DESC LIMIT 1').all(runId, id) as { path: string }[];
      expect(rows).toHaveLength(1);
      const manifest = readAnyCheckpointManifest(rows[0].path) as HfCheckpointManifest;
      expect(manifest.family).toBe('hf');
      expect(manifest.lora?.base.path).toBe(folderOf(id));
      expect(manifest.lora?.settings.rank).toBe(8);
      const names = [...openSafetensors(path.join(rows[0].path, PEFT_WEIGHTS)).tensors.keys()];
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) expect(name).toMatch(/^base_model\.model\.model\.layers\.\d+\.(self_attn|mlp)\.[a-z_]+\.lora_[AB]\.weight$/);
    }
  });

  it('serves its LoRA checkpoints with marsrl serve-model: base + adapters, answering as the loaded checkpoint decodes', async () => {
    const row = store.db.prepare("SELECT path FROM checkpoints WHERE run_id = ? AND policy_id = 'solver' ORDER BY step DESC LIMIT 1").get(runId) as { path: string };
    const served = loadCheckpointPolicy(row.path);
    const server = await createModelServer({ policies: [served], log: () => {} });
    // Loaded again on its own, as a run resumes it: the reference the server must match.
    const own = loadLoraCheckpoint(row.path);
    const base = loadHfModel(folderOf('solver'));
    try {
      const client = openAiClient(server.baseUrl);
      const messages = [{ role: 'user' as const, content: 'Mia has 7 apples and buys 5 more. How many apples does Mia have now?' }];
      const r = await client.chat.completions.create({ model: 'solver', messages, temperature: 0, max_tokens: 24, logprobs: true, top_logprobs: 3 });
      const prompt = served.tokenizer.chatPrompt(messages);
      expect(r.usage?.prompt_tokens).toBe(prompt.length);
      // Described without weights (beside an engine thread), the checkpoint renders the same prompt.
      const described = describeCheckpointPolicy(row.path);
      expect(described.context).toBe(served.model.context);
      expect(described.tokenizer.chatPrompt(messages)).toEqual(prompt);
      const [greedy] = sample(own.model, [prompt], { maxNewTokens: 24, temperature: 0, stopTokens: [...served.tokenizer.stopTokens] });
      expect(r.usage?.completion_tokens).toBe(greedy.tokens.length);
      expect(r.choices[0].message.content).toBe(served.tokenizer.responseText(greedy.tokens));
      // The first token's three likeliest are the adapted model's log-probabilities, not the base's.
      const top3 = (logits: Float32Array) => {
        const max = Math.max(...logits);
        const lse = max + Math.log(logits.reduce((a, x) => a + Math.exp(x - max), 0));
        return [...logits].map((x) => x - lse).sort((a, b) => b - a).slice(0, 3);
      };
      const adapted = top3(own.model.lastLogits([prompt], [0]));
      const frozen = top3(base.model.lastLogits([prompt], [0]));
      const reported = r.choices[0].logprobs!.content![0].top_logprobs.map((t) => t.logprob);
      expect(reported).toHaveLength(3);
      reported.forEach((lp, i) => expect(Math.abs(lp - adapted[i])).toBeLessThan(1e-4));
      expect(Math.max(...adapted.map((lp, i) => Math.abs(lp - frozen[i])))).toBeGreaterThan(1e-3);
    } finally {
      await server.close();
      served.model.dispose();
      own.model.dispose();
      base.model.dispose();
    }
  });
});

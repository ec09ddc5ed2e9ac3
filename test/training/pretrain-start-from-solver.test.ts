/**
 * `pretrain.start_from_solver` (issue #14): `marsrl pretrain` starts the Verifier's and
 * Corrector's policies from the Solver's weights after its last step. With a learning rate too
 * small to move a float32 weight, what each policy writes is where it started: the Solver's
 * weights with the setting, its own fresh ones (seeded by its id) without it. A Verifier whose
 * sizes differ from the Solver's is refused, naming the setting and the fix.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { marsrl } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-pretrain-from-solver-');
afterAll(() => tmp.cleanup());

const policy = (dModel: number) => `{ model: { d_model: ${dModel}, n_layers: 1, n_heads: 2, context: 128, mlp_ratio: 2 } }`;
function writeConfig(name: string, verifierWidth = 16): string {
  const file = path.join(tmp.dir, `${name}.yaml`);
  fs.writeFileSync(
    file,
    [
      'seed: 3',
      'task: { family: sort, difficulty: 2, train_size: 40, test_size: 20 }',
      `policies: { solver: ${policy(16)}, verifier: ${policy(verifierWidth)}, corrector: ${policy(16)} }`,
      'rollout: { max_response_tokens: 48 }',
      // 1e-12: an AdamW step moves a weight by about the learning rate, far below float32's resolution at these weights' sizes.
      'pretrain: { steps: 2, batch_size: 4, warmup_steps: 0, lr: 1.0e-12 }',
      'eval: { problems: 2 }',
      '',
    ].join('\n'),
  );
  return file;
}

function weights(dir: string): Float32Array {
  const bytes = fs.readFileSync(path.join(dir, 'weights.bin'));
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}
function maxDifference(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let most = 0;
  for (let i = 0; i < a.length; i++) most = Math.max(most, Math.abs(a[i] - b[i]));
  return most;
}

describe('marsrl pretrain with pretrain.start_from_solver', () => {
  it('starts the Verifier and Corrector from the Solver’s weights, and from their own without it', () => {
    const config = writeConfig('same-sizes');
    const runs: Record<string, { verifier: number; corrector: number }> = {};
    for (const setting of ['true', 'false']) {
      const out = path.join(tmp.dir, `out-${setting}`);
      const result = marsrl(['pretrain', '--config', config, '--out', out, '--set', `pretrain.start_from_solver=${setting}`, '--eval-every', '2']);
      expect(result.code, result.stderr).toBe(0);
      const solver = weights(path.join(out, 'solver'));
      runs[setting] = { verifier: maxDifference(weights(path.join(out, 'verifier')), solver), corrector: maxDifference(weights(path.join(out, 'corrector')), solver) };
    }
    expect(runs.true.verifier).toBeLessThan(1e-6);
    expect(runs.true.corrector).toBeLessThan(1e-6);
    // Fresh weights of another seed differ by about the initialisation's scale.
    expect(runs.false.verifier).toBeGreaterThan(1e-3);
    expect(runs.false.corrector).toBeGreaterThan(1e-3);
  }, 120_000);

  it('refuses a Verifier whose model is not the Solver’s size, naming the setting, before any training', () => {
    const out = path.join(tmp.dir, 'out-mismatch');
    const result = marsrl(['pretrain', '--config', writeConfig('other-width', 32), '--out', out, '--set', 'pretrain.start_from_solver=true', '--eval-every', '2']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/pretrain\.start_from_solver: policy verifier's model does not have the Solver's \(solver\) sizes/);
    expect(result.stderr).toMatch(/set pretrain\.start_from_solver to false/);
    expect(fs.existsSync(path.join(out, 'solver'))).toBe(false);
  }, 120_000);
});

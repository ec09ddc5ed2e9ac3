/**
 * `marsrl pretrain` on a config with served policies (issue #16: "some agents served and
 * frozen"). A served policy has no local weights: pretrain warm-starts the others and says it
 * skipped it. A config it cannot warm-start (every policy served, or a served Solver whose samples
 * the local Verifier's warm start would need) is refused before anything is loaded or written,
 * naming the policy's endpoint field and the fix. The endpoint's port is closed: pretrain must
 * never call it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { marsrl } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-pretrain-served-');
afterAll(() => tmp.cleanup());

const local = '{ model: { d_model: 16, n_layers: 1, n_heads: 2, context: 128, mlp_ratio: 2 } }';
const served = '{ endpoint: big }';
function writeConfig(name: string, kinds: { solver: string; verifier: string; corrector: string }): string {
  const file = path.join(tmp.dir, `${name}.yaml`);
  fs.writeFileSync(
    file,
    [
      'seed: 5',
      'task: { family: sort, difficulty: 2, train_size: 40, test_size: 20 }',
      // Port 9 (discard) is closed here: a call to it would fail the run.
      'endpoints: { big: { base_url: "http://127.0.0.1:9/v1", model: big-verifier } }',
      `policies: { solver: ${kinds.solver}, verifier: ${kinds.verifier}, corrector: ${kinds.corrector} }`,
      'rollout: { max_response_tokens: 48 }',
      'pretrain: { steps: 2, batch_size: 4, warmup_steps: 0 }',
      'eval: { problems: 2 }',
      '',
    ].join('\n'),
  );
  return file;
}

describe('marsrl pretrain with served policies', () => {
  it('warm-starts the local policies and skips a served Verifier, saying so', () => {
    const out = path.join(tmp.dir, 'out-served-verifier');
    const result = marsrl(['pretrain', '--config', writeConfig('served-verifier', { solver: local, verifier: served, corrector: local }), '--out', out, '--eval-every', '2']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout + result.stderr).toContain('verifier is served by endpoint big (verifier): inference only, not warm-started');
    expect(fs.readdirSync(out).sort()).toEqual(['corrector', 'solver']);
  });

  it('refuses a served Solver when another role would need its samples, before writing anything', () => {
    const out = path.join(tmp.dir, 'out-served-solver');
    const result = marsrl(['pretrain', '--config', writeConfig('served-solver', { solver: served, verifier: local, corrector: local }), '--out', out]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('policies.solver.endpoint: the Solver is served (inference only), but pretrain warm-starts verifier, corrector');
    expect(result.stderr).toContain('make the Solver');
    expect(fs.existsSync(out)).toBe(false);
  });

  it('refuses a config whose every policy is served', () => {
    const out = path.join(tmp.dir, 'out-all-served');
    const result = marsrl(['pretrain', '--config', writeConfig('all-served', { solver: served, verifier: served, corrector: served }), '--out', out]);
    expect(result.code).not.toBe(0);
    for (const id of ['solver', 'verifier', 'corrector']) expect(result.stderr).toContain(`policies.${id}.endpoint: every policy of this config is served`);
    expect(fs.existsSync(out)).toBe(false);
  });
});

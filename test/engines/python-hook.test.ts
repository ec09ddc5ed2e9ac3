/**
 * The Studio's own Python shipped to the engines (issue 38): the DrMAS hook and the veRL reward
 * function compile, and their behaviour is checked with plain python3 against stand-ins of the
 * DrMAS modules the hook patches (test/engines/python/hook_checks.py; CI installs python3 with
 * numpy, .ci/run). DrMAS itself cannot be installed here: what a real run needs is in the report.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resourcesDir } from '../../src-main/engine/resources';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-engine-python-');
afterAll(tmp.cleanup);

const FILES = ['engines/drmas/marsrl_drmas_hook.py', 'engines/verl/marsrl_reward.py', 'engines/probe.py'];

describe('the Studio\'s Python for the engines', () => {
  it('compiles (Python 3 syntax, no bytecode written into resources/)', () => {
    for (const file of FILES) {
      const full = path.join(resourcesDir(), file);
      const r = spawnSync('python3', ['-B', '-c', 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")', full], { encoding: 'utf8' });
      expect(r.status, `${file}: ${r.stderr}`).toBe(0);
    }
  });

  it('adds agent ids and advantages to dumps, runs MarsRL\'s chain as the math orchestra, and scores answers', () => {
    const out = execFileSync('python3', ['-B', path.resolve('test/engines/python/hook_checks.py'), resourcesDir(), tmp.dir], { encoding: 'utf8', env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ pure: 'ok', dump: 'ok', orchestra: 'ok', reward: 'ok' });
  });
});

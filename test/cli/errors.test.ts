/**
 * Issue 18, "The CLI and errors", as a user meets them: the exit code, the message and that nothing
 * was created or overwritten. `marsrl` runs as a child process where the process matters (MARSRL_DB
 * from its environment, a relative path from its working folder, `run`); the other refusals go
 * through the CLI's main in this process, the same code and output.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src-main/engine/preflight';
import { resolveLaunchConfig } from '../../src-main/runner/manager';
import { marsrl, marsrlMain } from '../helpers/cli';
import { seededDatabase } from '../helpers/runs-db';

const db = seededDatabase('two.db', (store) => {
  for (const seed of [1, 2]) {
    const id = store.runs.create({ name: `run-s${seed}`, preset: 'quick', config: resolveConfig({ seed }) as unknown as Record<string, unknown>, codeVersion: 'test', seed });
    const writer = store.writer({ flushIntervalMs: 0 });
    writer.metric({ runId: id, step: 0, wallTime: 0, key: 'eval/system/accuracy', value: 0.5 + seed / 10 });
    writer.close();
  }
});

describe('read-only commands never create a database (issue 18)', () => {
  it('refuse a --db path that does not exist, naming it, and create neither it nor its folders', async () => {
    const missing = path.join(db.dir, 'typo', 'nested', 'studio.db');
    for (const args of [['runs'], ['show', '1'], ['compare', '1', '2'], ['export', '1', '--format', 'sft', '--out', path.join(db.dir, 'never.jsonl')]]) {
      const result = await marsrlMain([...args, '--db', missing]);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr).toContain(`No database at ${missing}`);
      expect(result.stdout).not.toContain('No runs');
    }
    // MARSRL_DB is a path the user typed too.
    const viaEnv = marsrl(['runs'], { MARSRL_DB: missing });
    expect(viaEnv.code).toBe(1);
    expect(viaEnv.stderr).toContain(`No database at ${missing}`);
    expect(fs.existsSync(path.join(db.dir, 'typo'))).toBe(false);
    expect(fs.existsSync(path.join(db.dir, 'never.jsonl'))).toBe(false);
  });

  it('leave a 0-byte file as it is instead of turning it into a database', async () => {
    const empty = path.join(db.dir, 'empty.db');
    fs.writeFileSync(empty, '');
    const result = await marsrlMain(['runs', '--db', empty]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/No database at .*empty\.db: the file is empty \(0 bytes\)/);
    expect(fs.statSync(empty).size).toBe(0);
    expect(fs.existsSync(`${empty}-wal`)).toBe(false);
  });
});

describe('flags and arguments get the allowed range, not the parser’s wording (issue 18)', () => {
  it('show -1 and show 0 say what a RUN is; runs --limit -5 names the range', async () => {
    for (const ref of ['-1', '0']) {
      const show = await marsrlMain(['show', ref, '--db', db.path]);
      expect(show.code).toBe(2);
      expect(show.stderr).toContain(`RUN must be a run id (a whole number from 1) or a run name (got "${ref}")`);
      expect(show.stderr).not.toMatch(/Unknown option|positional argument/);
    }
    const limit = await marsrlMain(['runs', '--limit', '-5', '--db', db.path]);
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit must be an integer from 1 to 500 (got "-5")');
    expect(limit.stderr).not.toMatch(/ambiguous/);
  });

  it('compare refuses an unknown --group-by path and compares a run named twice once', async () => {
    const bad = await marsrlMain(['compare', '1', '2', '--group-by', 'nope.path', '--db', db.path]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/group-by key "nope\.path" is not a config path of the compared runs \(config sections: .*reward.*\)/);
    const near = await marsrlMain(['compare', '1', '2', '--group-by', 'reward.schem', '--db', db.path]);
    expect(near.code).toBe(2);
    expect(near.stderr).toContain('paths near it: reward.scheme');
    const twice = await marsrlMain(['compare', '1', '1', '--json', '--db', db.path]);
    expect(twice.code).toBe(0);
    expect(JSON.parse(twice.stdout).runs.map((r: { runId: number }) => r.runId)).toEqual([1]);
    expect(twice.stderr).toContain('1 run was named more than once; each run is compared once');
    const good = await marsrlMain(['compare', '1', '2', '--group-by', 'seed', '--json', '--db', db.path]);
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout).groups).toHaveLength(2);
  });

  it('export --jsonl --out e.parquet refuses the mismatched name and writes nothing', async () => {
    const out = path.join(db.dir, 'e.parquet');
    const result = await marsrlMain(['export', '1', '--format', 'trajectories', '--jsonl', '--out', out, '--db', db.path]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('out: e.parquet names a parquet file but the container is jsonl; write to e.jsonl or choose parquet');
    expect(fs.existsSync(out)).toBe(false);
  });
});

describe('configs are checked whole before a run exists (issue 18)', () => {
  it('a jsonl task whose file is missing or malformed fails validation; run creates no database', () => {
    const config = path.join(db.dir, 'jsonl.yaml');
    fs.writeFileSync(config, 'task:\n  family: jsonl\n  jsonl_path: missing.jsonl\n');
    const validate = marsrl(['config', 'validate', config], {}, db.dir);
    expect(validate.code).toBe(2);
    expect(validate.stderr).toContain(`task.jsonl_path: no file at ${path.join(db.dir, 'missing.jsonl')}`);
    const runDb = path.join(db.dir, 'run.db');
    const run = marsrl(['run', '--config', config, '--db', runDb], {}, db.dir);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('task.jsonl_path: no file at');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(fs.existsSync(runDb)).toBe(false);

    fs.writeFileSync(path.join(db.dir, 'bad.jsonl'), '{"question": "1+1", "answer": 2}\nnot json\n');
    fs.writeFileSync(config, 'task:\n  family: jsonl\n  jsonl_path: bad.jsonl\n');
    const malformed = marsrl(['config', 'validate', config], {}, db.dir);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/task\.jsonl_path: .*bad\.jsonl: 1 bad line:\s+line 2: not valid JSON/);
  });

  it('the run launcher (the app and marsrl serve) refuses the missing file too, and pins a good one to an absolute path', () => {
    expect(() => resolveLaunchConfig({ config: { task: { family: 'jsonl', jsonl_path: path.join(db.dir, 'gone.jsonl') } } })).toThrow(/task\.jsonl_path: no file at/);
    const good = path.join(db.dir, 'good.jsonl');
    fs.writeFileSync(good, '{"question": "2+2", "answer": 4}\n{"question": "3+3", "answer": 6}\n');
    const cwd = process.cwd();
    process.chdir(db.dir);
    try {
      expect(resolveLaunchConfig({ config: { task: { family: 'jsonl', jsonl_path: 'good.jsonl' } } }).config.task.jsonl_path).toBe(good);
    } finally {
      process.chdir(cwd);
    }
  });

  it('reports cross-field rules in the same pass as single-field errors', async () => {
    const config = path.join(db.dir, 'many.yaml');
    fs.writeFileSync(config, 'rollout:\n  temperature: -1\n  solver_group: 4\n  select_k: 9\ntask:\n  test_size: 50\neval:\n  problems: 500\n');
    const result = await marsrlMain(['config', 'validate', config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('3 problems');
    expect(result.stderr).toMatch(/rollout\.temperature: must be greater than 0/);
    expect(result.stderr).toContain('rollout.select_k: select_k (9) exceeds solver_group (4)');
    expect(result.stderr).toContain('eval.problems: eval.problems (500) exceeds task.test_size (50)');
  });
});

/**
 * Config validation of the math family and the prompt templates (issue #14): a bad problem file or
 * a template naming an unknown variable is refused before a run exists, with the other field
 * errors of the same document, through the schema and through `marsrl config validate`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROMPTS } from '../../src-main/engine/agents/prompts';
import { ConfigError } from '../../src-main/engine/config/load';
import { resolveConfig, validateConfig } from '../../src-main/engine/preflight';
import { configSchemaInfo } from '../../src-main/engine/config/fields';
import { marsrl, marsrlMain } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-math-config-');
afterAll(() => tmp.cleanup());

function issuesOf(input: unknown): { path: string; message: string }[] {
  const result = validateConfig(input);
  if (result.ok) return [];
  return result.issues.map(({ path: p, message }) => ({ path: p, message }));
}

const goodJsonl = path.join(tmp.dir, 'gsm8k.jsonl');
fs.writeFileSync(goodJsonl, `${JSON.stringify({ question: 'Natalia sold 48 clips …', answer: 'She sold 72.\n#### 72' })}\n`);
const chatParquet = path.join(tmp.dir, 'chat.parquet');
fs.writeFileSync(
  chatParquet,
  Buffer.from(
    parquetWriteBuffer({
      columnData: [
        { name: 'prompt', data: ['hi'], type: 'STRING' },
        { name: 'completion', data: ['there'], type: 'STRING' },
      ],
    }),
  ),
);

describe('math config', () => {
  it('accepts the shipped generator and fills the default prompts', () => {
    const config = resolveConfig({ task: { family: 'math', difficulty: 1, math_generator: { steps: 2, operations: '+-' } } });
    expect(config.task.family).toBe('math');
    expect(config.task.math_generator).toEqual({ steps: 2, operations: '+-' });
    expect(config.prompts.solver).toEqual(DEFAULT_PROMPTS.solver);
    expect(config.prompts.verifier.user).toBe(DEFAULT_PROMPTS.verifier.user);
  });

  it('accepts a readable JSONL file', () => {
    expect(issuesOf({ task: { family: 'math', math_path: goodJsonl } })).toEqual([]);
  });

  it('refuses a missing file and a Parquet file without question/answer columns, naming the columns', () => {
    expect(issuesOf({ task: { family: 'math', math_path: path.join(tmp.dir, 'absent.parquet') } })).toEqual([
      { path: 'task.math_path', message: `${path.join(tmp.dir, 'absent.parquet')}: no such file` },
    ]);
    const [issue] = issuesOf({ task: { family: 'math', math_path: chatParquet } });
    expect(issue.path).toBe('task.math_path');
    expect(issue.message).toMatch(/no question column \(one of question, problem, query\) and no answer column \(one of answer, ans_box\); the file's columns are "prompt", "completion"/);
  });

  it('does not read math_path for another family', () => {
    expect(issuesOf({ task: { family: 'sort', math_path: path.join(tmp.dir, 'absent.jsonl') } })).toEqual([]);
  });

  it('refuses a template with an unknown variable, naming the field and the known variables', () => {
    expect(issuesOf({ prompts: { verifier: { user: 'Check {solution} of {problem}' } } })).toEqual([
      {
        path: 'prompts.verifier.user',
        message: 'unknown template variable {problem}; the verifier knows {question}, {solution}, {answer} (write {{ and }} for literal braces)',
      },
    ]);
    expect(issuesOf({ prompts: { solver: { user: '  ' } } })).toEqual([{ path: 'prompts.solver.user', message: 'the user message cannot be empty' }]);
    expect(issuesOf({ prompts: { solver: { tone: 'kind' } } })[0].path).toBe('prompts.solver.tone');
  });

  it('refuses a mistaken-report share outside 0…1, naming the field', () => {
    const issues = issuesOf({ pretrain: { corrector_mistaken_reports: 1.5 } });
    expect(issues.map((i) => i.path)).toEqual(['pretrain.corrector_mistaken_reports']);
    expect(issues[0].message).toMatch(/1/);
    expect(issuesOf({ pretrain: { corrector_mistaken_reports: 0.5 } })).toEqual([]);
  });

  it('reports file, template and other field errors in one pass', () => {
    const paths = issuesOf({
      rollout: { solver_group: 0 },
      task: { family: 'math', math_path: chatParquet },
      prompts: { corrector: { system: 'Fix {answer}' } },
    }).map((i) => i.path);
    expect(paths.sort()).toEqual(['prompts.corrector.system', 'rollout.solver_group', 'task.math_path']);
    expect(() => resolveConfig({ task: { family: 'math', math_path: chatParquet } })).toThrow(ConfigError);
  });

  it('puts the prompts in the new-run form, in their own group', () => {
    const info = configSchemaInfo();
    const field = info.fields.find((f) => f.path === 'prompts.verifier.system');
    expect(field).toMatchObject({ group: 'prompts', kind: 'string', default: DEFAULT_PROMPTS.verifier.system });
    expect(info.fields.find((f) => f.path === 'task.math_path')).toMatchObject({ group: 'task', optional: true });
    expect(info.groups.map((g) => g.id)).toContain('prompts');
  });
});

describe('marsrl config validate (the good file as a child process, the bad one in process)', () => {
  it('accepts a math config and reports a bad one with every field path', async () => {
    const good = path.join(tmp.dir, 'math.yaml');
    fs.writeFileSync(good, `task:\n  family: math\n  math_path: ${JSON.stringify(goodJsonl)}\nprompts:\n  solver:\n    system: ""\n    user: "Q: {question}"\n`);
    const ok = marsrl(['config', 'validate', good]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/valid \(seed 1, task math/);

    const bad = path.join(tmp.dir, 'bad-math.yaml');
    fs.writeFileSync(bad, `task:\n  family: math\n  math_path: ${JSON.stringify(chatParquet)}\nprompts:\n  corrector:\n    user: "{question} {solution} {bug_report}"\n`);
    const result = await marsrlMain(['config', 'validate', bad]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/task\.math_path: .*chat\.parquet: no question column .*"prompt", "completion"/);
    expect(result.stderr).toMatch(/prompts\.corrector\.user: unknown template variable \{bug_report\}; the corrector knows \{question\}, \{solution\}, \{report\}/);
  });
});

/**
 * Files a config, a model folder or a request names are read only when they are regular files
 * of bounded size (issue #36). A FIFO used to freeze the process on open; these tests would hang
 * (and time out) if any of these reads blocked.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConfigFile } from '../../src-main/engine/config/load';
import { taskFileIssues, resolveConfig } from '../../src-main/engine/preflight';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { checkMathFile, readMathFile } from '../../src-main/engine/tasks/math-data';
import { getTaskFamily } from '../../src-main/engine/tasks/registry';
import { FileRefusedError, openRegularFile, readRegularFile, readTextFile } from '../../src-main/engine/util/bounded-read';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
const at = (name: string) => path.join(tmp.dir, name);

beforeAll(() => {
  tmp = tempDir();
  execFileSync('mkfifo', [at('fifo.jsonl')]);
  fs.symlinkSync(at('fifo.jsonl'), at('link-to-fifo.jsonl'));
  fs.symlinkSync('/dev/zero', at('zero.jsonl'));
  fs.writeFileSync(at('real.jsonl'), '{"question": "1+1", "answer": "2"}\n{"question": "2+3", "answer": "5"}\n');
  fs.symlinkSync(at('real.jsonl'), at('link-to-real.jsonl'));
  fs.writeFileSync(at('sparse.jsonl'), '');
  fs.truncateSync(at('sparse.jsonl'), 600 * 2 ** 20);
  fs.mkdirSync(at('folder.jsonl'));
});
afterAll(() => tmp.cleanup());

describe('openRegularFile / readRegularFile', () => {
  it('refuse a FIFO, a link to one, a character device, a folder and a file over the limit, naming what each is', () => {
    const refusal = (file: string, maxBytes = 2 ** 20) => {
      try {
        readRegularFile(file, { maxBytes, what: 'task file' });
        return null;
      } catch (error) {
        expect(error).toBeInstanceOf(FileRefusedError);
        return (error as FileRefusedError).message;
      }
    };
    expect(refusal(at('fifo.jsonl'))).toBe(`${at('fifo.jsonl')}: is a named pipe (FIFO), not a regular file; the task file must be a regular file (reading it could block or never end)`);
    expect(refusal(at('link-to-fifo.jsonl'))).toMatch(/named pipe/);
    expect(refusal(at('zero.jsonl'))).toMatch(/is a character device/);
    expect(refusal(at('folder.jsonl'))).toMatch(/is a folder, not a file/);
    expect(refusal(at('sparse.jsonl'))).toMatch(/is 600\.0 MiB, over the 1\.0 MiB a task file may have/);
    expect(refusal(at('missing.jsonl'))).toMatch(/no such file/);
    // A link to a regular file is followed: a dataset may be linked to where it lives.
    expect(readTextFile(at('link-to-real.jsonl'))).toBe(fs.readFileSync(at('real.jsonl'), 'utf8'));
    const { fd, size } = openRegularFile(at('real.jsonl'), { maxBytes: 1024 });
    fs.closeSync(fd);
    expect(size).toBe(fs.statSync(at('real.jsonl')).size);
  });
});

describe('the readers that take a path from a config, a folder or a request', () => {
  it('task.math_path and task.jsonl_path: a FIFO, /dev/zero or a 600 MiB file are refused at validation, naming the field', () => {
    expect(checkMathFile(at('fifo.jsonl'))).toMatch(/named pipe/);
    expect(() => readMathFile(at('zero.jsonl'))).toThrow(/character device/);
    const issues = (file: string) => taskFileIssues(resolveConfig({ task: { family: 'jsonl', jsonl_path: file } }));
    for (const [file, why] of [['fifo.jsonl', /named pipe/], ['zero.jsonl', /character device/], ['sparse.jsonl', /600\.0 MiB, over the 512\.0 MiB/]] as const) {
      const [issue] = issues(at(file));
      expect(issue.path).toBe('task.jsonl_path');
      expect(issue.message).toMatch(why);
    }
    expect(issues(at('link-to-real.jsonl'))).toEqual([]);
    expect(() => getTaskFamily('jsonl', { path: at('fifo.jsonl') })).toThrow(/named pipe.*JSONL file/);
    const math = () => resolveConfig({ task: { family: 'math', math_path: at('fifo.jsonl') } });
    expect(math).toThrow(/task\.math_path: .*named pipe/);
  });

  it('a run config file, a tokenizer.json and a chat_template.jinja that are FIFOs are refused by name', () => {
    expect(() => readConfigFile(at('fifo.jsonl'))).toThrow(/cannot read config file: is a named pipe/);
    const folder = at('model');
    fs.cpSync(path.join(import.meta.dirname, '..', '..', 'resources', 'checkpoints', 'tiny-qwen', 'solver'), folder, { recursive: true });
    fs.rmSync(path.join(folder, 'tokenizer.json'));
    execFileSync('mkfifo', [path.join(folder, 'tokenizer.json')]);
    expect(() => HfTokenizer.fromFolder(folder)).toThrow(/tokenizer\.json: is a named pipe \(FIFO\)/);
  });
});

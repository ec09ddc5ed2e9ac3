/**
 * Terminal output is inert (issue #36): a run named with control sequences (retitle the window,
 * clear the screen, C1 CSI, a bidi override) is shown escaped by every `marsrl` command, as text
 * equal in value to what is stored.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src-main/cli/main';
import { table } from '../../src-main/cli/format';
import { openStore } from '../../src-main/engine/store';
import { inertJson, inertLine, inertText } from '../../src-main/engine/util/inert';
import { tempDir } from '../helpers/tmp';

const EVIL = 'run\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eevil\u0008\r';

/** Any control a terminal would act on: C0 but newline and tab, DEL, C1, the bidi controls. */
function rawControls(text: string): string[] {
  return [...text].filter((c) => {
    const code = c.charCodeAt(0);
    return (code < 0x20 && c !== '\n' && c !== '\t') || (code >= 0x7f && code <= 0x9f) || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069) || code === 0x200e || code === 0x200f || code === 0x061c;
  });
}

describe('inert text', () => {
  it('escapes every control (text keeps newlines and tabs; a line escapes them too), and JSON stays equal in value', () => {
    expect(inertText(`${EVIL}\n\tok`)).toBe('run\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil\\x08\\r\n\tok');
    expect(inertLine(`a\nb\tc`)).toBe('a\\nb\\tc');
    expect(inertText('plain ascii, 中文, 🙂')).toBe('plain ascii, 中文, 🙂');
    const json = inertJson(JSON.stringify({ name: EVIL }, null, 2));
    expect(rawControls(json)).toEqual([]);
    expect((JSON.parse(json) as { name: string }).name).toBe(EVIL);
    expect(rawControls(table(['name'], [[EVIL], ['two\nlines']]))).toEqual([]);
    expect(table(['name'], [['two\nlines']]).split('\n')).toHaveLength(3);
  });
});

describe('marsrl commands print stored names escaped', () => {
  let tmp: ReturnType<typeof tempDir>;
  let db: string;
  let runId: number;
  beforeAll(() => {
    tmp = tempDir();
    db = path.join(tmp.dir, 'names.db');
    const store = openStore(db);
    runId = store.runs.create({ name: EVIL, config: { seed: 1 }, codeVersion: 'test', seed: 1, tags: [EVIL], notes: EVIL });
    store.events.log(runId, 'error', 'note', `message ${EVIL}`, null);
    store.close();
  });
  afterAll(() => tmp.cleanup());

  it.each([['runs'], ['show', 'ID']])('marsrl %s', async (...args) => {
    const lines: string[] = [];
    const code = await main([...args.map((a) => (a === 'ID' ? String(runId) : a)), '--db', db], { env: {}, out: (t) => lines.push(t), err: (t) => lines.push(t) });
    const out = lines.join('\n');
    expect(code).toBe(0);
    expect(out).toContain('run\\x1b]0;pwned\\x07');
    expect(rawControls(out)).toEqual([]);
  });
});

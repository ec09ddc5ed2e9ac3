/**
 * The slow-first order of a fresh clone (test/sequencer.ts) only helps while its names are real
 * files: a renamed or deleted file would silently drop out and could start last again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SLOW_FILES } from '../sequencer';
import { REPO_ROOT } from '../helpers/cli';

describe('test/sequencer.ts', () => {
  it('names only test files that exist, each once', () => {
    const missing = SLOW_FILES.filter((f) => !fs.existsSync(path.join(REPO_ROOT, f)) || !f.endsWith('.test.ts'));
    expect(missing).toEqual([]);
    expect(new Set(SLOW_FILES).size).toBe(SLOW_FILES.length);
  });
});

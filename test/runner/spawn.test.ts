import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { workerEntry, workerExecArgv } from '../../src-main/runner/spawn';

describe('forking a run worker', () => {
  it('loads TypeScript workers through tsx named by its resolved file, so marsrl runs from any folder', () => {
    const argv = workerExecArgv(workerEntry());
    expect(argv[0]).toBe('--import');
    expect(argv[1]).toMatch(/^file:\/\//);
    expect(fs.existsSync(fileURLToPath(argv[1]))).toBe(true);
  });

  it('starts a bundled worker with no loader', () => {
    expect(workerExecArgv('/app/out/main/worker.js')).toEqual([]);
  });
});

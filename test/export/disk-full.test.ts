/**
 * A disk that fills up during an export (issue #36): the message says the export is redone from
 * the start (an export is written to a temporary file and published whole), never to resume
 * (that is a run's word), and nothing is left behind. The disk is filled by making the export's
 * writes fail with ENOSPC, as a full disk makes them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ExportError, runExport } from '../../src-main/engine/export';
import { rejection } from '../helpers/errors';
import { exportFixture } from '../helpers/seed';

const fx = exportFixture('marsrl-export-full-');

describe('an export on a full disk', () => {
  it.each(['jsonl', 'parquet'] as const)('%s: a clear error on out saying to run it again, nothing left behind', async (container) => {
    const outDir = path.join(fx.dir, container);
    fs.mkdirSync(outDir);
    const write = fs.writeSync;
    let writes = 0;
    const spy = vi.spyOn(fs, 'writeSync').mockImplementation(((...args: Parameters<typeof fs.writeSync>) => {
      // The first write of the data lands, the next finds the disk full.
      if (++writes > 1) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
      return (write as (...a: unknown[]) => number)(...args);
    }) as typeof fs.writeSync);
    const caught = await rejection(() => runExport(fx.store, { runs: ['alpha'], format: 'trajectories', container, out: path.join(outDir, `data.${container}`), rowGroupRows: 16 }));
    spy.mockRestore();
    expect(writes).toBeGreaterThan(1);
    expect(caught).toBeInstanceOf(ExportError);
    const error = caught as ExportError;
    expect(error.code).toBe('disk_full');
    expect(error.field).toBe('out');
    expect(error.message).toMatch(/^out: the disk filled up while .* was being written \(ENOSPC: no space left on device, write\); the partial file was removed and nothing else changed: free some space, then run the export again \(an export is redone from the start, not resumed\)$/);
    expect(error.message).not.toMatch(/marsrl resume/);
    expect(fs.readdirSync(outDir)).toEqual([]);
  });
});

/**
 * Over the HTTP API the StudioApi writes only inside the Studio's folders (issue #36): the data
 * folder (exports/ is in it) and the served database's folder. `../`, an absolute path elsewhere
 * and a link pointing out are refused on the field; the desktop app and the CLI write where
 * their user says.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStudioService } from '../../src-main/api/service';
import { StudioError } from '#shared/errors';
import { confinedOutput, writableRoots } from '../../src-main/api/write-paths';
import { openStore, type Store } from '../../src-main/engine/store';
import { tempDir } from '../helpers/tmp';
import { useStudioHome } from '../helpers/env';

let tmp: ReturnType<typeof tempDir>;
let outside: ReturnType<typeof tempDir>;
let store: Store;
let restoreHome: () => void;
let roots: string[];
const dbPath = () => path.join(tmp.dir, 'db', 'studio.db');

beforeAll(() => {
  tmp = tempDir();
  outside = tempDir();
  restoreHome = useStudioHome(path.join(tmp.dir, 'home'));
  fs.mkdirSync(path.join(tmp.dir, 'home', 'exports'), { recursive: true });
  fs.symlinkSync(outside.dir, path.join(tmp.dir, 'home', 'exports', 'link-out'));
  store = openStore(dbPath());
  store.runs.create({ name: 'r', config: { seed: 1 }, codeVersion: 'test', seed: 1, status: 'done' });
  roots = writableRoots(dbPath());
});
afterAll(() => {
  store.close();
  restoreHome();
  tmp.cleanup();
  outside.cleanup();
});

describe('confinedOutput', () => {
  it('puts a relative path under exports/, keeps one inside the Studio’s folders, refuses the rest naming the field', () => {
    const exportsDir = path.join(tmp.dir, 'home', 'exports');
    expect(roots).toEqual([path.join(tmp.dir, 'home'), path.join(tmp.dir, 'db')]);
    expect(confinedOutput('a/b.jsonl', 'out', roots)).toBe(path.join(exportsDir, 'a', 'b.jsonl'));
    expect(confinedOutput(path.join(tmp.dir, 'db', 'beside.jsonl'), 'out', roots)).toBe(path.join(tmp.dir, 'db', 'beside.jsonl'));
    for (const given of ['../../../escape.jsonl', path.join(outside.dir, 'x.jsonl'), 'link-out/through.jsonl', '/etc/passwd']) {
      let error: unknown = null;
      try {
        confinedOutput(given, 'out', roots);
      } catch (e) {
        error = e;
      }
      expect(error, given).toBeInstanceOf(StudioError);
      expect((error as StudioError).message).toMatch(/^out: .* is outside the Studio's folders/);
      expect((error as StudioError).issues?.[0].path).toBe('out');
    }
    // No roots (the app, the CLI): where the user says.
    expect(confinedOutput(path.join(outside.dir, 'x.jsonl'), 'out', null)).toBe(path.join(outside.dir, 'x.jsonl'));
  });

  it('the HTTP service refuses startExport, exportModel and exportStudyReport out of them and writes nothing; the CLI’s service does not confine', async () => {
    const http = createStudioService({ store, databasePath: dbPath(), transport: 'http' });
    await expect(http.startExport({ runs: [1], format: 'sft', out: '../../../escape.jsonl' })).rejects.toThrow(/out: \.\.\/\.\.\/\.\.\/escape\.jsonl is outside/);
    await expect(http.exportModel({ runId: 1, format: 'hf', out: path.join(outside.dir, 'model') })).rejects.toThrow(/outside the Studio's folders/);
    await expect(http.exportStudyReport(1, 'link-out/report')).rejects.toThrow(/outside the Studio's folders/);
    expect(fs.readdirSync(outside.dir)).toEqual([]);
    const direct = createStudioService({ store, databasePath: dbPath(), transport: 'direct' });
    // Not refused for its path: it fails for what it asks (no turns in the run).
    await expect(direct.startExport({ runs: [1], format: 'sft', out: path.join(outside.dir, 'x.jsonl') })).rejects.toThrow(/empty result/);
  });
});

/**
 * Issue 18, "The first `marsrl serve` builds the interface for ~65 s without saying so": a real
 * first start as a child process, building into a temp folder (MARSRL_BUILD_OUT) so it really
 * builds, never over the checkout's out/. What it prints while building must arrive before the
 * build is done: checked against the built index.html not existing yet when each line arrives.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src-main/engine/store';
import { MARSRL_BIN, REPO_ROOT } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-serve-build-');
afterAll(() => tmp.cleanup());

describe('the first marsrl serve says it is building, with progress (issue 18)', () => {
  it('prints the build notice, the build phases and the time so far before the build finishes, then serves what it built', async () => {
    const dbPath = path.join(tmp.dir, 'serve.db');
    openStore(dbPath).close();
    const outDir = path.join(tmp.dir, 'out');
    const index = path.join(outDir, 'renderer', 'index.html');
    const child = spawn(process.execPath, [MARSRL_BIN, 'serve', '--db', dbPath, '--port', '0'], {
      cwd: REPO_ROOT,
      env: { ...process.env, MARSRL_DB: undefined, MARSRL_TOKEN: undefined, MARSRL_HOME: path.join(tmp.dir, 'home'), MARSRL_BUILD_OUT: outDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    /** Each stderr line, and whether the built interface existed when it arrived. */
    const lines: { text: string; built: boolean }[] = [];
    let pending = '';
    child.stderr.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      const built = fs.existsSync(index);
      for (const text of parts) lines.push({ text, built });
    });
    let stdout = '';
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL after 280 s:\n${stdout}\n${lines.map((l) => l.text).join('\n')}`)), 280_000);
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const match = /Open: (\S+)/.exec(stdout);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
        child.once('exit', (code) => reject(new Error(`serve exited with ${code}:\n${lines.map((l) => l.text).join('\n')}`)));
      });
      const find = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l.text));
      const notice = find(/^Building the interface for the browser .*about a minute/);
      const phase = find(/^ {2}build \| .*(building|transforming|modules transformed)/i);
      const tick = find(/^ {2}… still building the interface \((\d+(\.\d+)?s|\d+m\d\ds) so far\)$/);
      const done = find(/^Built the interface in (\d+(\.\d+)?s|\d+m\d\ds)\.$/);
      expect(notice, lines.map((l) => l.text).join('\n')).toBe(0);
      expect(phase).toBeGreaterThan(notice);
      expect(tick).toBeGreaterThan(notice);
      expect(done).toBeGreaterThan(Math.max(phase, tick));
      // Notice, phases and ticks came while the build was still under way.
      for (const at of [notice, phase, tick]) expect(lines[at].built, lines[at].text).toBe(false);
      expect(lines[done].built).toBe(true);
      // It serves the interface it just built.
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toBe(fs.readFileSync(index, 'utf8'));
    } finally {
      child.kill('SIGINT');
      await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
    }
  }, 300_000);
});

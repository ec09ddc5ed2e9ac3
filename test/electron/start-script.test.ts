import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  electronBinaryStatus,
  nativeSqlitePaths,
  nodeGypArgs,
  nodeGypCandidates,
  parseArgs,
  prebuildInstallArgs,
  start,
  type Exec,
} from '../../scripts/start.mjs';

const VERSION = '41.10.7';
let root: string;

function write(file: string, text = ''): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** A checkout as `npm ci` with ELECTRON_SKIP_BINARY_DOWNLOAD leaves it: no Electron binary. */
function fakeCheckout(): void {
  write(path.join(root, 'node_modules/electron/package.json'), JSON.stringify({ version: VERSION }));
  write(path.join(root, 'node_modules/electron/install.js'));
  write(path.join(root, 'node_modules/better-sqlite3/package.json'), JSON.stringify({ name: 'better-sqlite3' }));
  write(path.join(root, 'node_modules/better-sqlite3/src/better_sqlite3.cpp'));
  write(path.join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'), 'node-abi build');
  write(path.join(root, 'node_modules/prebuild-install/bin.js'));
  write(path.join(root, 'node_modules/electron-vite/bin/electron-vite.js'));
}

function installElectronBinary(): void {
  write(path.join(root, 'node_modules/electron/path.txt'), 'electron');
  write(path.join(root, 'node_modules/electron/dist/version'), `v${VERSION}`);
  write(path.join(root, 'node_modules/electron/dist/electron'));
}

/** Records every command; `effects` simulates what a command leaves on disk. */
function recorder(effects: Record<string, (cwd: string) => number> = {}) {
  const calls: Array<{ what: string; args: string[]; cwd: string; env: NodeJS.ProcessEnv }> = [];
  const exec: Exec = async (command, args, options) => {
    // Node scripts are named by the script they run, executables by themselves.
    const what = path.basename(args[0]?.endsWith('.js') ? args[0] : command);
    const cwd = String(options.cwd);
    calls.push({ what, args, cwd, env: options.env ?? {} });
    return effects[what]?.(cwd) ?? 0;
  };
  return { calls, exec };
}

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-start-'));
  fakeCheckout();
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const quiet = (): void => {};
const linux = { platform: 'linux', arch: 'x64', execPath: '/usr/bin/node', log: quiet } as const;

describe('paths and arguments', () => {
  it('keeps the Electron build beside, not inside, node_modules', () => {
    const paths = nativeSqlitePaths('/repo', VERSION);
    expect(paths.addonFile).toBe(path.join('/repo/.native/electron-41.10.7/better_sqlite3.node'));
    expect(paths.builtFile).toBe(path.join('/repo/.native/electron-41.10.7/better-sqlite3/build/Release/better_sqlite3.node'));
  });

  it('targets the Electron runtime and headers', () => {
    expect(prebuildInstallArgs(VERSION, 'linux', 'x64')).toEqual(
      expect.arrayContaining(['--runtime=electron', `--target=${VERSION}`, '--arch=x64', '--platform=linux']),
    );
    expect(nodeGypArgs(VERSION, 'arm64')).toEqual(
      expect.arrayContaining(['rebuild', '--runtime=electron', `--target=${VERSION}`, '--arch=arm64', '--dist-url=https://electronjs.org/headers']),
    );
  });

  it("looks for node-gyp in node_modules, then npm's own", () => {
    const candidates = nodeGypCandidates('/repo', { npm_config_node_gyp: '/npm/node-gyp.js' }, '/usr/local/bin/node', 'linux');
    expect(candidates).toEqual([
      path.join('/repo/node_modules/node-gyp/bin/node-gyp.js'),
      '/npm/node-gyp.js',
      path.join('/usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
    ]);
  });

  it('separates its own flags from Electronʼs', () => {
    expect(parseArgs(['--dry-run', '--', '--inspect'])).toEqual({ dryRun: true, electronArgs: ['--inspect'] });
    expect(() => parseArgs(['--inspect'])).toThrow(/Unknown option/);
  });
});

describe('electronBinaryStatus', () => {
  const electronDir = (): string => path.join(root, 'node_modules/electron');

  it('reports a skipped download', () => {
    expect(electronBinaryStatus(electronDir(), VERSION, 'linux')).toMatchObject({ installed: false, reason: expect.stringMatching(/path\.txt/) });
  });

  it('reports a binary of another version', () => {
    installElectronBinary();
    write(path.join(electronDir(), 'dist/version'), 'v40.0.0');
    expect(electronBinaryStatus(electronDir(), VERSION, 'linux').installed).toBe(false);
  });

  it('finds an installed binary', () => {
    installElectronBinary();
    expect(electronBinaryStatus(electronDir(), VERSION, 'linux')).toEqual({
      installed: true,
      executable: path.join(electronDir(), 'dist/electron'),
      reason: expect.any(String),
    });
  });
});

describe('start', () => {
  it('on a fresh checkout: installs Electron, fetches the prebuilt addon, builds, launches with it', async () => {
    const { calls, exec } = recorder({
      'install.js': () => (installElectronBinary(), 0),
      'bin.js': (cwd) => (write(path.join(cwd, 'build/Release/better_sqlite3.node'), 'electron-abi build'), 0),
    });
    const status = await start({ root, env: { ELECTRON_SKIP_BINARY_DOWNLOAD: '1', ELECTRON_RUN_AS_NODE: '1' }, exec, ...linux });

    expect(status).toBe(0);
    expect(calls.map((call) => call.what)).toEqual(['install.js', 'bin.js', 'electron-vite.js', 'electron']);
    expect(calls[0].env.ELECTRON_SKIP_BINARY_DOWNLOAD).toBeUndefined();

    const paths = nativeSqlitePaths(root, VERSION);
    expect(calls[1].cwd).toBe(paths.stagingDir);
    expect(fs.readFileSync(paths.addonFile, 'utf8')).toBe('electron-abi build');
    expect(fs.existsSync(paths.stagingDir)).toBe(false);
    // The Node build in node_modules is untouched, so `npm test` keeps working.
    expect(fs.readFileSync(path.join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'), 'utf8')).toBe('node-abi build');

    const launch = calls[3];
    expect(launch.args).toEqual(['.']);
    expect(launch.env.MARSRL_NATIVE_SQLITE).toBe(paths.addonFile);
    expect(launch.env.ELECTRON_RUN_AS_NODE).toBeUndefined();
  });

  it('compiles with node-gyp when no prebuilt binary exists', async () => {
    installElectronBinary();
    const nodeGyp = path.join(root, 'node_modules/node-gyp/bin/node-gyp.js');
    write(nodeGyp);
    const { calls, exec } = recorder({
      // prebuild-install "succeeds" without a file; the copy must not carry the Node build.
      'bin.js': () => 0,
      'node-gyp.js': (cwd) => (write(path.join(cwd, 'build/Release/better_sqlite3.node'), 'compiled'), 0),
    });
    await start({ root, env: {}, exec, ...linux });
    expect(calls.map((call) => call.what)).toEqual(['bin.js', 'node-gyp.js', 'electron-vite.js', 'electron']);
    expect(fs.readFileSync(nativeSqlitePaths(root, VERSION).addonFile, 'utf8')).toBe('compiled');
  });

  it('never builds inside node_modules, even when the package is a symlink', async () => {
    installElectronBinary();
    write(path.join(root, 'node_modules/node-gyp/bin/node-gyp.js'));
    const linked = path.join(root, 'store/better-sqlite3');
    fs.mkdirSync(path.dirname(linked), { recursive: true });
    fs.renameSync(path.join(root, 'node_modules/better-sqlite3'), linked);
    fs.symlinkSync(linked, path.join(root, 'node_modules/better-sqlite3'), 'dir');
    const { calls, exec } = recorder({
      'bin.js': () => 1,
      // Like `node-gyp rebuild`: clean first, then compile.
      'node-gyp.js': (cwd) => {
        fs.rmSync(path.join(cwd, 'build'), { recursive: true, force: true });
        write(path.join(cwd, 'build/Release/better_sqlite3.node'), 'compiled');
        return 0;
      },
    });
    await start({ root, env: {}, exec, ...linux });
    const paths = nativeSqlitePaths(root, VERSION);
    expect(calls.filter((call) => call.what !== 'electron-vite.js' && call.what !== 'electron').map((call) => call.cwd)).toEqual([
      paths.stagingDir,
      paths.stagingDir,
    ]);
    expect(fs.readFileSync(path.join(linked, 'build/Release/better_sqlite3.node'), 'utf8')).toBe('node-abi build');
    expect(fs.readFileSync(paths.addonFile, 'utf8')).toBe('compiled');
  });

  it('skips both preparations once they are done', async () => {
    installElectronBinary();
    write(nativeSqlitePaths(root, VERSION).addonFile, 'electron-abi build');
    const { calls, exec } = recorder();
    await start({ root, env: {}, exec, ...linux });
    expect(calls.map((call) => call.what)).toEqual(['electron-vite.js', 'electron']);
  });

  it('fails clearly, leaving no addon behind, when nothing can build it', async () => {
    installElectronBinary();
    const { exec } = recorder({ 'bin.js': () => 1 });
    await expect(start({ root, env: {}, exec, ...linux, execPath: path.join(root, 'no-node/bin/node') })).rejects.toThrow(
      /node-gyp was not found/,
    );
    expect(fs.existsSync(nativeSqlitePaths(root, VERSION).addonFile)).toBe(false);
  });

  it("explains a failed Electron download in one paragraph, without the installer's stack trace (issue 18)", async () => {
    const trace = 'RequestError: getaddrinfo ENOTFOUND github.com\n    at ClientRequest.<anonymous> (node_modules/got/source/request-as-event-emitter.js:178:14)\n    at Object.onceWrapper (node:events:632:26)\n';
    const calls: string[] = [];
    const exec: Exec = async (_command, args, options) => {
      calls.push(path.basename(args[0] ?? ''));
      options.capture?.push(trace);
      return 1;
    };
    const failure = start({ root, env: {}, exec, ...linux });
    await expect(failure).rejects.toThrow(/^Electron's binary could not be downloaded \(getaddrinfo ENOTFOUND github\.com\)\. .*`npx marsrl serve` shows the same interface in a browser/);
    await expect(failure).rejects.not.toThrow(/\n|\bat ClientRequest/);
    expect(calls).toEqual(['install.js']);
  });

  it('stops when the build fails, before launching', async () => {
    installElectronBinary();
    write(nativeSqlitePaths(root, VERSION).addonFile);
    const { calls, exec } = recorder({ 'electron-vite.js': () => 1 });
    await expect(start({ root, env: {}, exec, ...linux })).rejects.toThrow(/electron-vite build failed/);
    expect(calls.map((call) => call.what)).toEqual(['electron-vite.js']);
  });

  it('changes nothing in a dry run', async () => {
    const { calls, exec } = recorder();
    const lines: string[] = [];
    await start({ root, env: {}, exec, dryRun: true, ...linux, log: (line) => lines.push(line) });
    expect(calls).toEqual([]);
    expect(fs.existsSync(path.join(root, '.native'))).toBe(false);
    expect(lines.join('\n')).toMatch(/binary not installed[\s\S]*building into[\s\S]*Launching/);
  });

  it('runs as a script: --dry-run on this checkout exits 0 and touches nothing', () => {
    const repo = path.resolve(import.meta.dirname, '../..');
    const before = fs.existsSync(path.join(repo, '.native'));
    const result = spawnSync(process.execPath, [path.join(repo, 'scripts/start.mjs'), '--dry-run'], { encoding: 'utf8' });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/\[start\] .*Launching/);
    expect(fs.existsSync(path.join(repo, '.native'))).toBe(before);
  });
});

#!/usr/bin/env node
// `npm start`: get a user's checkout from `npm ci` to a running desktop app.
//
//   1. Electron's binary: installs skipped with ELECTRON_SKIP_BINARY_DOWNLOAD (or run offline)
//      have no binary, so electron's own installer is run again.
//   2. better-sqlite3 for Electron: Electron's Node has another ABI than the system Node, and
//      the module in node_modules must stay built for Node so `npm test` and the CLI keep
//      working. A copy is built for Electron under .native/electron-<version>/ (a prebuilt
//      binary first, compiling from source only if there is none) and main is told where it
//      is through MARSRL_NATIVE_SQLITE.
//   3. Build with electron-vite, then launch `electron .`.
//
// Flags: --dry-run prints what would be done and changes nothing; arguments after `--` go to
// Electron. The steps are exported for the tests (test/electron/start-script.test.ts).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const NATIVE_DIR = '.native';
const ADDON_FILE = 'better_sqlite3.node';

/** Where the Electron build of better-sqlite3 lives for one Electron version. */
export function nativeSqlitePaths(root, electronVersion) {
  const dir = path.join(root, NATIVE_DIR, `electron-${electronVersion}`);
  const stagingDir = path.join(dir, 'better-sqlite3');
  return {
    dir,
    /** A private copy of the package, built in place so node_modules is never touched. */
    stagingDir,
    /** What prebuild-install or node-gyp leave behind in the copy. */
    builtFile: path.join(stagingDir, 'build', 'Release', ADDON_FILE),
    /** The finished addon main loads; its presence means there is nothing to do. */
    addonFile: path.join(dir, ADDON_FILE),
  };
}

/** The executable's name inside electron/dist, as electron's install.js writes it to path.txt. */
export function electronPlatformPath(platform) {
  if (platform === 'darwin' || platform === 'mas') return 'Electron.app/Contents/MacOS/Electron';
  if (platform === 'win32') return 'electron.exe';
  return 'electron';
}

/**
 * Whether electron's binary is in place, by the same test electron's install.js makes: the
 * dist folder holds this version, path.txt names this platform's executable, and it exists.
 */
export function electronBinaryStatus(electronDir, version, platform) {
  const expected = electronPlatformPath(platform);
  const executable = path.join(electronDir, 'dist', expected);
  const read = (file) => {
    try {
      return fs.readFileSync(path.join(electronDir, file), 'utf8').trim();
    } catch {
      return null;
    }
  };
  const pathTxt = read('path.txt');
  if (pathTxt === null) return { installed: false, executable, reason: 'node_modules/electron/path.txt is missing' };
  if (pathTxt !== expected) return { installed: false, executable, reason: `path.txt names ${pathTxt}, not ${expected}` };
  const distVersion = read(path.join('dist', 'version'));
  if (distVersion?.replace(/^v/, '') !== version) {
    return { installed: false, executable, reason: `dist holds ${distVersion ?? 'nothing'}, not ${version}` };
  }
  if (!fs.existsSync(executable)) return { installed: false, executable, reason: `${executable} is missing` };
  return { installed: true, executable, reason: `Electron ${version} is installed` };
}

/**
 * node-gyp is not a dependency of this project; npm ships one and names it in
 * npm_config_node_gyp when it runs a script, and a global npm keeps it beside itself.
 */
export function nodeGypCandidates(root, env, execPath, platform) {
  const nodeDir = path.dirname(execPath);
  const npmBundled =
    platform === 'win32'
      ? path.join(nodeDir, 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
      : path.join(nodeDir, '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  return [path.join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'), env.npm_config_node_gyp, npmBundled].filter(
    (candidate) => typeof candidate === 'string' && candidate.length > 0,
  );
}

export function prebuildInstallArgs(electronVersion, platform, arch) {
  return [`--runtime=electron`, `--target=${electronVersion}`, `--platform=${platform}`, `--arch=${arch}`, '--verbose'];
}

export function nodeGypArgs(electronVersion, arch) {
  return [
    'rebuild',
    '--release',
    '--runtime=electron',
    `--target=${electronVersion}`,
    `--arch=${arch}`,
    '--dist-url=https://electronjs.org/headers',
  ];
}

/**
 * Copies the package without its Node build, so a failed Electron build can never pass for one.
 * node-gyp's `rebuild` starts by deleting build/ in its working folder: if the copy were a
 * symlink back into node_modules (pnpm, workspaces, `npm link`), that would destroy the Node
 * build the CLI and tests load. Hence the real path, dereferenced copies, and the check after.
 */
function stageBetterSqlite(sourceDir, stagingDir) {
  const realSource = fs.realpathSync(sourceDir);
  const nodeBuild = path.join(realSource, 'build');
  fs.rmSync(stagingDir, { recursive: true, force: true });
  fs.cpSync(realSource, stagingDir, {
    recursive: true,
    dereference: true,
    filter: (source) => source !== nodeBuild && !source.startsWith(nodeBuild + path.sep),
  });
  const staged = fs.lstatSync(stagingDir);
  if (!staged.isDirectory() || staged.isSymbolicLink() || fs.realpathSync(stagingDir) === realSource) {
    throw new StartError(`Could not make a private copy of better-sqlite3 at ${stagingDir}; refusing to build in node_modules.`);
  }
}

/**
 * Spawns a command with inherited output and resolves with its exit status (1 for a signal).
 * With `options.capture` (an array), its output is collected there instead of shown.
 */
export function runCommand(command, args, options = {}) {
  const { capture, ...spawnOptions } = options;
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit', ...spawnOptions });
    if (capture) {
      child.stdout?.on('data', (chunk) => capture.push(String(chunk)));
      child.stderr?.on('data', (chunk) => capture.push(String(chunk)));
    }
    const forward = (signal) => child.kill(signal);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    const settle = (status) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve(status);
    };
    child.on('error', (error) => {
      console.error(`[start] could not run ${command}: ${error.message}`);
      settle(1);
    });
    child.on('close', (code, signal) => settle(code ?? (signal ? 1 : 0)));
  });
}

export class StartError extends Error {}

/**
 * Electron's installer fails with a stack trace (a network error deep in @electron/get); a
 * person needs the cause in one line, what to do, and that the same interface runs without
 * Electron (issue 18).
 */
export function electronDownloadFailure(reason, output) {
  const lines = String(output).split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !/^at\s/.test(l));
  const cause = [...lines].reverse().find((l) => /error|ENOTFOUND|ECONN|ETIMEDOUT|EAI_AGAIN|certificate|proxy|\b[45]\d\d\b/i.test(l)) ?? reason;
  return (
    `Electron's binary could not be downloaded (${cause.replace(/^\w*Error:\s*/, '')}). The desktop app needs it once: ` +
    'check the network or proxy settings (ELECTRON_MIRROR and electron_config_cache are honoured) and run `npm start` again. ' +
    'Until then, `npx marsrl serve` shows the same interface in a browser, and the CLI and `npm test` work without Electron.'
  );
}

/**
 * Every step of `npm start`. Commands go through `exec` so the tests can follow the sequence
 * without running Electron or a compiler.
 */
export async function start({
  root,
  env = process.env,
  platform = process.platform,
  arch = process.arch,
  execPath = process.execPath,
  dryRun = false,
  electronArgs = [],
  exec = runCommand,
  log: print = (message) => console.log(`[start] ${message}`),
}) {
  const log = dryRun ? (message) => print(`(dry run, nothing done) ${message}`) : print;
  const node = execPath;
  const modules = path.join(root, 'node_modules');
  const electronDir = path.join(modules, 'electron');
  if (!fs.existsSync(path.join(electronDir, 'package.json'))) {
    throw new StartError('node_modules/electron is missing: run `npm ci` (or `npm install`) first.');
  }
  const electronVersion = JSON.parse(fs.readFileSync(path.join(electronDir, 'package.json'), 'utf8')).version;

  // 1. Electron's binary.
  let binary = electronBinaryStatus(electronDir, electronVersion, platform);
  if (binary.installed) {
    log(`Electron ${electronVersion}: binary present.`);
  } else {
    log(`Electron ${electronVersion}: binary not installed (${binary.reason}); downloading it with electron's installer.`);
    if (!dryRun) {
      // The installer does nothing at all while this variable is set, which is how the binary
      // came to be missing in the first place.
      const installEnv = { ...env };
      delete installEnv.ELECTRON_SKIP_BINARY_DOWNLOAD;
      const output = [];
      const status = await exec(node, [path.join(electronDir, 'install.js')], { cwd: electronDir, env: installEnv, capture: output });
      binary = electronBinaryStatus(electronDir, electronVersion, platform);
      if (status !== 0 || !binary.installed) throw new StartError(electronDownloadFailure(binary.reason, output.join('')));
    }
  }

  // 2. better-sqlite3 for Electron's ABI, beside the Node build.
  const sqlite = nativeSqlitePaths(root, electronVersion);
  if (fs.existsSync(sqlite.addonFile)) {
    log(`better-sqlite3 for Electron ${electronVersion}: using ${path.relative(root, sqlite.addonFile)}.`);
  } else {
    log(`better-sqlite3 for Electron ${electronVersion}: building into ${path.relative(root, sqlite.dir)}/ (once per Electron version).`);
    if (!dryRun) await buildNativeSqlite({ root, node, env, platform, arch, execPath, electronVersion, sqlite, exec, log });
  }

  // 3. Build, then launch.
  log('Building the app with electron-vite.');
  if (!dryRun) {
    const status = await exec(node, [path.join(modules, 'electron-vite', 'bin', 'electron-vite.js'), 'build'], { cwd: root, env });
    if (status !== 0) throw new StartError('electron-vite build failed; see the errors above (`npm run typecheck` gives more detail).');
  }

  log(`Launching ${path.relative(root, binary.executable)} .`);
  if (dryRun) return 0;
  const appEnv = { ...env, MARSRL_NATIVE_SQLITE: sqlite.addonFile };
  // Left over from some Node tooling, it would make the Electron binary behave as plain Node.
  delete appEnv.ELECTRON_RUN_AS_NODE;
  return exec(binary.executable, ['.', ...electronArgs], { cwd: root, env: appEnv });
}

async function buildNativeSqlite({ root, node, env, platform, arch, execPath, electronVersion, sqlite, exec, log }) {
  const modules = path.join(root, 'node_modules');
  const source = path.join(modules, 'better-sqlite3');
  if (!fs.existsSync(path.join(source, 'package.json'))) {
    throw new StartError('node_modules/better-sqlite3 is missing: run `npm ci` first.');
  }
  fs.mkdirSync(sqlite.dir, { recursive: true });
  stageBetterSqlite(source, sqlite.stagingDir);

  const prebuildInstall = path.join(modules, 'prebuild-install', 'bin.js');
  let built = false;
  if (fs.existsSync(prebuildInstall)) {
    log('Fetching a prebuilt binary (prebuild-install).');
    const status = await exec(node, [prebuildInstall, ...prebuildInstallArgs(electronVersion, platform, arch)], {
      cwd: sqlite.stagingDir,
      env,
    });
    built = status === 0 && fs.existsSync(sqlite.builtFile);
    if (!built) log('No prebuilt binary could be fetched (github.com unreachable, or none for this platform); compiling from source instead.');
  } else {
    log('prebuild-install is not installed; compiling from source.');
  }

  if (!built) {
    const nodeGyp = nodeGypCandidates(root, env, execPath, platform).find((candidate) => fs.existsSync(candidate));
    if (!nodeGyp) {
      throw new StartError(
        'Cannot build better-sqlite3 for Electron: no prebuilt binary, and node-gyp was not found. ' +
          'Run `npm start` through npm (which provides node-gyp), or install it with `npm install -g node-gyp`.',
      );
    }
    log(`Compiling with node-gyp (${nodeGyp}); this needs Python and a C++ toolchain and takes a few minutes.`);
    const status = await exec(node, [nodeGyp, ...nodeGypArgs(electronVersion, arch)], { cwd: sqlite.stagingDir, env });
    if (status !== 0 || !fs.existsSync(sqlite.builtFile)) {
      throw new StartError(
        'Compiling better-sqlite3 for Electron failed; see the node-gyp output above. It needs network access ' +
          "to electronjs.org (Electron's headers), Python, and a C++ toolchain: python3, make and g++ on Linux, " +
          'the Xcode command line tools on macOS, the Visual Studio C++ build tools on Windows.',
      );
    }
  }

  // Through a temporary name, so an interrupted copy is never taken for a finished build.
  const temporary = `${sqlite.addonFile}.tmp`;
  fs.copyFileSync(sqlite.builtFile, temporary);
  fs.renameSync(temporary, sqlite.addonFile);
  fs.rmSync(sqlite.stagingDir, { recursive: true, force: true });
  log(`Built ${path.relative(root, sqlite.addonFile)}.`);
}

export function parseArgs(argv) {
  const separator = argv.indexOf('--');
  const own = separator === -1 ? argv : argv.slice(0, separator);
  const electronArgs = separator === -1 ? [] : argv.slice(separator + 1);
  const unknown = own.filter((arg) => arg !== '--dry-run');
  if (unknown.length > 0) throw new StartError(`Unknown option ${unknown[0]}. Usage: npm start -- [--dry-run] [-- <electron args>]`);
  return { dryRun: own.includes('--dry-run'), electronArgs };
}

const invokedDirectly = process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  try {
    const { dryRun, electronArgs } = parseArgs(process.argv.slice(2));
    process.exitCode = await start({ root, dryRun, electronArgs });
  } catch (error) {
    console.error(`[start] ${error instanceof StartError ? error.message : (error?.stack ?? error)}`);
    process.exitCode = 1;
  }
}

/**
 * The desktop package (issue #17). Installers cannot be built on these machines (Electron's
 * archives and headers come from GitHub), so what can be checked is checked: electron-builder's
 * own validator and JSON schema accept the configuration, it names the four targets, every
 * file it names is in build/, the icons are what their names say and are exactly what
 * scripts/make-icons.mjs makes from build/icon.svg, and every native addon the app loads is
 * unpacked from the asar archive.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { minimatch } from 'minimatch';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const require = createRequire(import.meta.url);
/** electron-builder's own configuration check (app-builder-lib, what `electron-builder` runs first). */
const { validateConfiguration } = require('app-builder-lib/out/util/config/config.js') as {
  validateConfiguration(config: unknown, debugLogger: { isEnabled: boolean }): Promise<void>;
};

interface BuilderConfig {
  directories: { buildResources: string; output: string };
  files: string[];
  asarUnpack: string[];
  npmRebuild: boolean;
  linux: { target: string[]; icon: string };
  mac: { target: string[]; icon: string; entitlements: string; entitlementsInherit: string };
  win: { target: string[]; icon: string };
  nsis: { installerIcon: string; uninstallerIcon: string };
}

const config = YAML.parse(fs.readFileSync(path.join(REPO_ROOT, 'electron-builder.yml'), 'utf8')) as BuilderConfig;
const buildDir = path.join(REPO_ROOT, 'build');

/** Width and height from a PNG's IHDR chunk (PNG spec §11.2.2), after the 8-byte signature. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  expect(png.subarray(12, 16).toString('ascii')).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** ICO directory entries (width 0 means 256) and their PNG payloads. */
function readIco(buf: Buffer): { size: number; png: Buffer }[] {
  expect([buf.readUInt16LE(0), buf.readUInt16LE(2)]).toEqual([0, 1]);
  return Array.from({ length: buf.readUInt16LE(4) }, (_, i) => {
    const e = 6 + 16 * i;
    const length = buf.readUInt32LE(e + 8);
    const offset = buf.readUInt32LE(e + 12);
    return { size: buf.readUInt8(e) || 256, png: buf.subarray(offset, offset + length) };
  });
}

/** icns elements: 4-byte type, 4-byte big-endian length including the header. */
function readIcns(buf: Buffer): { type: string; png: Buffer }[] {
  expect(buf.subarray(0, 4).toString('ascii')).toBe('icns');
  expect(buf.readUInt32BE(4)).toBe(buf.length);
  const out: { type: string; png: Buffer }[] = [];
  for (let at = 8; at < buf.length; ) {
    const length = buf.readUInt32BE(at + 4);
    out.push({ type: buf.subarray(at, at + 4).toString('ascii'), png: buf.subarray(at + 8, at + length) });
    at += length;
  }
  return out;
}

describe('electron-builder configuration', () => {
  it('passes electron-builder\'s own validation (its scheme.json) and the validator does reject a mistake', async () => {
    expect(fs.existsSync(require.resolve('app-builder-lib/scheme.json'))).toBe(true);
    await expect(validateConfiguration(config, { isEnabled: false })).resolves.toBeUndefined();
    await expect(validateConfiguration({ ...config, linux: { ...config.linux, icno: 'x' } }, { isEnabled: false })).rejects.toThrow(/configuration\.linux/);
    await expect(validateConfiguration({ ...config, nsis: { ...config.nsis, oneClick: 'sometimes' } }, { isEnabled: false })).rejects.toThrow(/nsis/);
  });

  it('builds AppImage and deb, dmg, and nsis, with native modules rebuilt for Electron', () => {
    expect(config.linux.target).toEqual(['AppImage', 'deb']);
    expect(config.mac.target).toEqual(['dmg']);
    expect(config.win.target).toEqual(['nsis']);
    expect(config.npmRebuild).toBe(true);
    expect(config.directories.buildResources).toBe('build');
  });

  it('packages what package.json main and the run manager load', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { main: string; scripts: Record<string, string> };
    for (const file of [pkg.main, './out/main/worker.js', './out/preload/index.cjs', './out/renderer/index.html', './resources/presets/quick.yaml']) {
      const rel = path.posix.normalize(file.replace(/^\.\//, ''));
      const included = config.files.filter((p) => !p.startsWith('!')).some((p) => minimatch(rel, p));
      const excluded = config.files.filter((p) => p.startsWith('!')).some((p) => minimatch(rel, p.slice(1)));
      expect(included && !excluded, rel).toBe(true);
    }
    expect(pkg.scripts.dist).toMatch(/npm run build && electron-builder/);
  });

  it('unpacks every native addon of the production dependencies from the asar archive', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const addons: string[] = [];
    const walk = (dir: string, rel: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        if (entry.name === 'obj.target' || entry.name === '.bin') continue;
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(p, `${rel}/${entry.name}`);
        else if (entry.name.endsWith('.node')) addons.push(`${rel}/${entry.name}`);
      }
    };
    // The packages the app depends on, and their platform packages (@resvg/resvg-js-<platform>).
    const roots = new Set(Object.keys(pkg.dependencies));
    for (const scope of ['@resvg']) for (const name of fs.readdirSync(path.join(REPO_ROOT, 'node_modules', scope))) roots.add(`${scope}/${name}`);
    for (const name of roots) {
      const dir = path.join(REPO_ROOT, 'node_modules', name);
      if (fs.existsSync(dir)) walk(dir, `node_modules/${name}`);
    }
    expect(addons.some((a) => a.startsWith('node_modules/better-sqlite3/'))).toBe(true);
    expect(addons.some((a) => a.startsWith('node_modules/@resvg/'))).toBe(true);
    for (const addon of addons) expect(config.asarUnpack.some((p) => minimatch(addon, p)), addon).toBe(true);
  });
});

describe('build/ icons', () => {
  let regenerated: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    regenerated = tempDir('marsrl-icons-');
    const { makeIcons } = (await import(path.join(REPO_ROOT, 'scripts', 'make-icons.mjs'))) as { makeIcons(out: string): string[] };
    makeIcons(regenerated.dir);
  });
  afterAll(() => regenerated.cleanup());

  it('holds every file the configuration names', () => {
    const named = [config.linux.icon, config.mac.icon, config.mac.entitlements, config.mac.entitlementsInherit, config.win.icon, config.nsis.installerIcon, config.nsis.uninstallerIcon];
    for (const file of named) {
      expect(path.resolve(REPO_ROOT, file).startsWith(buildDir + path.sep), file).toBe(true);
      expect(fs.existsSync(path.join(REPO_ROOT, file)), file).toBe(true);
    }
    expect(fs.statSync(path.join(REPO_ROOT, config.linux.icon)).isDirectory()).toBe(true);
  });

  it('the Linux icon set: each NxN.png is N×N, from 16 to 1024, with 256 and 512 present', () => {
    const files = fs.readdirSync(path.join(REPO_ROOT, config.linux.icon)).filter((f) => f.endsWith('.png'));
    const sizes = files.map((f) => {
      const match = /^(\d+)x(\d+)\.png$/.exec(f);
      expect(match, f).not.toBeNull();
      expect(pngSize(fs.readFileSync(path.join(REPO_ROOT, config.linux.icon, f)))).toEqual({ width: Number(match![1]), height: Number(match![2]) });
      return Number(match![1]);
    });
    expect(sizes).toEqual(expect.arrayContaining([16, 32, 48, 64, 128, 256, 512, 1024]));
  });

  it('the .ico holds PNGs of 16 to 256 px whose entries state their real size', () => {
    const images = readIco(fs.readFileSync(path.join(REPO_ROOT, config.win.icon)));
    expect(images.map((i) => i.size)).toEqual(expect.arrayContaining([16, 32, 48, 256]));
    for (const { size, png } of images) expect(pngSize(png)).toEqual({ width: size, height: size });
  });

  it('the .icns holds a PNG of each type\'s size (icp4 16 … ic10 1024, @2x types included)', () => {
    const expected: Record<string, number> = { icp4: 16, icp5: 32, icp6: 64, ic07: 128, ic08: 256, ic09: 512, ic10: 1024, ic11: 32, ic12: 64, ic13: 256, ic14: 512 };
    const elements = readIcns(fs.readFileSync(path.join(REPO_ROOT, config.mac.icon)));
    expect(elements.map((e) => e.type).sort()).toEqual(Object.keys(expected).sort());
    for (const { type, png } of elements) expect(pngSize(png), type).toEqual({ width: expected[type], height: expected[type] });
  });

  it('every committed icon is exactly what scripts/make-icons.mjs renders from build/icon.svg', () => {
    const files = ['icon.png', 'icon.icns', 'icon.ico', ...fs.readdirSync(path.join(regenerated.dir, 'icons')).map((f) => `icons/${f}`)];
    expect(files.length).toBeGreaterThan(8);
    for (const rel of files) {
      expect(fs.readFileSync(path.join(buildDir, rel)).equals(fs.readFileSync(path.join(regenerated.dir, rel))), `build/${rel} differs from a fresh render: run node scripts/make-icons.mjs`).toBe(true);
    }
  });
});

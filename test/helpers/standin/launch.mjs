/**
 * Starts the stand-in engine (standin-engine.ts) as one bundled ES module instead of through
 * tsx's loader: the stand-in runs as a new process for every probe and every job of every engine
 * test, and transpiling its TypeScript graph at each start cost about 0.5 s of CPU (three times
 * what the bundle's start costs), which the 2-core CI machine pays dozens of times.
 *
 * The bundle is built with esbuild (the transpiler tsx itself uses, resolved through tsx) into
 * node_modules/.cache/marsrl-standin, and built again whenever one of its sources is newer than
 * it. Packages stay imports of node_modules; the bundle sits inside the repository, so the
 * stand-in finds resources/ (src-main/engine/resources.ts) and its packages as it did from source.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const outDir = path.join(root, 'node_modules', '.cache', 'marsrl-standin');
const bundle = path.join(outDir, 'standin-engine.mjs');
const inputsFile = path.join(outDir, 'inputs.json');

/** The bundle exists and none of the sources it was built from changed after its build began. */
function fresh() {
  try {
    const built = fs.statSync(bundle).mtimeMs;
    const inputs = JSON.parse(fs.readFileSync(inputsFile, 'utf8'));
    return inputs.length > 0 && inputs.every((file) => fs.statSync(path.join(root, file)).mtimeMs <= built);
  } catch {
    return false;
  }
}

/**
 * Builds into files of this process's own and renames them into place, so stand-ins starting at the
 * same time never read a half-written bundle. The bundle's time is set to when the build began: a
 * source saved during the build is newer, and the next start builds again.
 */
function build() {
  const began = new Date();
  const requireFromTsx = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
  const { buildSync } = requireFromTsx('esbuild');
  fs.mkdirSync(outDir, { recursive: true });
  const tmp = `${bundle}.${process.pid}.tmp`;
  const result = buildSync({
    entryPoints: [path.join(here, 'standin-engine.ts')],
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: tmp,
    metafile: true,
    logLevel: 'error',
  });
  fs.writeFileSync(`${inputsFile}.${process.pid}.tmp`, JSON.stringify(Object.keys(result.metafile.inputs)));
  fs.renameSync(`${inputsFile}.${process.pid}.tmp`, inputsFile);
  fs.utimesSync(tmp, began, began);
  fs.renameSync(tmp, bundle);
}

if (!fresh()) build();
await import(pathToFileURL(bundle).href);

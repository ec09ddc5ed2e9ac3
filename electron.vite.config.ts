/**
 * One build for the three Electron processes. The source folders are src-main, src-preload and
 * src-renderer rather than electron-vite's default src/{main,preload,renderer}, so every entry
 * is named here explicitly; without that electron-vite silently finds nothing.
 */
import { resolve } from 'node:path';
import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'electron-vite';
import { normalizePath, type Plugin } from 'vite';
import { contentSecurityPolicy } from './src-shared/csp';

const root = import.meta.dirname;

/**
 * Packages main must load from node_modules at run time instead of bundling: native addons
 * (better-sqlite3's .node file, tfjs-node's libtensorflow) cannot be bundled, and the optional
 * tfjs packages are not in `dependencies`, which is all that electron-vite externalizes itself.
 */
const NATIVE_OR_OPTIONAL_PACKAGES = [
  'better-sqlite3',
  '@tensorflow/tfjs-node',
  '@tensorflow/tfjs-node-gpu',
  '@tensorflow/tfjs-core',
  '@tensorflow/tfjs-backend-cpu',
  '@tensorflow/tfjs-backend-wasm',
];

/**
 * The Vite dev server injects component CSS as <style> elements, which the shipped policy
 * (style-src 'self') refuses; under `electron-vite dev` only, the meta tag gets the relaxed
 * policy. Built files keep index.html's strict tag untouched.
 */
function devContentSecurityPolicy(): Plugin {
  return {
    name: 'marsrl:dev-csp',
    apply: 'serve',
    transformIndexHtml(html) {
      return html.replace(
        /(<meta http-equiv="Content-Security-Policy" content=")[^"]*(")/,
        `$1${contentSecurityPolicy({ dev: true, delivery: 'meta' })}$2`,
      );
    },
  };
}

/**
 * The benchmarks (bench/, `npm run bench`) drive the Studio from outside and never ship (issue 37).
 * Nothing in src-main imports them; should an import ever reach one, the build fails here instead
 * of packaging it.
 */
function noBenchmarks(): Plugin {
  // Module ids are posix paths on every OS (vite's normalizePath).
  const benchDir = `${normalizePath(resolve(root, 'bench'))}/`;
  return {
    name: 'marsrl:no-bench',
    load(id) {
      if (id.startsWith(benchDir)) this.error(`${id} is a benchmark: the app must not bundle bench/ (run it with npm run bench)`);
      return null;
    },
  };
}

/**
 * electron-vite 6 reads the renderer's input from `rolldownOptions` (Vite 8's name) and copies
 * it to `rollupOptions`, which Vite 7 builds from. Vite 7's types do not know the Vite 8 name,
 * hence the spread instead of a literal property.
 */
const rendererInput = { rolldownOptions: { input: resolve(root, 'src-renderer/index.html') } };

export default defineConfig({
  main: {
    plugins: [noBenchmarks()],
    build: {
      outDir: resolve(root, 'out/main'),
      externalizeDeps: { include: NATIVE_OR_OPTIONAL_PACKAGES },
      // The run worker is a second entry: utility processes load it as out/main/worker.js. The math
      // answer checker's thread (issue #34) is a third, out/main/math-answer-thread.js, and the
      // off-thread worker (src-main/api/off-thread.ts, issue #36) a fourth, out/main/off-thread.js.
      lib: {
        entry: {
          index: resolve(root, 'src-main/index.ts'),
          worker: resolve(root, 'src-main/runner/worker.ts'),
          'math-answer-thread': resolve(root, 'src-main/engine/tasks/math-answer/judge-thread.ts'),
          'off-thread': resolve(root, 'src-main/api/off-thread-worker.ts'),
        },
      },
    },
  },
  preload: {
    plugins: [noBenchmarks()],
    build: {
      outDir: resolve(root, 'out/preload'),
      // A sandboxed preload runs in a restricted CommonJS-like wrapper that cannot load ES
      // modules or anything from node_modules, so it is one self-contained CJS file.
      externalizeDeps: false,
      lib: { entry: resolve(root, 'src-preload/index.ts'), formats: ['cjs'] },
    },
  },
  renderer: {
    root: resolve(root, 'src-renderer'),
    plugins: [vue(), devContentSecurityPolicy()],
    build: {
      outDir: resolve(root, 'out/renderer'),
      emptyOutDir: true,
      minify: true,
      ...rendererInput,
    },
  },
});

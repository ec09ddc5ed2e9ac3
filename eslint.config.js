// ESLint flat config for the whole repository. Deliberately without type-aware rules: the
// typecheck step already runs tsc per process boundary, and lint stays fast enough to run on
// every save.
import js from '@eslint/js';
import pluginVue from 'eslint-plugin-vue';
import prettierOff from 'eslint-config-prettier/flat';
import globals from 'globals';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const ELECTRON_IS_FOR_THE_SHELL =
  'The engine, api and cli run without Electron (CLI, tests, marsrl serve); only src-main/electron and src-main/index.ts may import it.';
const NOTHING_OUTSIDE_SHARED =
  'src-shared is pure and imports nothing outside itself (no package, no Node, no electron): main, the preload and the renderer all import it.';
const PRELOAD_IS_THE_BRIDGE = 'The sandboxed preload is only the bridge: electron and src-shared (#shared/…), no Node built-in, nothing of main or the renderer.';
const RENDERER_IS_SANDBOXED = 'The renderer is sandboxed: reach main through window.studio (src/api/client.ts) and share code through src-shared (#shared/…).';
const RENDERER_HAS_NO_NODE = 'The renderer runs in a browser context without Node.';
const VOCABULARY_IS_A_LEAF = 'engine/vocabulary is the leaf the config, agents and tasks share: it imports only engine/util and src-shared (test/architecture/layers.ts, ENGINE_TIERS).';
const ENGINE_IS_BELOW = 'The engine sits under the runner, the API and the edges (cli, server, electron): it never imports them.';
const RUNNER_IS_BELOW_THE_API = 'The runner sits under the API and the edges: the API imports it, never the other way round.';
const MAIN_IS_NOT_THE_PAGE = {
  regex: '(^|/)src-(preload|renderer)(/|$)',
  message: 'Main never imports the preload or the renderer; what both sides need lives in src-shared (#shared/…).',
};
const NODE_BUILTINS = builtinModules.filter((name) => !name.startsWith('_'));

/** One folder's no-restricted-imports rule. */
function restrict(files, { paths = [], patterns = [] }) {
  return { files, rules: { 'no-restricted-imports': ['error', { paths, patterns }] } };
}

/**
 * A main-process folder that runs without Electron: it refuses electron (and electron/*), the
 * preload and the renderer, and whatever `patterns` its place in the layering adds.
 */
function withoutElectron(files, ...patterns) {
  return restrict(files, {
    paths: [{ name: 'electron', message: ELECTRON_IS_FOR_THE_SHELL }],
    patterns: [{ group: ['electron/*'], message: ELECTRON_IS_FOR_THE_SHELL }, ...patterns, MAIN_IS_NOT_THE_PAGE],
  });
}

export default tseslint.config(
  {
    ignores: ['out/**', 'dist/**', 'node_modules/**', '.native/**', 'coverage/**', 'test-results/**', 'bench-results/**', '.bench/**'],
  },

  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...pluginVue.configs['flat/recommended'],
  // Templates are laid out by Prettier (.prettierrc.json, `npm run format`; lint checks it): its
  // layout replaces the Vue style guide's formatting rules, which would fight it.
  prettierOff,

  {
    files: ['**/*.vue'],
    languageOptions: {
      parserOptions: { parser: tseslint.parser, ecmaVersion: 'latest', sourceType: 'module' },
    },
  },

  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },

  // Node: main process, engine, CLI, scripts, tests, tooling config.
  {
    files: ['src-main/**', 'src-preload/**', 'test/**', 'scripts/**', 'bin/**', 'bench/**', '*.config.{js,ts,mjs}'],
    languageOptions: { globals: { ...globals.node } },
  },
  // Browser: the renderer, and the test harness pages that stand in for it.
  {
    files: ['src-renderer/**', 'test/**/harness/**'],
    languageOptions: { globals: { ...globals.browser } },
  },

  // Imports point down (issue 37): one no-restricted-imports block per folder (a later block for the
  // same file would replace, not add to, an earlier one). The whole table, with the engine's and the
  // renderer's folder tiers and every import form (dynamic import() too), is test/architecture.
  restrict(['src-shared/**'], {
    patterns: [{ regex: '^(?!\\./)', message: NOTHING_OUTSIDE_SHARED }],
  }),
  restrict(['src-preload/**'], {
    paths: NODE_BUILTINS.map((name) => ({ name, message: PRELOAD_IS_THE_BRIDGE })),
    patterns: [
      { regex: '^node:', message: PRELOAD_IS_THE_BRIDGE },
      { regex: '(^|/)src-(main|renderer)(/|$)', message: PRELOAD_IS_THE_BRIDGE },
    ],
  }),
  restrict(['src-renderer/**'], {
    paths: [{ name: 'electron', message: RENDERER_IS_SANDBOXED }, ...NODE_BUILTINS.map((name) => ({ name, message: RENDERER_HAS_NO_NODE }))],
    patterns: [
      { regex: '^node:', message: RENDERER_HAS_NO_NODE },
      { regex: '(^|/)src-(main|preload)(/|$)', message: RENDERER_IS_SANDBOXED },
    ],
  }),
  withoutElectron(['src-main/engine/**'], { regex: '^(\\.\\./)+(api|runner|cli|server|electron|app|bench)(/|$)', message: ENGINE_IS_BELOW }),
  // The vocabulary (names and types the config, agents and tasks share) is a leaf: it reads only util.
  withoutElectron(['src-main/engine/vocabulary/**'], { regex: '^\\.\\./(?!util/)', message: VOCABULARY_IS_A_LEAF }),
  withoutElectron(['src-main/runner/**'], { regex: '^(\\.\\./)+(api|cli|server|electron|app|bench)(/|$)', message: RUNNER_IS_BELOW_THE_API }),
  withoutElectron(['src-main/api/**', 'src-main/app/**', 'src-main/cli/**', 'src-main/server/**', 'src-main/bench/**']),
  restrict(['src-main/electron/**', 'src-main/index.ts'], { patterns: [MAIN_IS_NOT_THE_PAGE] }),
);

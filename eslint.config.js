// ESLint flat config for the whole repository. Deliberately without type-aware rules: the
// typecheck step already runs tsc per process boundary, and lint stays fast enough to run on
// every save.
import js from '@eslint/js';
import pluginVue from 'eslint-plugin-vue';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const ELECTRON_IS_FOR_THE_SHELL =
  'The engine, api and cli run without Electron (CLI, tests, marsrl serve); only src-main/electron and src-main/index.ts may import it.';

export default tseslint.config(
  {
    ignores: ['out/**', 'dist/**', 'node_modules/**', '.native/**', 'coverage/**', 'test-results/**', 'bench-results/**', '.bench/**'],
  },

  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...pluginVue.configs['flat/recommended'],

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

  {
    files: ['src-main/engine/**', 'src-main/api/**', 'src-main/cli/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'electron', message: ELECTRON_IS_FOR_THE_SHELL }],
          patterns: [{ group: ['electron/*'], message: ELECTRON_IS_FOR_THE_SHELL }],
        },
      ],
    },
  },
  {
    files: ['src-renderer/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'electron', message: 'The renderer is sandboxed: reach main through window.studio (src/api/client.ts).' }],
          patterns: [{ group: ['node:*'], message: 'The renderer runs in a browser context without Node.' }],
        },
      ],
    },
  },
);

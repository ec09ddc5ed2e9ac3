/**
 * The guard of issue 37: every import of every source file points down the layer table of
 * layers.ts, and no file imports itself back through others. Issue 37 brought both counts to
 * zero; the test keeps them there.
 */
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli';
import { describeViolation, importCycles, layerViolations, unplacedFiles, type Violation } from './check';
import { buildImportGraph, findCycles, importSites, type ImportEdge, type ImportGraph } from './import-graph';

const graph = buildImportGraph(REPO_ROOT);

describe('the import graph of the repository', () => {
  it('places every source file in a layer of the table (and a tiered folder in a tier)', () => {
    expect(graph.files.length).toBeGreaterThan(400);
    expect(unplacedFiles(graph), 'files the layer table does not place').toEqual([]);
  });

  it('has no import cycle', () => {
    const cycles = importCycles(graph).map((cycle) => `import cycle among ${cycle.files.length} files: ${cycle.path.join(' -> ')}${cycle.files.length > cycle.path.length - 1 ? `, and through ${cycle.files.filter((f) => !cycle.path.includes(f)).join(', ')}` : ''}`);
    expect(cycles, 'import cycles (each file imports the next; break one import, usually by moving what both need down a layer)').toEqual([]);
  });

  it('has no import against the layer table (type-only imports included)', () => {
    const violations = layerViolations(graph).map(describeViolation);
    expect(violations, 'imports against test/architecture/layers.ts (move what is shared down a layer, or import it from there)').toEqual([]);
  });
});

describe('reading imports (the parser under the guard)', () => {
  it('finds every form of import, with its line, and nothing in comments or strings', () => {
    const text = [
      "import a from './a';",
      "import type { B } from './b';",
      "import { type C, type D } from './c';",
      "import { e, type F } from './e';",
      "export * from './g';",
      "export { h } from './h';",
      "import i = require('./i');",
      'const j = () => import(',
      "  './j');",
      "type K = import('./k').K;",
      "const l = require('./l');",
      "// import m from './m';",
      "const n = \"import o from './o'\";",
      "import './p.css';",
    ].join('\n');
    const sites = importSites('src-main/x.ts', text).map((s) => `${s.line} ${s.form} ${s.specifier}`);
    expect(sites).toEqual([
      '1 static ./a',
      '2 type-only ./b',
      '3 type-only ./c',
      '4 static ./e',
      '5 export-from ./g',
      '6 export-from ./h',
      '7 require ./i',
      '8 dynamic ./j',
      '10 import-type ./k',
      '11 require ./l',
      '14 static ./p.css',
    ]);
  });

  it("reads a .vue file's script blocks and reports lines of the file", () => {
    const vue = ['<script lang="ts">', "import { x } from './x';", '</script>', '', '<script setup lang="ts">', "import type { Y } from '../y';", "const z = await import('./z');", '</script>', '<template><div>{{ "import w from \'./w\'" }}</div></template>'].join('\n');
    expect(importSites('src-renderer/src/V.vue', vue).map((s) => `${s.line} ${s.form} ${s.specifier}`)).toEqual(['2 static ./x', '6 type-only ../y', '7 dynamic ./z']);
  });

  it('finds each strongly connected group once, with a closed path through it', () => {
    const files = ['a', 'b', 'c', 'd', 'e'];
    const edges = [
      { from: 'a', to: 'b' },
      { from: 'b', to: 'c' },
      { from: 'c', to: 'a' },
      { from: 'c', to: 'd' },
      { from: 'e', to: 'e' },
    ];
    expect(findCycles(files, edges)).toEqual([
      { files: ['a', 'b', 'c'], path: ['a', 'b', 'c', 'a'] },
      { files: ['e'], path: ['e', 'e'] },
    ]);
    // Two cycles sharing a file are one group: the guard keys a known cycle by all its files, so a new cycle inside it is seen.
    const joined = findCycles(['a', 'b', 'c', 'd'], [...edges.slice(0, 4), { from: 'd', to: 'b' }]);
    expect(joined.map((c) => c.files)).toEqual([['a', 'b', 'c', 'd']]);
    expect(findCycles(['a', 'b'], [{ from: 'a', to: 'b' }])).toEqual([]);
  });
});

describe('the layer rules (on imports written for the test)', () => {
  const check = (from: string, target: ImportEdge['target']): Violation[] => {
    const probe: ImportGraph = { root: REPO_ROOT, files: [from], edges: [{ from, target, specifier: 'x', form: 'static', line: 1 }] };
    return layerViolations(probe);
  };
  const file = (f: string): ImportEdge['target'] => ({ kind: 'file', file: f });

  it('lets imports point down and stops those that point up', () => {
    expect(check('src-main/cli/main.ts', file('src-main/api/service.ts'))).toEqual([]);
    expect(check('src-main/api/service.ts', file('src-main/runner/manager.ts'))).toEqual([]);
    expect(check('src-main/runner/manager.ts', file('src-main/engine/store/index.ts'))).toEqual([]);
    expect(check('src-renderer/src/stores/runs.ts', file('src-shared/contract.ts'))).toEqual([]);
    expect(check('test/x.test.ts', file('src-main/cli/main.ts'))).toEqual([]);
    expect(check('src-main/engine/store/runs.ts', file('src-main/api/errors.ts'))[0].rule).toMatch(/^engine may not import api/);
    expect(check('src-main/runner/manager.ts', file('src-main/api/hub.ts'))[0].rule).toMatch(/^runner may not import api/);
    expect(check('src-main/server/server.ts', file('src-main/electron/csp.ts'))[0].rule).toMatch(/^server may not import electron/);
    expect(check('src-main/engine/x.ts', file('src-preload/bridge.ts'))[0].rule).toMatch(/^engine may not import preload/);
    expect(check('src-renderer/src/charts/x.ts', file('src-main/engine/metrics/catalog.ts'))[0].rule).toMatch(/^renderer may not import engine/);
    expect(check('src-shared/x.ts', file('src-main/engine/store/types.ts'))[0].rule).toMatch(/^shared may not import engine/);
    expect(check('src-main/cli/commands/x.ts', file('bench/store.ts'))[0].rule).toMatch(/^cli may not import bench/);
    expect(check('src-main/engine/x.ts', file('test/helpers/tmp.ts'))[0].rule).toMatch(/^engine may not import tooling/);
  });

  it('ranks the folders inside the engine and the renderer', () => {
    expect(check('src-main/engine/training/trainer.ts', file('src-main/engine/model/gpt.ts'))).toEqual([]);
    expect(check('src-main/engine/model/gpt.ts', file('src-main/engine/training/trainer.ts'))[0].rule).toMatch(/^model may not import training, a higher tier/);
    expect(check('src-main/engine/compare/x.ts', file('src-main/engine/export/y.ts'))[0].rule).toMatch(/^compare may not import export, the same tier/);
    expect(check('src-renderer/src/util/x.ts', file('src-renderer/src/stores/runs.ts'))[0].rule).toMatch(/^util may not import stores/);
    expect(check('src-renderer/src/views/V.vue', file('src-renderer/src/stores/runs.ts'))).toEqual([]);
  });

  it('keeps Node out of the browser side, electron in the shell and every package out of src-shared', () => {
    expect(check('src-renderer/src/util/x.ts', { kind: 'builtin', name: 'fs' })[0].rule).toMatch(/^renderer may not import a Node built-in/);
    expect(check('src-renderer/src/util/x.ts', { kind: 'package', name: 'electron' })[0].rule).toMatch(/^renderer may not import the package electron/);
    expect(check('src-preload/index.ts', { kind: 'package', name: 'electron' })).toEqual([]);
    expect(check('src-main/electron/app.ts', { kind: 'package', name: 'electron' })).toEqual([]);
    expect(check('src-main/engine/x.ts', { kind: 'package', name: 'electron' })[0].rule).toMatch(/^engine may not import the package electron/);
    expect(check('src-shared/x.ts', { kind: 'package', name: 'zod' })[0].rule).toMatch(/^shared may not import the package zod/);
    expect(check('src-main/engine/x.ts', { kind: 'package', name: 'zod' })).toEqual([]);
  });
});

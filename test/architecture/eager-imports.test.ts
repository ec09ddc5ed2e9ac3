/**
 * What each entry point loads before it does anything. The tensor backend (TensorFlow.js and its
 * Wasm), the tokenizers, the Ray client and the Parquet writer cost most of a process's start-up
 * (each `marsrl` command and run worker starts from source through tsx); the code that needs them
 * loads them on first use, with `import()`. Listing runs once loaded all of them, because the API
 * service imported every area eagerly: 1.6 s and 160 MB for `marsrl runs` where 0.85 s and 113 MB
 * do (`npm run bench -- cli` measures it). These checks keep the eager graph so.
 *
 * Only imports that run when the file is loaded count: static ones and `export … from`; a
 * type-only import is erased, an `import()` runs when it is called.
 */
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli';
import { buildImportGraph, type ImportEdge, type ImportGraph } from './import-graph';

const EAGER_FORMS = new Set<ImportEdge['form']>(['static', 'export-from', 'require']);

/** The packages a file loads with it, and through which chain of files the first of each comes. */
function eagerPackages(graph: Pick<ImportGraph, 'edges'>, entry: string): Map<string, string[]> {
  const byFile = new Map<string, ImportEdge[]>();
  for (const edge of graph.edges) {
    const edges = byFile.get(edge.from);
    if (edges) edges.push(edge);
    else byFile.set(edge.from, [edge]);
  }
  const via = new Map<string, string[]>([[entry, [entry]]]);
  const packages = new Map<string, string[]>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const edge of byFile.get(file) ?? []) {
      if (!EAGER_FORMS.has(edge.form)) continue;
      const chain = via.get(file)!;
      if (edge.target.kind === 'package' && !packages.has(edge.target.name)) packages.set(edge.target.name, chain);
      if (edge.target.kind === 'file' && !via.has(edge.target.file)) {
        via.set(edge.target.file, [...chain, edge.target.file]);
        queue.push(edge.target.file);
      }
    }
  }
  return packages;
}

/** Packages matching `banned`, each with the import chain that brings it. */
function bannedLoads(graph: ImportGraph, entry: string, banned: RegExp): string[] {
  return [...eagerPackages(graph, entry)].filter(([name]) => banned.test(name)).map(([name, chain]) => `${name} via ${chain.join(' -> ')}`);
}

const HEAVY = /^(@tensorflow\/|@huggingface\/|hyparquet-writer$|ws$)/;
const TENSORS = /^(@tensorflow\/|@huggingface\/)/;

describe('what an entry point loads before it runs', () => {
  const graph = buildImportGraph(REPO_ROOT);

  it('`marsrl runs` and `show` (and the API service every surface builds) load no tensor backend, tokenizer, Ray client or Parquet writer', () => {
    for (const entry of ['src-main/cli/commands/runs.ts', 'src-main/api/service.ts', 'src-main/cli/main.ts']) {
      expect(bannedLoads(graph, entry, HEAVY), entry).toEqual([]);
    }
  });

  it('the run manager and the run worker load no tensor backend until a run of the Studio’s own models needs one', () => {
    for (const entry of ['src-main/runner/manager.ts', 'src-main/runner/worker.ts']) {
      expect(bannedLoads(graph, entry, TENSORS), entry).toEqual([]);
    }
  });

  it('sees the tensor backend where it is loaded eagerly (the check can fail)', () => {
    expect([...eagerPackages(graph, 'src-main/engine/training/trainer.ts').keys()]).toContain('@tensorflow/tfjs-core');
  });
});

describe('the eager closure (the walk under the checks)', () => {
  const edge = (from: string, form: ImportEdge['form'], target: ImportEdge['target']): ImportEdge => ({ from, form, target, specifier: '', line: 1 });
  const file = (f: string) => ({ kind: 'file' as const, file: f });
  const pkg = (name: string) => ({ kind: 'package' as const, name });

  it('follows static imports and re-exports, with the chain that brings each package, and stops at import() and type-only imports', () => {
    const edges = [
      edge('a', 'static', file('b')),
      edge('b', 'export-from', file('c')),
      edge('c', 'static', pkg('zod')),
      edge('a', 'dynamic', file('d')),
      edge('d', 'static', pkg('@tensorflow/tfjs-core')),
      edge('b', 'type-only', pkg('@huggingface/tokenizers')),
      edge('c', 'static', file('a')),
    ];
    expect(Object.fromEntries(eagerPackages({ edges }, 'a'))).toEqual({ zod: ['a', 'b', 'c'] });
  });
});

/**
 * The layer table (layers.ts) applied to the import graph (import-graph.ts): every import that
 * goes against it, every import cycle, and the figures issue 37 reports (upward imports, cycles,
 * engine folders that import each other). Shared by the guard test and report.ts.
 */
import { buildImportGraph, findCycles, type ImportCycle, type ImportEdge, type ImportGraph } from './import-graph';
import { LAYERS, TIERS, type Layer, type Tiers } from './layers';

export interface Violation {
  from: string;
  /** A repository file, or `package:NAME` / `node:NAME`. */
  to: string;
  line: number;
  specifier: string;
  form: ImportEdge['form'];
  rule: string;
}

/** The layer a file belongs to (the longest matching path), or null. */
export function layerOf(file: string, layers: Layer[] = LAYERS): Layer | null {
  let best: Layer | null = null;
  let bestLength = -1;
  for (const layer of layers) {
    for (const p of layer.paths) {
      const matches = p.endsWith('/') ? file.startsWith(p) : file === p;
      if (matches && p.length > bestLength) {
        best = layer;
        bestLength = p.length;
      }
    }
  }
  return best;
}

/** The unit a file is ranked by inside a tiered layer (first segment under the root, without extension), or null outside it. */
export function unitOf(file: string, tiers: Tiers): string | null {
  if (!file.startsWith(tiers.root)) return null;
  const first = file.slice(tiers.root.length).split('/')[0];
  return first.replace(/(\.d)?\.(ts|vue|mts|mjs|js|css)$/, '');
}

function tierIndex(unit: string, tiers: Tiers): number {
  return tiers.tiers.findIndex((tier) => tier.includes(unit));
}

function packageAllowed(layer: Layer, target: { kind: 'package' | 'builtin'; name: string }): boolean {
  if (layer.alsoPackages?.includes(target.name)) return true;
  switch (layer.packages) {
    case 'nothing':
      return false;
    case 'browser':
      return target.kind === 'package' && target.name !== 'electron';
    case 'no-electron':
      return target.name !== 'electron';
    case 'anything':
      return true;
  }
}

/** Every file no layer claims, and every file of a tiered layer in no tier. */
export function unplacedFiles(graph: ImportGraph): string[] {
  const out: string[] = [];
  for (const file of graph.files) {
    const layer = layerOf(file);
    if (layer === null) {
      out.push(`${file}: in no layer of test/architecture/layers.ts (LAYERS): add its folder to the layer it belongs to`);
      continue;
    }
    for (const tiers of TIERS) {
      const unit = unitOf(file, tiers);
      if (tiers.layer === layer.name && unit !== null && tierIndex(unit, tiers) < 0) {
        out.push(`${file}: "${unit}" is in no tier of ${tiers.root} (test/architecture/layers.ts): rank it among the tiers`);
      }
    }
  }
  return out;
}

/** Every import against the layer table, the tiers or the package rules. */
export function layerViolations(graph: ImportGraph): Violation[] {
  const out: Violation[] = [];
  for (const edge of graph.edges) {
    const layer = layerOf(edge.from);
    if (layer === null) continue;
    const site = { from: edge.from, line: edge.line, specifier: edge.specifier, form: edge.form };
    const target = edge.target;
    if (target.kind === 'unresolved') {
      out.push({ ...site, to: edge.specifier, rule: 'the import resolves to no file (a typo, or a file moved without its importers)' });
    } else if (target.kind === 'package' || target.kind === 'builtin') {
      if (!packageAllowed(layer, target)) {
        const to = `${target.kind === 'builtin' ? 'node' : 'package'}:${target.name}`;
        out.push({ ...site, to, rule: `${layer.name} may not import ${target.kind === 'builtin' ? 'a Node built-in' : `the package ${target.name}`}: ${layer.why}` });
      }
    } else {
      const toLayer = layerOf(target.file);
      if (toLayer === null) continue;
      if (toLayer !== layer) {
        if (layer.mayImport !== '*' && !layer.mayImport.includes(toLayer.name)) {
          out.push({ ...site, to: target.file, rule: `${layer.name} may not import ${toLayer.name}: ${layer.why}` });
        }
        continue;
      }
      for (const tiers of TIERS) {
        if (tiers.layer !== layer.name) continue;
        const fromUnit = unitOf(edge.from, tiers);
        const toUnit = unitOf(target.file, tiers);
        if (fromUnit === null || toUnit === null || fromUnit === toUnit) continue;
        const fromTier = tierIndex(fromUnit, tiers);
        const toTier = tierIndex(toUnit, tiers);
        if (fromTier >= 0 && toTier >= 0 && toTier >= fromTier) {
          const where = toTier === fromTier ? 'the same tier' : 'a higher tier';
          out.push({ ...site, to: target.file, rule: `${fromUnit} may not import ${toUnit}, ${where}: ${tiers.why}` });
        }
      }
    }
  }
  return out;
}

/** The file-to-file edges of the graph. */
export function fileEdges(graph: ImportGraph): { from: string; to: string }[] {
  return graph.edges.flatMap((edge) => (edge.target.kind === 'file' ? [{ from: edge.from, to: edge.target.file }] : []));
}

export function importCycles(graph: ImportGraph): ImportCycle[] {
  return findCycles(graph.files, fileEdges(graph));
}

/** Pairs of engine folders that import each other, with the number of imports each way. */
export function mutualEngineFolders(graph: ImportGraph): { a: string; b: string; ab: number; ba: number }[] {
  const engine = TIERS.find((t) => t.layer === 'engine')!;
  const count = new Map<string, number>();
  for (const { from, to } of fileEdges(graph)) {
    const a = unitOf(from, engine);
    const b = unitOf(to, engine);
    if (a !== null && b !== null && a !== b) count.set(`${a} ${b}`, (count.get(`${a} ${b}`) ?? 0) + 1);
  }
  const out: { a: string; b: string; ab: number; ba: number }[] = [];
  for (const [key, ab] of count) {
    const [a, b] = key.split(' ');
    const ba = count.get(`${b} ${a}`);
    if (ba !== undefined && a < b) out.push({ a, b, ab, ba });
  }
  return out.sort((x, y) => x.a.localeCompare(y.a) || x.b.localeCompare(y.b));
}

export function describeViolation(v: Violation): string {
  return `${v.from}:${v.line} imports ${v.to} (${v.form} '${v.specifier}') — ${v.rule}`;
}

export { buildImportGraph };

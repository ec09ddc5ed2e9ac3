/**
 * The figures of issue 37 for a checkout: import cycles, imports against the layer table (each
 * import statement, and the distinct file pairs), and engine folders that import each other.
 *
 *   node --import tsx test/architecture/report.ts [REPO_ROOT] [--list]
 *
 * REPO_ROOT defaults to this checkout; another one (an older commit's `git worktree`) is read
 * with this checkout's table, so figures before and after a change are counted the same way.
 */
import path from 'node:path';
import { buildImportGraph, describeViolation, importCycles, layerViolations, mutualEngineFolders, unplacedFiles } from './check';

const args = process.argv.slice(2);
const root = path.resolve(args.find((a) => !a.startsWith('--')) ?? path.join(import.meta.dirname, '..', '..'));
const list = args.includes('--list');

const graph = buildImportGraph(root);
const violations = layerViolations(graph);
const cycles = importCycles(graph);
const mutual = mutualEngineFolders(graph);
const pairs = new Set(violations.map((v) => `${v.from} ${v.to}`));
const unplaced = unplacedFiles(graph);

console.log(`${root}: ${graph.files.length} files, ${graph.edges.length} imports`);
console.log(`import cycles: ${cycles.length} groups of files that import each other, ${cycles.reduce((n, c) => n + c.files.length, 0)} files`);
for (const cycle of cycles) console.log(`  ${cycle.files.length} files: ${cycle.path.join(' -> ')}${cycle.files.length > cycle.path.length - 1 ? ` (and ${cycle.files.filter((f) => !cycle.path.includes(f)).join(', ')})` : ''}`);
console.log(`imports against the layer table: ${violations.length} (${pairs.size} file pairs)`);
if (list) for (const v of violations) console.log(`  ${describeViolation(v)}`);
console.log(`engine folders that import each other: ${mutual.length}`);
for (const m of mutual) console.log(`  ${m.a} -> ${m.b} ${m.ab}, ${m.b} -> ${m.a} ${m.ba}`);
if (unplaced.length > 0) console.log(`files in no layer or tier: ${unplaced.length}${list ? `\n  ${unplaced.join('\n  ')}` : ''}`);

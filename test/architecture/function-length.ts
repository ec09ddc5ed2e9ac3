/**
 * Functions longer than a budget (issue 37: "no function over 150 lines in src"). Every function
 * form TypeScript has (declarations, methods, accessors, constructors, function expressions and
 * arrow functions) in the shipped sources, .vue script blocks included, measured from its first
 * to its last line. A function nested in another counts on its own, and also inside its parent.
 *
 *   node --import tsx test/architecture/function-length.ts [REPO_ROOT] [--over N]
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { listSourceFiles, vueScripts } from './import-graph';

/** The shipped sources: what users run. Tests, benches and scripts are not held to the budget. */
export const SHIPPED_ROOTS = ['src-shared/', 'src-preload/', 'src-main/', 'src-renderer/'];

export interface LongFunction {
  file: string;
  name: string;
  line: number;
  lines: number;
}

function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const named = (node as { name?: ts.Node }).name;
  if (named) return named.getText(source);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(source);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(source);
  if (parent && ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(source).slice(0, 40)})`;
  return '(anonymous)';
}

export function functionsOf(file: string, code: string, lineOffset: number, over: number): LongFunction[] {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > over) found.push({ file, name: nameOf(node, source), line: first + 1 + lineOffset, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every shipped function longer than `over` lines, longest first. */
export function longFunctions(root: string, over = 150): LongFunction[] {
  const out: LongFunction[] = [];
  for (const file of listSourceFiles(root).filter((f) => SHIPPED_ROOTS.some((r) => f.startsWith(r)))) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    const blocks = file.endsWith('.vue') ? vueScripts(file, text) : [{ code: text, lineOffset: 0 }];
    for (const block of blocks) out.push(...functionsOf(file, block.code, block.lineOffset, over));
  }
  return out.sort((a, b) => b.lines - a.lines);
}

if (process.argv[1] && import.meta.filename === path.resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  const overAt = args.indexOf('--over');
  const over = overAt >= 0 ? Number(args[overAt + 1]) : 150;
  const root = path.resolve(args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--over') ?? path.join(import.meta.dirname, '..', '..'));
  const long = longFunctions(root, over);
  console.log(`${root}: ${long.length} shipped functions over ${over} lines`);
  for (const f of long) console.log(`  ${f.lines}  ${f.file}:${f.line}  ${f.name}`);
}

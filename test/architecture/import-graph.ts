/**
 * The repository's file graph as TypeScript reads it (issue 37): every import of every source
 * file — static, type-only, `export … from`, `import x = require()`, `require()`, dynamic
 * `import()` and `import('…')` types — found by walking each file's syntax tree, never by
 * matching text, so a specifier inside a comment or a string does not count and none written
 * over several lines is missed. A .vue file's <script> and <script setup> blocks are parsed the
 * same way (the template cannot import).
 *
 * A specifier is resolved the way the bundler and tsx resolve it here: a relative path with or
 * without its extension (`.js` naming a `.ts` source too) or a folder's index, the package's own
 * subpath imports (`#shared/…`, package.json `imports`), else a package or a Node built-in.
 */
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';
import { parse as parseSfc } from 'vue/compiler-sfc';

/** The folders (and root files) whose sources make up the graph, relative to the repository root. */
export const SOURCE_ROOTS = ['src-shared', 'src-preload', 'src-main', 'src-renderer', 'bench', 'bin', 'scripts', 'test'];

const SOURCE_EXTENSIONS = ['.ts', '.mts', '.cts', '.vue', '.mjs', '.cjs', '.js'];
/** What a relative specifier without an extension may name, tried in this order (as the bundler does). */
const RESOLVE_EXTENSIONS = ['.ts', '.mts', '.vue', '.d.ts', '.mjs', '.js', '.cjs'];
const SKIP_FOLDERS = new Set(['node_modules', 'out', 'dist', '.native', 'coverage', 'fixtures', '.bench', 'bench-results', 'test-results']);

export type ImportForm = 'static' | 'type-only' | 'export-from' | 'dynamic' | 'import-type' | 'require';

/** One import as written: the specifier, its form and the line it is on (1-based). */
export interface ImportSite {
  specifier: string;
  form: ImportForm;
  line: number;
}

/** Where an import leads: a file of the repository, a package, or a Node built-in. */
export type ImportTarget =
  | { kind: 'file'; file: string }
  | { kind: 'package'; name: string }
  | { kind: 'builtin'; name: string }
  | { kind: 'unresolved' };

export interface ImportEdge extends ImportSite {
  from: string;
  target: ImportTarget;
}

export interface ImportGraph {
  root: string;
  /** Every source file, repository-relative with forward slashes, sorted. */
  files: string[];
  edges: ImportEdge[];
}

/** Every source file under the roots, plus the root's own *.config.* files. */
export function listSourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!SKIP_FOLDERS.has(entry.name) && !entry.name.startsWith('.')) walk(rel);
      } else if (entry.isFile() && SOURCE_EXTENSIONS.some((ext) => entry.name.endsWith(ext))) {
        out.push(rel);
      }
    }
  };
  for (const folder of SOURCE_ROOTS) {
    if (fs.existsSync(path.join(root, folder))) walk(folder);
  }
  for (const entry of fs.readdirSync(root)) {
    if (/\.config\.(ts|mts|js|mjs)$/.test(entry)) out.push(entry);
  }
  return out.sort();
}

/** The script blocks of a .vue file, each with the line it starts on (to report lines of the file). */
export function vueScripts(file: string, text: string): { code: string; lineOffset: number; lang: string }[] {
  const { descriptor, errors } = parseSfc(text, { filename: file });
  if (errors.length > 0) throw new Error(`${file}: the .vue file does not parse: ${String(errors[0])}`);
  return [descriptor.script, descriptor.scriptSetup]
    .filter((block) => block !== null)
    .map((block) => ({ code: block.content, lineOffset: block.loc.start.line - 1, lang: block.lang ?? 'js' }));
}

function scriptKind(file: string, lang?: string): ts.ScriptKind {
  if (lang !== undefined) return lang === 'ts' || lang === 'tsx' ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  return /\.(ts|mts|cts)$/.test(file) ? ts.ScriptKind.TS : ts.ScriptKind.JS;
}

function stringArgument(node: ts.Node | undefined): string | null {
  return node !== undefined && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : null;
}

/** Every import site of one parsed script, walking the whole tree (imports inside functions too). */
function sitesOfSource(source: ts.SourceFile, lineOffset: number): ImportSite[] {
  const sites: ImportSite[] = [];
  const add = (specifier: string | null, form: ImportForm, node: ts.Node): void => {
    if (specifier === null) return;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 + lineOffset;
    sites.push({ specifier, form, line });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((element) => element.isTypeOnly)));
      add(stringArgument(node.moduleSpecifier), typeOnly ? 'type-only' : 'static', node);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
      add(stringArgument(node.moduleSpecifier), 'export-from', node);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(stringArgument(node.moduleReference.expression), 'require', node);
    } else if (ts.isCallExpression(node)) {
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword) add(stringArgument(node.arguments[0]), 'dynamic', node);
      else if (ts.isIdentifier(node.expression) && node.expression.text === 'require') add(stringArgument(node.arguments[0]), 'require', node);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(stringArgument(node.argument.literal), 'import-type', node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sites;
}

/** Every import site of a file's text (a .vue file's script blocks; anything else whole). */
export function importSites(file: string, text: string): ImportSite[] {
  const blocks = file.endsWith('.vue') ? vueScripts(file, text) : [{ code: text, lineOffset: 0, lang: undefined }];
  return blocks.flatMap((block) => {
    const source = ts.createSourceFile(file, block.code, ts.ScriptTarget.Latest, true, scriptKind(file, block.lang));
    return sitesOfSource(source, block.lineOffset);
  });
}

const BUILTINS = new Set(builtinModules);

/** package.json `imports` (`"#shared/*": "./src-shared/*.ts"`), as pattern → target pairs. */
function subpathImports(root: string): [string, string][] {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { imports?: Record<string, unknown> };
  return Object.entries(pkg.imports ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
}

function resolveFile(root: string, candidate: string): string | null {
  const tries = [candidate, ...RESOLVE_EXTENSIONS.map((ext) => candidate + ext), ...RESOLVE_EXTENSIONS.map((ext) => `${candidate}/index${ext}`)];
  // `./x.js` names the TypeScript source `./x.ts` (the ESM convention tsc and tsx both accept).
  if (/\.(m|c)?js$/.test(candidate)) tries.push(candidate.replace(/\.(m|c)?js$/, (ext) => ext.replace('js', 'ts')));
  for (const rel of tries) {
    const abs = path.join(root, rel);
    if (fs.existsSync(abs) && fs.statSync(abs).isFile()) return path.relative(root, abs).split(path.sep).join('/');
  }
  return null;
}

/** Where a specifier written in `from` leads. */
export function resolveImport(root: string, from: string, specifier: string, imports = subpathImports(root)): ImportTarget {
  if (specifier.startsWith('.') || specifier.startsWith('/')) {
    const file = resolveFile(root, path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier)));
    return file === null ? { kind: 'unresolved' } : { kind: 'file', file };
  }
  if (specifier.startsWith('#')) {
    for (const [pattern, target] of imports) {
      const star = pattern.indexOf('*');
      const matched = star < 0 ? (specifier === pattern ? '' : null) : specifier.startsWith(pattern.slice(0, star)) && specifier.endsWith(pattern.slice(star + 1)) ? specifier.slice(star, specifier.length - (pattern.length - star - 1)) : null;
      if (matched === null) continue;
      const file = resolveFile(root, path.posix.normalize(target.replace('*', matched)));
      return file === null ? { kind: 'unresolved' } : { kind: 'file', file };
    }
    return { kind: 'unresolved' };
  }
  const bare = specifier.startsWith('node:') ? specifier.slice('node:'.length) : specifier;
  if (specifier.startsWith('node:') || BUILTINS.has(bare) || BUILTINS.has(bare.split('/')[0])) return { kind: 'builtin', name: bare.split('/')[0] };
  const parts = specifier.split('/');
  return { kind: 'package', name: specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0] };
}

/** The whole graph of the repository at `root`. */
export function buildImportGraph(root: string): ImportGraph {
  const files = listSourceFiles(root);
  const imports = subpathImports(root);
  const edges: ImportEdge[] = [];
  for (const from of files) {
    for (const site of importSites(from, fs.readFileSync(path.join(root, from), 'utf8'))) {
      edges.push({ ...site, from, target: resolveImport(root, from, site.specifier, imports) });
    }
  }
  return { root, files, edges };
}

/**
 * A group of files that import each other (a strongly connected component of the file graph:
 * more than one file, or a file importing itself): its files, sorted, and one closed path through
 * it to show how, from its first file back to it.
 */
export interface ImportCycle {
  files: string[];
  path: string[];
}

/** Every import cycle of the graph, as its strongly connected group. */
export function findCycles(files: string[], edges: { from: string; to: string }[]): ImportCycle[] {
  const next = new Map<string, string[]>(files.map((file) => [file, []]));
  for (const { from, to } of edges) next.get(from)?.push(to);
  for (const list of next.values()) list.sort();
  // Tarjan's strongly connected components, iteratively (deep import chains would overflow the stack).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const start of files) {
    if (index.has(start)) continue;
    const work: [string, number][] = [[start, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, i] = frame;
      if (i === 0 && !index.has(node)) {
        index.set(node, counter);
        low.set(node, counter);
        counter++;
        stack.push(node);
        onStack.add(node);
      }
      const targets = next.get(node) ?? [];
      if (i < targets.length) {
        frame[1]++;
        const to = targets[i];
        if (!index.has(to)) work.push([to, 0]);
        else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent)!, low.get(node)!));
      }
      if (low.get(node) === index.get(node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        const selfLoop = (next.get(node) ?? []).includes(node);
        if (component.length > 1 || selfLoop) components.push(component.sort());
      }
    }
  }
  return components.map((component) => ({ files: component, path: cycleThrough(component, next) })).sort((a, b) => a.files[0].localeCompare(b.files[0]));
}

/** One closed path through a strongly connected component, from its first file back to it (breadth-first: a shortest one). */
function cycleThrough(component: string[], next: Map<string, string[]>): string[] {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of next.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0])!);
        return [...path, start];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

/**
 * Serving the built renderer (out/renderer): index.html and hashed assets, nothing outside the
 * folder, and a page that says what to run when the renderer has not been built.
 */
import fs from 'node:fs';
import path from 'node:path';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
};

export interface StaticFile {
  body: Buffer;
  contentType: string;
  /** Vite names assets by content hash, so they never change under the same name. */
  immutable: boolean;
}

/**
 * The file a URL path names inside `rootDir`, or null. Percent-decoding happens before the
 * containment check, so `%2e%2e/` cannot climb out; dot-files are never served.
 */
export function resolveStaticPath(rootDir: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const relative = decoded === '/' ? 'index.html' : decoded.replace(/^\/+/, '');
  if (relative.split('/').some((part) => part.startsWith('.'))) return null;
  const root = path.resolve(rootDir);
  const file = path.resolve(root, relative);
  if (file !== root && !file.startsWith(root + path.sep)) return null;
  return file;
}

export function readStaticFile(rootDir: string, urlPath: string): StaticFile | null {
  const file = resolveStaticPath(rootDir, urlPath);
  if (!file) return null;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return null;
  }
  if (!stat.isFile()) return null;
  return {
    body: fs.readFileSync(file),
    contentType: CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
    immutable: urlPath.startsWith('/assets/'),
  };
}

export function rendererBuilt(rendererDir: string | null | undefined): boolean {
  return !!rendererDir && fs.existsSync(path.join(rendererDir, 'index.html'));
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A minimal page with no inline style or script, so the strict CSP holds for it too. */
export function messagePage(title: string, paragraphs: string[]): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="dark light">',
    `<title>${escapeHtml(title)} · MarsRL Studio</title></head>`,
    `<body><h1>${escapeHtml(title)}</h1>`,
    ...paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    '</body></html>',
  ].join('\n');
}

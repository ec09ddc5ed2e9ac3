// Serves the built renderer (out/renderer) on loopback with fake-studio.js injected ahead of the
// app, so the window can be opened and screenshotted in a plain browser. Test-only.
//   npx electron-vite build && node test/electron/harness/serve-renderer.mjs [port]
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const here = import.meta.dirname;
const rendererDir = path.resolve(here, '../../../out/renderer');
const port = Number(process.argv[2] ?? 4173);
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' };

const server = http.createServer((request, response) => {
  const { pathname } = new URL(request.url ?? '/', 'http://127.0.0.1');
  const file =
    pathname === '/__harness/fake-studio.js'
      ? path.join(here, 'fake-studio.js')
      : path.join(rendererDir, pathname === '/' ? 'index.html' : pathname);
  if (!file.startsWith(rendererDir) && !file.startsWith(here)) {
    response.writeHead(403).end();
    return;
  }
  fs.readFile(file, (error, body) => {
    if (error) {
      response.writeHead(404).end();
      return;
    }
    let content = body;
    if (file.endsWith('index.html')) {
      // A classic script runs before the deferred module scripts, so window.studio is in place
      // when the app starts; it is same-origin, so the app's own CSP lets it run.
      content = body.toString('utf8').replace('<script type="module"', '<script src="./__harness/fake-studio.js"></script>\n    <script type="module"');
    }
    response.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(content);
  });
});
server.listen(port, '127.0.0.1', () => console.log(`renderer harness on http://127.0.0.1:${port}/`));

/**
 * `GET /`, `/assets/*`: the built renderer, so the Studio's UI runs in any browser; a page that
 * says what to run when it has not been built.
 */
import type http from 'node:http';
import { send, sendPage } from './responses';
import { readStaticFile, rendererBuilt } from './static-files';

export function serveRenderer(request: http.IncomingMessage, response: http.ServerResponse, url: URL, rendererDir: string | null | undefined): void {
  const head = request.method === 'HEAD';
  if (request.method !== 'GET' && !head) {
    send(response, 405, { Allow: 'GET, HEAD' });
    return;
  }
  if (!rendererBuilt(rendererDir)) {
    sendPage(response, 503, 'The interface is not built', [
      'This server answers the API, but the browser interface has not been built yet.',
      'In the MarsRL Studio folder run: npm run build   (then reload this page)',
    ], head);
    return;
  }
  const file = readStaticFile(rendererDir as string, url.pathname);
  if (!file) {
    sendPage(response, 404, 'Not found', [`Nothing is served at ${url.pathname}.`], head);
    return;
  }
  send(
    response,
    200,
    { 'Content-Type': file.contentType, 'Cache-Control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache' },
    head ? undefined : file.body,
  );
}

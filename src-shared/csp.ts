/**
 * The Content Security Policy of the renderer, in one place for every place that needs it: the
 * <meta> tag in src-renderer/index.html (the only channel that works for file:// pages), the
 * response header Electron's main adds for http(s) pages (the dev server), the header `marsrl
 * serve` sends with every page, and the dev-only variant the build config swaps into the meta
 * tag. A test keeps index.html in step with this function. It is in src-shared (pure, no
 * imports) because the desktop shell and the HTTP server both need it and neither may import the
 * other.
 *
 * The renderer needs nothing from anywhere else: no remote scripts, styles, fonts or images,
 * and no network (it talks to main over IPC). 'unsafe-inline' is kept out of style-src because
 * Vue applies :style bindings through the CSSOM, which CSP does not police; only markup style
 * attributes and <style> elements would need it.
 */
export interface CspOptions {
  /** The Vite dev server injects component CSS as <style> elements and talks over a websocket. */
  dev?: boolean;
  /**
   * frame-ancestors is ignored (with a console error) when delivered by a meta tag, so it is
   * only sent as a header.
   */
  delivery?: 'meta' | 'header';
}

export function contentSecurityPolicy({ dev = false, delivery = 'header' }: CspOptions = {}): string {
  const directives: Array<[string, string[]]> = [
    ['default-src', ["'self'"]],
    ['script-src', ["'self'"]],
    ['style-src', dev ? ["'self'", "'unsafe-inline'"] : ["'self'"]],
    ['img-src', ["'self'", 'data:']],
    ['font-src', ["'self'"]],
    ['connect-src', dev ? ["'self'", 'ws://localhost:*', 'ws://127.0.0.1:*'] : ["'self'"]],
    ['object-src', ["'none'"]],
    ['base-uri', ["'none'"]],
    ['form-action', ["'none'"]],
  ];
  if (delivery === 'header') directives.push(['frame-ancestors', ["'none'"]]);
  return directives.map(([name, sources]) => `${name} ${sources.join(' ')}`).join('; ');
}

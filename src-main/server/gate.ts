/**
 * The door of `marsrl serve` every HTTP request passes first (the rules are security.ts's): the
 * Host must name this server, the printed login URL trades its token for a cookie, API calls must
 * come from this server's own pages, and off loopback every request carries the token.
 */
import type http from 'node:http';
import { sendJson, send, sendPage } from './responses';
import { authorized, hostAllowed, originAllowed, tokenCookie, tokensMatch, type RequestHeaders, type SecurityPolicy } from './security';

/** The request's URL when it may go on to its route; null when the gate has answered it. */
export function admit(request: http.IncomingMessage, response: http.ServerResponse, policy: SecurityPolicy): URL | null {
  const headers = request.headers as RequestHeaders;
  if (!hostAllowed(headers, policy)) {
    sendPage(response, 421, 'Wrong host', [`This server only answers requests addressed to it by its own name, not to the Host ${JSON.stringify(String(headers.host ?? ''))}. Open the URL marsrl serve printed.`]);
    return null;
  }
  let url: URL;
  try {
    url = new URL(request.url ?? '/', 'http://server.invalid');
  } catch {
    sendPage(response, 400, 'Bad request', ['The request URL is malformed.']);
    return null;
  }
  const isApi = url.pathname.startsWith('/api/');
  if (!isApi && loggedIn(request, response, url, policy)) return null;
  if (isApi && !originAllowed(headers)) {
    sendJson(response, 403, { code: 'invalid_request', message: `cross-origin requests are refused (Origin ${JSON.stringify(String(headers.origin ?? ''))} is not this server); call the API from the page marsrl serve printed, or from a client that sends no Origin` });
    return null;
  }
  if (!authorized(headers, policy)) {
    refuseWithoutToken(request, response, isApi);
    return null;
  }
  return url;
}

/**
 * The printed URL carries the token once; it is traded for a cookie and stripped at once, so it
 * does not linger in the address bar, the history or a screenshot. True when this answered.
 */
function loggedIn(request: http.IncomingMessage, response: http.ServerResponse, url: URL, policy: SecurityPolicy): boolean {
  const loginToken = url.searchParams.get('token');
  const { token } = policy;
  if (loginToken === null || token === null || (request.method !== 'GET' && request.method !== 'HEAD')) return false;
  if (!tokensMatch(loginToken, token)) {
    sendPage(response, 401, 'Wrong token', ['The token in this URL does not match. Copy the URL printed by marsrl serve again.']);
    return true;
  }
  url.searchParams.delete('token');
  response.setHeader('Set-Cookie', tokenCookie(token, policy.port));
  send(response, 303, { Location: `${url.pathname}${url.search}`, 'Cache-Control': 'no-store' });
  return true;
}

function refuseWithoutToken(request: http.IncomingMessage, response: http.ServerResponse, isApi: boolean): void {
  if (isApi) {
    sendJson(response, 401, { code: 'invalid_request', message: 'this server needs its access token (Authorization: Bearer TOKEN, or open the URL marsrl serve printed)' });
    return;
  }
  sendPage(response, 401, 'Access token needed', [
    'This MarsRL Studio server is protected by an access token.',
    'Open the full URL that marsrl serve printed when it started (it ends in ?token=…); it logs this browser in.',
  ], request.method === 'HEAD');
}

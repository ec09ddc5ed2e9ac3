/**
 * `POST /api/<method>`: a JSON array of arguments in, `{ result }` or a StudioErrorShape out. The
 * method and its arguments are checked by the dispatcher every transport shares (api/dispatch.ts).
 */
import type http from 'node:http';
import type { StudioApi, StudioErrorShape } from '#shared/contract';
import { toErrorShape } from '#shared/errors';
import { callStudio } from '../api/dispatch';
import { readBody } from './body';
import { send, sendJson } from './responses';

export interface ApiRoute {
  service: StudioApi;
  /** Largest request body accepted, in bytes. */
  maxBody: number;
  log: (line: string) => void;
}

const HTTP_STATUS: Record<StudioErrorShape['code'], number> = {
  invalid_request: 400,
  not_found: 404,
  conflict: 409,
  internal: 500,
};

/** What readArguments returns once it has answered the request itself. */
const NOT_READ = Symbol('answered');

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly shape: StudioErrorShape,
  ) {
    super(shape.message);
  }
}

export async function handleApiCall(request: http.IncomingMessage, response: http.ServerResponse, method: string, route: ApiRoute): Promise<void> {
  if (request.method !== 'POST') {
    send(response, 405, { Allow: 'POST', 'Content-Type': 'application/json; charset=utf-8' }, JSON.stringify({ code: 'invalid_request', message: 'API calls are POST requests' }));
    return;
  }
  const contentType = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (contentType !== 'application/json') {
    // A cross-site form can only send "simple" content types; demanding JSON forces a CORS
    // preflight, which this server never answers.
    request.resume();
    sendJson(response, 415, { code: 'invalid_request', message: 'API calls must send Content-Type: application/json' });
    return;
  }
  const args = await readArguments(request, response, route.maxBody);
  if (args === NOT_READ) return;
  try {
    const result = await callStudio(route.service, method, args);
    sendJson(response, 200, { result: result === undefined ? null : result });
  } catch (error) {
    const shape = toErrorShape(error);
    if (shape.code === 'internal') route.log(`[serve] ${method} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    sendJson(response, HTTP_STATUS[shape.code], shape);
  }
}

/** The body's JSON (an empty body: no arguments), or NOT_READ once a too large or malformed body has been answered. */
async function readArguments(request: http.IncomingMessage, response: http.ServerResponse, maxBody: number): Promise<unknown> {
  try {
    const body = await readBody(request, maxBody, () => new HttpFailure(413, { code: 'invalid_request', message: `request body is larger than ${maxBody} bytes` }));
    const text = body.toString('utf8').trim();
    return text === '' ? [] : JSON.parse(text);
  } catch (error) {
    if (error instanceof HttpFailure) sendJson(response, error.status, error.shape);
    else sendJson(response, 400, { code: 'invalid_request', message: `request body is not valid JSON: ${(error as Error).message}` });
    return NOT_READ;
  }
}

/**
 * How `marsrl serve` answers: every response carries the same security headers; API answers are
 * JSON, everything a person reads is a small HTML page.
 */
import type http from 'node:http';
import { contentSecurityPolicy } from '#shared/csp';
import { messagePage } from './static-files';

/** Sent with every response: nothing here may be framed, sniffed, or read cross-origin. */
const BASE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': contentSecurityPolicy({ delivery: 'header' }),
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

export function send(response: http.ServerResponse, status: number, headers: Record<string, string>, body?: string | Buffer): void {
  response.writeHead(status, { ...BASE_HEADERS, ...headers });
  response.end(body);
}

export function sendJson(response: http.ServerResponse, status: number, value: unknown): void {
  send(response, status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }, JSON.stringify(value));
}

/** A page for a person (`head`: the headers of it alone, for a HEAD request). */
export function sendPage(response: http.ServerResponse, status: number, title: string, paragraphs: string[], head = false): void {
  const body = messagePage(title, paragraphs);
  send(response, status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }, head ? undefined : body);
}

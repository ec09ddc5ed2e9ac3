/**
 * The pieces the hostile-input suite (hostile.ts, issue #36) runs against, all real and all on
 * loopback: `marsrl serve` and `marsrl serve-model` as separate processes (a case that froze or
 * killed them shows as a hang or a crash, never as a frozen suite), `marsrl` commands as
 * processes with a time limit, a canary API key in their environment approved for one host only,
 * and listeners that record every request they receive: the approved endpoint (an
 * OpenAI-compatible fake that also redirects) and a trap that no key may ever reach.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { projectRoot } from '../src-main/engine/resources';

export const CANARY_VARIABLE = 'MARSRL_HOSTILE_CANARY_KEY';

/** A request a listener received, as it arrived. */
export interface Received {
  method: string;
  url: string;
  host: string;
  authorization: string | null;
  body: string;
}

export interface Listener {
  port: number;
  url: string;
  received: Received[];
  close(): Promise<void>;
}

function listen(handler: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void): Promise<Listener> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', url: req.url ?? '', host: req.headers.host ?? '', authorization: req.headers.authorization ?? null, body });
      handler(req, body, res);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        port,
        url: `http://127.0.0.1:${port}`,
        received,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

/** Answers nothing useful: every request it receives is evidence (a key must never arrive here). */
export function startTrap(): Promise<Listener> {
  return listen((_req, _body, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"trap"}}');
  });
}

/**
 * The approved endpoint: /v1 serves model `legit-model` (a 401 without the canary key),
 * /flaky/v1 answers 500 to every third chat request (the client retries), and /redirect/v1
 * answers 307 to the trap (a client that followed it would carry the key there).
 */
export function startLegit(canary: string, trapUrl: string): Promise<Listener> {
  let chats = 0;
  return listen((req, body, res) => {
    const url = req.url ?? '';
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (url.startsWith('/redirect/')) {
      res.writeHead(307, { location: `${trapUrl}${url.slice('/redirect'.length)}` });
      res.end();
      return;
    }
    if (req.headers.authorization !== `Bearer ${canary}`) return json(401, { error: { message: 'invalid API key' } });
    if (url.endsWith('/models')) return json(200, { object: 'list', data: [{ id: 'legit-model', object: 'model' }] });
    if (!url.endsWith('/chat/completions')) return json(404, { error: { message: 'no route' } });
    if (url.startsWith('/flaky/') && ++chats % 3 === 0) return json(500, { error: { message: 'flaky' } });
    const stream = (JSON.parse(body || '{}') as { stream?: boolean }).stream === true;
    const text = 'A:0123 Verdict: correct';
    if (!stream) return json(200, { id: 'x', object: 'chat.completion', model: 'legit-model', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text }, finish_reason: 'stop' }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
}

/** A `marsrl` process: its output as it comes, whether and how it ended. */
export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

export function spawnMarsrl(args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, [path.join(projectRoot(), 'bin', 'marsrl.js'), ...args], {
    cwd: projectRoot(),
    env: { ...process.env, MARSRL_DB: undefined, MARSRL_TOKEN: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A `marsrl` command run to its end, or killed at `timeoutMs` (then `hung`). */
export async function runMarsrl(args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; hung: boolean; ms: number }> {
  const started = Date.now();
  const p = spawnMarsrl(args, env);
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    p.child.kill('SIGKILL');
  }, timeoutMs);
  const { code, signal } = await p.exited;
  clearTimeout(timer);
  return { code, signal, stdout: p.stdout(), stderr: p.stderr(), hung, ms: Date.now() - started };
}

/** Waits for a served process to print what `ready` finds (its URL), or fails naming what it printed. */
export async function untilPrinted(p: Proc, ready: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const match = ready.exec(p.stdout()) ?? ready.exec(p.stderr());
    if (match) return match;
    if (p.child.exitCode !== null || Date.now() > end) throw new Error(`the process did not get ready (${p.child.exitCode === null ? 'timed out' : `exit ${p.child.exitCode}`}):\n${p.stdout()}\n${p.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface HttpAnswer {
  status: number;
  body: string;
  ms: number;
  /** No answer within the time limit. */
  hung: boolean;
  /** The connection failed (refused, reset): the server may be gone. */
  failed: string | null;
}

/** One request to a loopback server (node:http, which sends Host and no Origin unless told). */
export function request(port: number, init: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer; timeoutMs?: number }): Promise<HttpAnswer> {
  const started = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Omit<HttpAnswer, 'ms'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...a, ms: Date.now() - started });
    };
    const req = http.request({ host: '127.0.0.1', port, path: init.path, method: init.method ?? 'POST', headers: { 'content-type': 'application/json', ...init.headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), hung: false, failed: null }));
      res.on('error', () => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), hung: false, failed: null }));
    });
    req.setTimeout(init.timeoutMs ?? 30_000, () => {
      done({ status: 0, body: '', hung: true, failed: null });
      req.destroy();
    });
    // A server refusing an oversized body answers first and then drops the connection while the
    // body is still being written: the answer, when it arrives, is what counts.
    req.on('error', (e) => setTimeout(() => done({ status: 0, body: '', hung: false, failed: (e as NodeJS.ErrnoException).code ?? e.message }), 300));
    req.end(init.body);
  });
}

export function sha256(file: string): string | null {
  return fs.existsSync(file) ? crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex') : null;
}

/** Every file under `dir` (links not followed) whose bytes contain `needle`. */
export function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && fs.statSync(p).size < 512 * 2 ** 20 && fs.readFileSync(p).includes(needle)) found.push(p);
    }
  };
  walk(dir);
  return found;
}

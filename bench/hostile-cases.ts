/**
 * The corpus of the hostile-input suite (hostile.ts, issue #36). Each case states what it sends,
 * what must come back (a clear error naming the field, file or key, or the request served), and
 * how to read what came back. The runner checks the server still answers after every case.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { STUDIO_METHODS } from '#shared/contract';
import { CANARY_VARIABLE, request, runMarsrl, type HttpAnswer, type Listener } from './hostile-harness';
import type { Fixtures } from './hostile-fixtures';

/** What a case got, read off the answer. */
export type Kind = 'error' | 'served' | 'unclear' | 'crash' | 'hang';
export interface Observed {
  kind: Kind;
  detail: string;
}

export interface HostileCase {
  category: string;
  input: string;
  /** What must happen, in words (and `expect` + `names` as the check). */
  expected: string;
  expect: 'error' | 'served';
  /** What a clear error must name. */
  names?: string;
  /** Cases that need the slow fixtures (processes, runs) only run in the full suite. */
  full?: boolean;
  run: () => Promise<Observed>;
}

export interface CaseContext {
  fx: Fixtures;
  /** The `marsrl serve` under test (its port changes if it had to be restarted). */
  servePort: () => number;
  /** The served database (the CLI cases read it too). */
  databasePath: string;
  /** The environment every `marsrl` process gets: the canary key, the data folder. */
  env: NodeJS.ProcessEnv;
  home: string;
  trap: Listener;
  legit: Listener;
  /** A folder outside the Studio's folders (export paths must not reach it). */
  outside: string;
  seededRunId: number;
  cliTimeoutMs: number;
}

const STACK = /\n\s+at .+\(.*:\d+:\d+\)/;

/** Terminal controls a hostile name carries: none may reach a terminal raw. */
export function hasRawControls(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x0a && c !== 0x09) || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e)) return true;
  }
  return false;
}

/** An HTTP answer read as a clear error (4xx with a message naming `names`), served, or neither. */
export function readHttp(a: HttpAnswer, names?: string): Observed {
  if (a.hung) return { kind: 'hang', detail: `no answer in ${a.ms} ms` };
  if (a.failed) return { kind: 'crash', detail: `connection failed: ${a.failed}` };
  type Body = { message?: unknown; result?: unknown; error?: { message?: unknown } };
  let json: Body | null = null;
  try {
    json = JSON.parse(a.body) as Body;
  } catch {
    // an HTML page (a wrong Host) or nothing (HEAD)
  }
  const message = String(json?.message ?? json?.error?.message ?? a.body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());
  if (a.status >= 200 && a.status < 300) return readResult(json?.result, names);
  if (a.status >= 500) return { kind: 'unclear', detail: `HTTP ${a.status}: ${message.slice(0, 300)}` };
  if (STACK.test(message)) return { kind: 'unclear', detail: `HTTP ${a.status} with a stack trace: ${message.slice(0, 300)}` };
  if (names && !message.includes(names) && message !== '') return { kind: 'unclear', detail: `HTTP ${a.status} not naming ${names}: ${message.slice(0, 300)}` };
  return { kind: 'error', detail: `HTTP ${a.status}: ${message.slice(0, 300)}` };
}

/** A 200 that carries field-level issues (validateConfig, checkEndpoints, inspectModel) is a clear error. */
function readResult(result: unknown, names?: string): Observed {
  const r = result as { ok?: boolean; issues?: Array<{ path: string; message: string }>; supported?: boolean; problems?: string[] } | null;
  const issues = r?.ok === false ? (r.issues ?? []).map((i) => `${i.path}: ${i.message}`) : r?.supported === false ? (r.problems ?? []) : null;
  if (issues === null) return { kind: 'served', detail: JSON.stringify(result)?.slice(0, 200) ?? 'null' };
  const text = issues.join(' | ');
  if (issues.length === 0 || (names && !text.includes(names)) || STACK.test(text)) return { kind: 'unclear', detail: `issues not naming ${names}: ${text.slice(0, 300)}` };
  return { kind: 'error', detail: text.slice(0, 400) };
}

/** A `marsrl` command's end read the same way: exit 1/2 naming `names` is a clear error. */
export function readCli(r: Awaited<ReturnType<typeof runMarsrl>>, names?: string, check?: (out: string) => string | null): Observed {
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.hung) return { kind: 'hang', detail: `still running after ${r.ms} ms (killed)` };
  if (r.signal || (r.code !== 0 && r.code !== 1 && r.code !== 2) || /FATAL ERROR|Maximum call stack size exceeded/.test(out)) return { kind: 'crash', detail: `exit ${r.code ?? r.signal}: ${out.slice(-300)}` };
  if (r.code === 0) {
    const problem = check?.(out) ?? null;
    return problem ? { kind: 'unclear', detail: problem } : { kind: 'served', detail: r.stdout.slice(0, 200) };
  }
  if (STACK.test(r.stderr)) return { kind: 'unclear', detail: `a stack trace: ${r.stderr.slice(0, 300)}` };
  if (names && !out.includes(names)) return { kind: 'unclear', detail: `exit ${r.code} not naming ${names}: ${r.stderr.slice(0, 300)}` };
  return { kind: 'error', detail: `exit ${r.code}: ${r.stderr.trim().slice(0, 300)}` };
}

const api = (ctx: CaseContext, method: string, body: string, names?: string, timeoutMs = 90_000) => async () => readHttp(await request(ctx.servePort(), { path: `/api/${method}`, body, timeoutMs }), names);
const call = (ctx: CaseContext, method: string, args: unknown[], names?: string) => api(ctx, method, JSON.stringify(args), names);

/** Every StudioApi method with malformed, oversized and adversarial arguments. */
function everyMethod(ctx: CaseContext): HostileCase[] {
  const polluting = '[{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}]';
  const extremes = JSON.stringify([-1, 1e308, 'x'.repeat(100_000), null, JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`)]);
  return STUDIO_METHODS.flatMap((method): HostileCase[] => [
    { category: 'http method', input: `${method}: arguments as an object`, expected: 'a clear error: the arguments must be an array', expect: 'error', names: 'array', run: api(ctx, method, '{"runId": 1}') },
    { category: 'http method', input: `${method}: prototype-polluting arguments`, expected: `a clear error naming ${method} or its field`, expect: 'error', names: method === 'validateConfig' || method === 'checkEndpoints' ? '__proto__' : method, run: api(ctx, method, polluting) },
    { category: 'http method', input: `${method}: extremes (-1, 1e308, 100k characters, null, 2000-deep list)`, expected: `a clear error naming ${method}`, expect: 'error', names: method === 'validateConfig' ? 'configuration' : method, run: api(ctx, method, extremes) },
  ]);
}

function protocol(ctx: CaseContext): HostileCase[] {
  const port = ctx.servePort;
  const raw = (init: Parameters<typeof request>[1], names?: string) => async () => readHttp(await request(port(), init), names);
  const big = JSON.stringify([ctx.seededRunId, { notes: 'x'.repeat(2 * 2 ** 20) }]);
  return [
    ...['updateRun', 'validateConfig', 'startExport'].map((m): HostileCase => ({ category: 'http oversized', input: `${m}: a 2 MiB body`, expected: 'HTTP 413 naming the limit in bytes', expect: 'error', names: 'bytes', run: raw({ path: `/api/${m}`, body: big }) })),
    { category: 'http oversized', input: 'Content-Length of 10^12 declared', expected: 'HTTP 413 before any byte is read', expect: 'error', names: 'bytes', run: raw({ path: '/api/listRuns', headers: { 'content-length': '1000000000000' }, body: '' }) },
    ...['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'].map((verb): HostileCase => ({ category: 'http verb', input: `${verb} /api/listRuns`, expected: 'HTTP 405 saying API calls are POST', expect: 'error', names: 'POST', run: raw({ method: verb, path: '/api/listRuns' }) })),
    { category: 'http verb', input: 'HEAD /api/listRuns', expected: 'HTTP 405 (no body)', expect: 'error', run: raw({ method: 'HEAD', path: '/api/listRuns' }) },
    { category: 'http header', input: 'Content-Type: text/plain', expected: 'HTTP 415 naming Content-Type', expect: 'error', names: 'Content-Type', run: raw({ path: '/api/listRuns', headers: { 'content-type': 'text/plain' }, body: '[]' }) },
    { category: 'http header', input: 'Host: evil.example (DNS rebinding)', expected: 'HTTP 421 naming the Host', expect: 'error', names: 'Host', run: raw({ path: '/api/listRuns', headers: { host: 'evil.example' }, body: '[]' }) },
    { category: 'http header', input: 'Origin: https://evil.example', expected: 'HTTP 403 naming the Origin', expect: 'error', names: 'Origin', run: raw({ path: '/api/listRuns', headers: { origin: 'https://evil.example' }, body: '[]' }) },
    { category: 'http body', input: 'a body that is not JSON', expected: 'HTTP 400 naming JSON', expect: 'error', names: 'JSON', run: raw({ path: '/api/listRuns', body: '{not json' }) },
    { category: 'http body', input: 'JSON of 1e999 (Infinity)', expected: 'HTTP 400: arguments must be an array', expect: 'error', names: 'array', run: raw({ path: '/api/getRun', body: '1e999' }) },
    { category: 'http body', input: 'JSON nested 200 000 deep', expected: 'a clear error naming getRun', expect: 'error', names: 'getRun', run: raw({ path: '/api/getRun', body: `${'['.repeat(200_000)}${']'.repeat(200_000)}` }) },
    { category: 'http body', input: 'invalid UTF-8 bytes', expected: 'HTTP 400 naming JSON', expect: 'error', names: 'JSON', run: raw({ path: '/api/listRuns', body: Buffer.from([0xff, 0xfe, 0x5b, 0xc3, 0x28, 0x5d]) }) },
    ...['__proto__', 'constructor', 'toString', '%E0%A4%A', 'appInfo%00', `a${'b'.repeat(5000)}`, 'x\u001b[2J'].map((name): HostileCase => ({ category: 'http route', input: `POST /api/${JSON.stringify(name).slice(1, 40)}`, expected: 'HTTP 400: unknown method, the known ones listed', expect: 'error', names: 'unknown method', run: raw({ path: `/api/${encodeURI(name).replace(/%25/g, '%')}`, body: '[]' }) })),
  ];
}

/** Payloads that are well-formed but hostile: control characters, paths out, huge sizes. */
function adversarial(ctx: CaseContext): HostileCase[] {
  const { fx } = ctx;
  const evil = 'pwn\u001b]0;owned\u0007\u001b[2J\u009b31m\u202eevil';
  const link = path.join(ctx.home, 'exports', 'link-out');
  const exportTo = (out: string) => call(ctx, 'startExport', [{ runs: [ctx.seededRunId], format: 'sft', out }], 'out');
  const validate = (config: Record<string, unknown>, names: string) => call(ctx, 'validateConfig', [config], names);
  return [
    { category: 'names', input: 'updateRun name, tags and notes with terminal control sequences', expected: 'served (stored as given; every terminal shows them escaped)', expect: 'served', run: call(ctx, 'updateRun', [ctx.seededRunId, { name: evil, tags: [evil, 'ok'], notes: `${evil}\n${evil}` }]) },
    { category: 'names', input: 'updateRun notes of 200 000 characters', expected: 'a clear error naming notes', expect: 'error', names: 'notes', run: call(ctx, 'updateRun', [ctx.seededRunId, { notes: 'n'.repeat(200_000) }]) },
    { category: 'export path', input: 'startExport to ../../../escape.jsonl', expected: 'a clear error naming out: outside the Studio’s folders', expect: 'error', names: 'out', run: exportTo('../../../escape.jsonl') },
    { category: 'export path', input: 'startExport to an absolute path outside the Studio’s folders', expected: 'a clear error naming out', expect: 'error', names: 'out', run: exportTo(path.join(ctx.outside, 'abs.jsonl')) },
    { category: 'export path', input: 'startExport through a link inside exports/ pointing outside', expected: 'a clear error naming out', expect: 'error', names: 'out', run: async () => (fs.mkdirSync(path.dirname(link), { recursive: true }), fs.existsSync(link) || fs.symlinkSync(ctx.outside, link), exportTo('link-out/through-link.jsonl')()) },
    { category: 'export path', input: 'exportModel to ../../../model-out', expected: 'a clear error naming out', expect: 'error', names: 'out', run: call(ctx, 'exportModel', [{ runId: ctx.seededRunId, format: 'hf', out: '../../../model-out' }], 'out') },
    { category: 'export path', input: 'exportStudyReport to ../../../report', expected: 'a clear error naming out', expect: 'error', names: 'out', run: call(ctx, 'exportStudyReport', [1, '../../../report'], 'out') },
    { category: 'export path', input: 'startExport to a name inside the exports folder', expected: 'served (written under exports/)', expect: 'served', run: call(ctx, 'startExport', [{ runs: [ctx.seededRunId], format: 'trajectories', container: 'jsonl', out: 'hostile-ok.jsonl' }]) },
    { category: 'run size', input: 'validateConfig problems_per_step 4096 × solver_group 256', expected: 'a clear error naming rollout.problems_per_step with the figure and the machine’s memory', expect: 'error', names: 'rollout.problems_per_step', run: validate({ rollout: { problems_per_step: 4096, solver_group: 256 } }, 'rollout.problems_per_step') },
    { category: 'run size', input: 'validateConfig eval.problems 1e6 × eval.k 256', expected: 'a clear error naming eval.problems', expect: 'error', names: 'eval.problems', run: validate({ task: { test_size: 1_000_000 }, eval: { problems: 1_000_000, k: 256 } }, 'eval.problems') },
    { category: 'run size', input: 'validateConfig an hf policy whose config.json has 1 000 000 layers', expected: 'a clear error naming policies.solver.model.path and num_hidden_layers', expect: 'error', names: 'num_hidden_layers', run: validate({ policies: { solver: { model: { kind: 'hf', path: fx.models['million-layers'] } } } }, 'num_hidden_layers') },
    { category: 'run size', input: 'startRun problems_per_step 4096 × solver_group 256', expected: 'HTTP 400 naming rollout.problems_per_step; no run recorded', expect: 'error', names: 'rollout.problems_per_step', run: call(ctx, 'startRun', [{ config: { rollout: { problems_per_step: 4096, solver_group: 256 } } }], 'rollout.problems_per_step') },
  ];
}

function modelFolders(ctx: CaseContext): HostileCase[] {
  const { fx } = ctx;
  const names: Record<string, string> = {
    'template-nested-loop': 'ran for over',
    'template-huge-range': 'range()',
    'template-doubling': 'budget',
    'template-list-growth': 'budget',
    'template-self-call': 'chat_template',
    'template-raise-exception': 'chat_template',
    'million-layers': 'num_hidden_layers',
    'vocab-1e12': 'vocab_size',
    'fifo-tokenizer': 'named pipe',
    'fifo-template': 'named pipe',
    'zero-config': 'character device',
    'sparse-tokenizer': 'over the',
    'binary-config': 'config.json',
    'deep-config': 'config.json',
    'config-is-folder': 'config.json',
    'fifo-weights': 'named pipe',
  };
  return [
    { category: 'model folder', input: 'inspectModel of the shipped tiny-qwen Solver (control)', expected: 'served: supported', expect: 'served', run: call(ctx, 'inspectModel', [fx.models.good]) },
    ...Object.entries(names).map(([model, named]): HostileCase => ({ category: 'model folder', input: `inspectModel: ${model}`, expected: `a clear problem naming ${named}, within the time budget`, expect: 'error', names: named, run: call(ctx, 'inspectModel', [fx.models[model]], named) })),
    { category: 'model folder', input: 'inspectModel: a Studio checkpoint whose manifest claims 1 000 000 layers', expected: 'a clear problem naming model.config', expect: 'error', names: 'model.config', run: call(ctx, 'inspectModel', [fx.checkpointLayers], 'model.config') },
    { category: 'model folder', input: 'inspectModel: a path with a NUL character', expected: 'HTTP 400 naming the NUL', expect: 'error', names: 'NUL', run: call(ctx, 'inspectModel', ['/tmp/a\u0000b'], 'NUL') },
    { category: 'model folder', input: 'inspectModel: /dev/zero', expected: 'a clear problem (not a model folder)', expect: 'error', names: 'config.json', run: call(ctx, 'inspectModel', ['/dev/zero'], 'config.json') },
  ];
}

function taskFiles(ctx: CaseContext): HostileCase[] {
  const t = ctx.fx.tasks;
  const jsonl = (file: string) => ({ task: { family: 'jsonl', jsonl_path: file } });
  const v = (input: string, config: Record<string, unknown>, expect: 'error' | 'served', names?: string): HostileCase => ({ category: 'task file', input, expected: expect === 'error' ? `a clear error naming ${names}` : 'served: valid', expect, names, run: call(ctx, 'validateConfig', [config], names) });
  return [
    v('validateConfig task.math_path: a FIFO', { task: { family: 'math', math_path: t.fifoMath } }, 'error', 'task.math_path'),
    v('validateConfig task.jsonl_path: a FIFO', jsonl(t.fifo), 'error', 'task.jsonl_path'),
    v('validateConfig task.jsonl_path: a link to a FIFO', jsonl(t.linkToFifo), 'error', 'named pipe'),
    v('validateConfig task.jsonl_path: a link to /dev/zero', jsonl(t.zeroLink), 'error', 'character device'),
    v('validateConfig task.jsonl_path: a 600 MiB (sparse) file', jsonl(t.sparse), 'error', 'over the'),
    v('validateConfig task.jsonl_path: 64 KiB of random bytes', jsonl(t.binary), 'error', 'task.jsonl_path'),
    v('validateConfig task.jsonl_path: a folder', jsonl(t.folder), 'error', 'folder'),
    v('validateConfig task.jsonl_path: a link to a real file (followed)', jsonl(t.linkToReal), 'served'),
    { category: 'task file', input: 'startRun task.math_path: a FIFO', expected: 'HTTP 400 naming task.math_path; no run recorded', expect: 'error', names: 'task.math_path', run: call(ctx, 'startRun', [{ config: { task: { family: 'math', math_path: t.fifoMath } } }], 'task.math_path') },
    { category: 'task file', input: 'checkEndpoints task.jsonl_path: a FIFO', expected: 'a clear error naming task.jsonl_path', expect: 'error', names: 'task.jsonl_path', run: call(ctx, 'checkEndpoints', [jsonl(t.fifo)], 'task.jsonl_path') },
  ];
}

/** The canary key through every path that sends one; the trap must never see it. */
function secrets(ctx: CaseContext): HostileCase[] {
  const legit = `${ctx.legit.url}/v1`;
  const endpoint = (base_url: string, extra: Record<string, unknown> = {}) => ({ endpoints: { e: { base_url, model: 'legit-model', api_key_env: CANARY_VARIABLE, timeout_s: 3, retries: 1, ...extra } }, policies: { solver: {}, judge: { endpoint: 'e' } }, agents: { verifier: 'judge', corrector: 'judge' } });
  const check = (input: string, config: Record<string, unknown>, expect: 'error' | 'served', names?: string): HostileCase => ({ category: 'secret', input, expected: expect === 'error' ? `refused before sending, naming ${names}` : 'served: the approved host gets the key', expect, names, run: call(ctx, 'checkEndpoints', [config], names) });
  return [
    check('checkEndpoints: the canary variable at a listener (not approved)', endpoint(`${ctx.trap.url}/v1`), 'error', 'api_key_env'),
    check('checkEndpoints: api_key_env HOME at a listener', { ...endpoint(`${ctx.trap.url}/v1`), endpoints: { e: { base_url: `${ctx.trap.url}/v1`, model: 'm', api_key_env: 'HOME', timeout_s: 3 } } }, 'error', 'api_key_env'),
    check('checkEndpoints: the approved endpoint under another host name (localhost)', endpoint(`http://localhost:${ctx.legit.port}/v1`), 'error', 'api_key_env'),
    check('checkEndpoints: approved base_url, a replica at the listener', endpoint(legit, { replicas: [`${ctx.trap.url}/v1`] }), 'error', 'replicas.0'),
    check('checkEndpoints: the approved host answers 307 to the listener', endpoint(`${ctx.legit.url}/redirect/v1`), 'error', 'redirect'),
    check('checkEndpoints: the approved endpoint (control)', endpoint(legit), 'served'),
    { category: 'secret', input: 'validateConfig: the canary variable at a listener', expected: 'a clear error naming api_key_env', expect: 'error', names: 'api_key_env', run: call(ctx, 'validateConfig', [endpoint(`${ctx.trap.url}/v1`)], 'api_key_env') },
    { category: 'secret', input: 'startRun: a system run served by the listener', expected: 'HTTP 400 naming api_key_env; no run recorded', expect: 'error', names: 'api_key_env', run: call(ctx, 'startRun', [{ config: withoutPreset(yamlOf(ctx.fx.configs.trapSystem)), preset: 'quick' }], 'api_key_env') },
  ];
}

/** startRun takes the preset beside the config, not in it. */
function withoutPreset(doc: Record<string, unknown>): Record<string, unknown> {
  const { preset: _preset, ...rest } = doc;
  return rest;
}

function yamlOf(file: string): Record<string, unknown> {
  return YAML.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** The same hostile inputs through the CLI, each a process with a time limit. */
function cli(ctx: CaseContext): HostileCase[] {
  const { fx, env } = ctx;
  const m = (args: string[], names?: string, check?: (out: string) => string | null, extraEnv: NodeJS.ProcessEnv = {}) => async () => readCli(await runMarsrl(args, { ...env, ...extraEnv }, ctx.cliTimeoutMs), names, check);
  const inert = (out: string) => (hasRawControls(out) ? 'raw terminal controls in the output' : null);
  return [
    { category: 'cli', input: 'marsrl model inspect: a chat template with nested 10^5 loops', expected: 'exit 1 naming the template, within the time budget', expect: 'error', names: 'chat_template', run: m(['model', 'inspect', fx.models['template-nested-loop']], 'chat_template') },
    { category: 'cli', input: 'marsrl model inspect: a template building range(10^9)', expected: 'exit 1 naming range()', expect: 'error', names: 'range()', full: true, run: m(['model', 'inspect', fx.models['template-huge-range']], 'range()') },
    { category: 'cli', input: 'marsrl model inspect: config.json with 1 000 000 layers', expected: 'exit 1 naming num_hidden_layers with the figure', expect: 'error', names: 'num_hidden_layers', full: true, run: m(['model', 'inspect', fx.models['million-layers']], 'num_hidden_layers') },
    { category: 'cli', input: 'marsrl model inspect: tokenizer.json is a FIFO', expected: 'exit 1 naming the named pipe', expect: 'error', names: 'named pipe', full: true, run: m(['model', 'inspect', fx.models['fifo-tokenizer']], 'named pipe') },
    { category: 'cli', input: 'marsrl config validate: task.math_path is a FIFO', expected: 'exit 2 naming task.math_path', expect: 'error', names: 'task.math_path', run: m(['config', 'validate', fx.configs.fifoMath], 'task.math_path') },
    { category: 'cli', input: 'marsrl run: problems_per_step 4096 × solver_group 256', expected: 'exit 2 naming rollout.problems_per_step; no stack trace', expect: 'error', names: 'rollout.problems_per_step', run: m(['run', '--config', fx.configs.episodes, '--db', path.join(path.dirname(ctx.databasePath), 'cli-runs.db')], 'rollout.problems_per_step') },
    { category: 'cli', input: 'marsrl config validate --probe: the canary variable at a listener', expected: 'exit 2 naming api_key_env and `marsrl secrets allow`', expect: 'error', names: 'marsrl secrets allow', full: true, run: m(['config', 'validate', fx.configs.trapProbe, '--probe'], 'marsrl secrets allow') },
    { category: 'cli', input: 'marsrl run: a system run served by the listener', expected: 'exit 2 naming api_key_env', expect: 'error', names: 'api_key_env', run: m(['run', '--config', fx.configs.trapSystem, '--db', path.join(path.dirname(ctx.databasePath), 'cli-runs.db')], 'api_key_env') },
    { category: 'secret', input: 'marsrl run: a system run served by the approved endpoint (probe, calls, retries, health checks)', expected: 'served: done, the key sent to the approved host only', expect: 'served', run: m(['run', '--config', fx.configs.legitSystem, '--db', path.join(path.dirname(ctx.databasePath), 'cli-runs.db')]) },
    { category: 'cli', input: 'marsrl runs: names and tags with terminal control sequences', expected: 'served, every control shown escaped', expect: 'served', run: m(['runs', '--db', ctx.databasePath], undefined, inert) },
    { category: 'cli', input: 'marsrl show: a run named with terminal control sequences', expected: 'served, every control shown escaped', expect: 'served', full: true, run: m(['show', String(ctx.seededRunId), '--db', ctx.databasePath], undefined, inert) },
    { category: 'cli', input: 'marsrl runs --json: the same names', expected: 'served, JSON with controls as \\u escapes', expect: 'served', full: true, run: m(['runs', '--json', '--db', ctx.databasePath], undefined, inert) },
    { category: 'cli', input: 'marsrl config print: config strings with terminal control sequences', expected: 'served, every control shown escaped', expect: 'served', full: true, run: m(['config', 'print', '--config', fx.configs.controlStrings], undefined, inert) },
    { category: 'cli', input: 'marsrl runs --db: a database file of random bytes', expected: 'exit 1 naming the file, that it is damaged, and what to do', expect: 'error', names: 'damaged', run: m(['runs', '--db', fx.corruptDb], 'damaged') },
    ...('dir' in fx.tinyDisk
      ? [{ category: 'cli', input: 'marsrl export onto a disk that fills up (a 4 KiB tmpfs)', expected: 'exit 1 saying to free space and run the export again (redone, not resumed); nothing left behind', expect: 'error' as const, names: 'run the export again', full: true, run: m(['export', String(ctx.seededRunId), '--format', 'trajectories', '--jsonl', '--out', path.join(fx.tinyDisk.dir, 'x.jsonl'), '--db', ctx.databasePath], 'run the export again', undefined) }]
      : []),
    { category: 'cli', input: 'marsrl serve --db: a database file of random bytes', expected: 'exit 1 naming the file and what to do', expect: 'error', names: 'damaged', full: true, run: m(['serve', '--db', fx.corruptDb, '--port', '0', '--no-build'], 'damaged') },
    { category: 'cli', input: 'marsrl serve-model: a folder whose chat template never ends', expected: 'exit 1 naming the template, within the time budget', expect: 'error', names: 'chat_template', full: true, run: m(['serve-model', fx.models['template-nested-loop'], '--port', '0'], 'chat_template') },
    { category: 'cli', input: 'marsrl serve-model: a checkpoint claiming 1 000 000 layers', expected: 'exit 1 naming model.config', expect: 'error', names: 'model.config', full: true, run: m(['serve-model', fx.checkpointLayers, '--port', '0'], 'model.config') },
  ];
}

export function corpus(ctx: CaseContext): HostileCase[] {
  return [...everyMethod(ctx), ...protocol(ctx), ...adversarial(ctx), ...modelFolders(ctx), ...taskFiles(ctx), ...secrets(ctx), ...cli(ctx)];
}

/**
 * `marsrl serve-model` (the full suite starts one on the quick Solver): hostile OpenAI requests,
 * each answered with an OpenAI-style error naming its parameter, or served.
 */
export function serveModelCases(port: () => number): HostileCase[] {
  const post = (route: string, body: unknown, names?: string) => async () => readHttp(await request(port(), { path: `/v1/${route}`, body: typeof body === 'string' ? body : JSON.stringify(body), timeoutMs: 60_000 }), names);
  const c = (input: string, expected: string, expect: 'error' | 'served', run: () => Promise<Observed>, names?: string): HostileCase => ({ category: 'serve-model', input, expected, expect, names, run });
  return [
    c('a 4 MB prompt to /v1/completions', 'HTTP 400 context_length_exceeded, refused before it is tokenized whole', 'error', post('completions', { model: 'solver', prompt: '1'.repeat(4e6 - 64) }, 'context'), 'context'),
    c('a 4 MB message to /v1/chat/completions', 'HTTP 400 context_length_exceeded', 'error', post('chat/completions', { model: 'solver', messages: [{ role: 'user', content: '2'.repeat(4e6 - 128) }] }, 'context'), 'context'),
    c('a 5 MB body', 'HTTP 413 naming the limit', 'error', post('completions', { model: 'solver', prompt: '3'.repeat(5e6) }, 'bytes'), 'bytes'),
    c('n: 10^9', 'HTTP 400 naming n', 'error', post('completions', { model: 'solver', prompt: 'sort 12', n: 1e9 }, 'n'), 'n'),
    c('max_tokens: -1', 'HTTP 400 naming max_tokens', 'error', post('completions', { model: 'solver', prompt: 'sort 12', max_tokens: -1 }, 'max_tokens'), 'max_tokens'),
    c('logprobs: true with top_logprobs 10^6', 'HTTP 400 naming top_logprobs', 'error', post('chat/completions', { model: 'solver', messages: [{ role: 'user', content: 'sort 12' }], logprobs: true, top_logprobs: 1e6 }, 'top_logprobs'), 'top_logprobs'),
    c('messages: a 100 000-deep list', 'HTTP 400 naming messages', 'error', post('chat/completions', `{"model":"solver","messages":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, 'messages'), 'messages'),
    c('a body that is not JSON', 'HTTP 400 naming JSON', 'error', post('completions', '{"model":', 'JSON'), 'JSON'),
    c('stop: 10 000 sequences', 'HTTP 400 naming stop', 'error', post('completions', { model: 'solver', prompt: 'sort 12', stop: Array.from({ length: 10_000 }, (_, i) => `s${i}`) }, 'stop'), 'stop'),
    c('an ordinary request (control)', 'served', 'served', post('completions', { model: 'solver', prompt: 'sort 12', max_tokens: 8 })),
  ];
}

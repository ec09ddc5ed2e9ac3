/**
 * A property-based fuzz of `marsrl serve`'s HTTP API (issue #36), with fast-check: seeded (the
 * same seed sends the same requests), bounded in time, loopback only. Requests are drawn from
 * every method name of the contract and random names, arguments that are random JSON, raw text,
 * or a valid call with one value replaced by random JSON, under random verbs and content types.
 *
 * What must hold for every request: an answer within the time limit; a status the API uses for
 * a caller's mistake (400, 404, 405, 409, 413, 415) or a success, with a JSON message and no
 * stack trace; a 500 only with its cause written to the server's log; and the server alive.
 * Methods that launch or delete runs (startRun, resumeRun, startStudy, deleteRun) are left to the
 * corpus (hostile-cases.ts), which sends them hostile arguments without making real runs.
 */
import fc from 'fast-check';
import { STUDIO_METHODS } from '#shared/contract';
import { request } from './hostile-harness';

export interface FuzzResult {
  seed: number;
  seconds: number;
  requests: number;
  statuses: Record<string, number>;
  /** Answers outside the rules above, with the request that got each (at most 20 kept). */
  unexpected: Array<{ request: string; answer: string }>;
  unexpectedCount: number;
  hangs: number;
  serverErrors: number;
  /** 500s whose cause the server did not log. */
  unloggedServerErrors: number;
  /** The requests that got a 500 (at most 10 kept), for reading the server's log against. */
  serverErrorSamples: string[];
  aliveAtEnd: boolean;
}

const LAUNCHING = new Set(['startRun', 'resumeRun', 'startStudy', 'deleteRun']);
const FUZZED = STUDIO_METHODS.filter((m) => !LAUNCHING.has(m));
const CALLER_STATUSES = new Set([200, 400, 404, 405, 409, 413, 415]);

/** A valid call of each fuzzed method, for the mutation strategy. */
function validCalls(runId: number, modelFolder: string): Record<string, unknown[]> {
  return {
    appInfo: [], listRuns: [{ limit: 5 }], getRun: [runId], updateRun: [runId, { notes: 'fuzz' }], listPresets: [], getPreset: ['quick'],
    validateConfig: [{ rollout: { solver_group: 4 } }], configSchema: [], inspectModel: [modelFolder], checkEndpoints: [{}], stopRun: [runId],
    listMetricKeys: [runId], getSeries: [{ runId, keys: ['system/accuracy'] }], listTurns: [{ runId, limit: 5 }], listEpisodes: [{ runId, limit: 5 }],
    getEpisode: [1], listEvents: [runId], getTimeline: [runId], startExport: [{ runs: [runId], format: 'sft', out: 'fuzz.jsonl', force: true }],
    cancelExport: ['export-1'], exportModel: [{ runId, format: 'hf', out: 'fuzz-model' }], compareRuns: [{ runIds: [runId] }],
    compareSeries: [{ runIds: [runId], key: 'system/accuracy' }], listStudies: [], getStudy: [1], exportStudyReport: [1, 'fuzz-report'],
    listProblemOutcomes: [{ runIds: [runId], limit: 5 }], getProblemEpisodes: [{ runIds: [runId], turnId: 1 }],
  };
}

/** `value` with the `pick`-th of its leaves (in walk order, modulo their number) replaced by `by`. */
function mutate(value: unknown, pick: number, by: unknown): unknown {
  const leaves: Array<(v: unknown) => unknown> = [];
  const walk = (v: unknown, set: (x: unknown) => unknown): unknown => {
    if (v !== null && typeof v === 'object') {
      const copy: Record<string, unknown> | unknown[] = Array.isArray(v) ? [...v] : { ...(v as Record<string, unknown>) };
      for (const key of Object.keys(copy)) (copy as Record<string, unknown>)[key] = walk((copy as Record<string, unknown>)[key], (x) => ((copy as Record<string, unknown>)[key] = x));
      leaves.push(set);
      return copy;
    }
    leaves.push(set);
    return v;
  };
  let root = walk(value, (x) => (root = x));
  if (leaves.length > 0) leaves[pick % leaves.length](by);
  return root;
}

interface FuzzRequest {
  verb: string;
  method: string;
  contentType: string;
  body: string;
}

function requestArbitrary(calls: Record<string, unknown[]>): fc.Arbitrary<FuzzRequest> {
  const json = fc.jsonValue({ maxDepth: 4 });
  const method = fc.oneof({ arbitrary: fc.constantFrom(...FUZZED), weight: 12 }, { arbitrary: fc.string({ maxLength: 24 }), weight: 1 }, { arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty'), weight: 1 });
  const verb = fc.constantFrom('POST', 'POST', 'POST', 'POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE', 'PATCH');
  const contentType = fc.constantFrom('application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', '');
  return fc.record({ verb, method, contentType }).chain((head) => {
    const valid = calls[head.method] ?? [];
    const body = fc.oneof(
      { arbitrary: fc.tuple(fc.nat(), json).map(([pick, by]) => JSON.stringify(mutate(valid, pick, by))), weight: 6 },
      { arbitrary: fc.array(json, { maxLength: 4 }).map((a) => JSON.stringify(a)), weight: 3 },
      { arbitrary: json.map((v) => JSON.stringify(v)), weight: 1 },
      { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
    );
    return body.map((b) => ({ ...head, body: b }));
  });
}

function logged500s(log: string): number {
  return (log.match(/\[serve\] [^\n]* failed: /g) ?? []).length;
}

/** Fuzz the server at `port()` for `seconds` from `seed`; `serverLog` is its stderr so far. */
export async function fuzzHttp(opts: { port: () => number; seed: number; seconds: number; runId: number; modelFolder: string; serverLog: () => string }): Promise<FuzzResult> {
  const result: FuzzResult = { seed: opts.seed, seconds: opts.seconds, requests: 0, statuses: {}, unexpected: [], unexpectedCount: 0, hangs: 0, serverErrors: 0, unloggedServerErrors: 0, serverErrorSamples: [], aliveAtEnd: false };
  const logBefore = logged500s(opts.serverLog());
  const note = (r: FuzzRequest, answer: string) => {
    result.unexpectedCount++;
    if (result.unexpected.length < 20) result.unexpected.push({ request: `${r.verb} /api/${r.method} ${r.contentType} ${r.body.slice(0, 200)}`, answer: answer.slice(0, 300) });
  };
  const property = fc.asyncProperty(requestArbitrary(validCalls(opts.runId, opts.modelFolder)), async (r) => {
    const a = await request(opts.port(), { method: r.verb, path: `/api/${encodeURIComponent(r.method)}`, headers: { 'content-type': r.contentType }, body: r.verb === 'GET' ? undefined : r.body, timeoutMs: 30_000 });
    result.requests++;
    const key = a.hung ? 'hung' : a.failed ? 'failed' : String(a.status);
    result.statuses[key] = (result.statuses[key] ?? 0) + 1;
    if (a.hung) result.hangs++;
    if (a.hung || a.failed) {
      note(r, key);
      return true;
    }
    if (a.status === 500) {
      result.serverErrors++;
      if (result.serverErrorSamples.length < 10) result.serverErrorSamples.push(`${r.verb} /api/${r.method} ${r.body.slice(0, 300)} → ${a.body.slice(0, 300)}`);
    }
    else if (!CALLER_STATUSES.has(a.status)) note(r, `HTTP ${a.status}: ${a.body}`);
    else if (a.status !== 200 && !(r.verb === 'HEAD') && !/"message":"[^"]/.test(a.body)) note(r, `HTTP ${a.status} without a message: ${a.body}`);
    else if (/\n\s+at .+:\d+:\d+/.test(a.body)) note(r, `a stack trace: ${a.body}`);
    return true;
  });
  await fc.assert(property, { seed: opts.seed, numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: opts.seconds * 1000, markInterruptAsFailure: false, endOnFailure: true });
  // The server logs a 500's cause as it answers it; give the log a moment to arrive.
  await new Promise((resolve) => setTimeout(resolve, 200));
  result.unloggedServerErrors = Math.max(0, result.serverErrors - (logged500s(opts.serverLog()) - logBefore));
  const alive = await request(opts.port(), { path: '/api/appInfo', body: '[]', timeoutMs: 10_000 });
  result.aliveAtEnd = alive.status === 200;
  return result;
}

/**
 * `npm run bench -- replay [--problems P] [--k K] [--iterations N] [--words W] [--token-ms MS] [--slots S] [--replays R] [--json]`
 *
 * Replay time against the run's own rollout time of the same episode (issue 40: "a replay of a
 * 20-turn episode takes no longer than the run took for that episode's rollout"). A reasoning-
 * system run in MarsRL's loop mode is made against a served model of fixed speed: an OpenAI-
 * compatible server started here that streams every reply word by word, `--token-ms` apart, with at
 * most `--slots` replies decoding at once (later requests wait in line, as on a GPU server's batch
 * slots). Its Verifier always rejects and its Corrector never fixes, so each greedy episode is
 * 1 + 2 × `--iterations` turns (21 by default). The run plays `--problems` greedy chains and
 * `--problems` × `--k` sampled ones, 8 at a time (the endpoint's concurrency).
 *
 * Then `--replays` of its greedy episodes are replayed, one at a time, with the run's endpoints and
 * seed (the replay runs the run's chain code, system/chains.ts playChain). For each: the replay's
 * wall time, the stored episode's rollout time (its first turn's start to its last segment's end,
 * from the run's rows), their ratio, and whether the replayed texts equal the stored ones. Both
 * times are measured in this one run, on this machine, against the same server.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { textFormatOf } from '../src-main/engine/agents/prompts';
import { deepMerge, presetDocument } from '../src-main/engine/config/load';
import { resolveConfig } from '../src-main/engine/preflight';
import { runReplay } from '../src-main/engine/replay/replay';
import { openStore } from '../src-main/engine/store';
import { systemRun } from '../src-main/engine/system/system-run';
import { loadTaskData } from '../src-main/engine/training/task-data';
import { intFlag } from './flags';
import { median } from './timing';

interface Server {
  baseUrl: string;
  close(): Promise<void>;
}

/** Streams each role's fixed reply, `tokenMs` per word, at most `slots` replies at once. */
async function fixedSpeedServer(replies: Record<string, string>, tokenMs: number, slots: number): Promise<Server> {
  let active = 0;
  const queue: Array<() => void> = [];
  const slot = () => (active < slots ? (active++, Promise.resolve()) : new Promise<void>((resolve) => queue.push(resolve)));
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else active--;
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: Object.keys(replies).map((id) => ({ id, object: 'model', created: 0, owned_by: 'bench' })) }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string; stream?: boolean; max_tokens?: number };
      const words = (replies[body.model] ?? 'ok').split(/(?= )/).slice(0, body.max_tokens ?? Infinity);
      void (async () => {
        await slot();
        try {
          if (!body.stream) {
            await new Promise((resolve) => setTimeout(resolve, tokenMs * words.length));
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ id: 'x', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: words.length, total_tokens: words.length + 1 } }));
            return;
          }
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for (const w of words) {
            await new Promise((resolve) => setTimeout(resolve, tokenMs));
            res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta: { content: w }, finish_reason: null }] })}\n\n`);
          }
          res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: words.length, total_tokens: words.length + 1 } })}\n\n`);
          res.end('data: [DONE]\n\n');
        } finally {
          release();
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { problems: { type: 'string', default: '8' }, k: { type: 'string', default: '2' }, iterations: { type: 'string', default: '10' }, words: { type: 'string', default: '24' }, 'token-ms': { type: 'string', default: '3' }, slots: { type: 'string', default: '4' }, replays: { type: 'string', default: '4' }, json: { type: 'boolean', default: false } },
  });
  const problems = intFlag(values.problems, '--problems', 1);
  const k = intFlag(values.k, '--k', 1);
  const iterations = intFlag(values.iterations, '--iterations', 1);
  const words = intFlag(values.words, '--words', 2);
  const tokenMs = intFlag(values['token-ms'], '--token-ms', 0);
  const slots = intFlag(values.slots, '--slots', 1);
  const replays = Math.min(problems, intFlag(values.replays, '--replays', 1));
  const roles = ['solver', 'verifier', 'corrector'];
  const base = presetDocument('quick');
  const config = resolveConfig(
    deepMerge(base, {
      eval: { problems, k },
      system: { mode: 'loop', max_iterations: iterations, approvals: 1, controls: false },
      endpoints: Object.fromEntries(roles.map((role) => [role, { base_url: 'http://127.0.0.1:1/v1', model: role, concurrency: 8, timeout_s: 120 }])),
      policies: Object.fromEntries(roles.map((role) => [role, { ...(base.policies as Record<string, object>)[role], endpoint: role }])),
    }),
  );
  const format = textFormatOf(loadTaskData(config).family);
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
  // The Solver and Corrector never give a parseable answer; the Verifier always rejects.
  const server = await fixedSpeedServer({ solver: `${filler(words - 1)} none`, verifier: `${filler(Math.max(0, words - 8))} ${format.verdictText('reject')}`, corrector: `${filler(words - 1)} none` }, tokenMs, slots);
  for (const e of Object.values(config.endpoints!)) e.base_url = server.baseUrl;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-replay-'));
  const store = openStore(path.join(dir, 'replay.db'));
  try {
    const runId = store.runs.create({ name: 'bench-replay', config: config as unknown as Record<string, unknown>, codeVersion: 'bench', seed: config.seed });
    store.runs.setStatus(runId, 'running');
    const t0 = performance.now();
    const outcome = await systemRun({ store, runId, config });
    const runSeconds = (performance.now() - t0) / 1000;
    if (outcome.status !== 'done') throw new Error(`the system run ended ${outcome.status}: ${'reason' in outcome ? outcome.reason : ''}`);
    const greedy = store.trajectories.pageEpisodes({ runId, split: 'test', limit: 1000 }).items.filter((e) => (e.meta as { eval?: string }).eval === 'greedy').slice(0, replays);
    const rows = [];
    for (const e of greedy) {
      const r = store.replays.get(await runReplay(store, { runId, episodeId: e.id }))!.replay;
      rows.push({ episode: e.id, turns: r.turnCount, replaySeconds: r.seconds!, storedSeconds: r.storedSeconds!, ratio: r.seconds! / r.storedSeconds!, sameTexts: r.matchesStored });
    }
    const summary = { problems, k, iterations, words, tokenMs, slots, runSeconds, episodes: rows, medianRatio: median(rows.map((x) => x.ratio)), maxRatio: Math.max(...rows.map((x) => x.ratio)) };
    if (values.json) {
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
      return;
    }
    const print = (line: string) => process.stdout.write(`${line}\n`);
    print(`system run (loop, ${iterations} iterations): ${problems} greedy + ${problems * k} sampled chains against a server of ${slots} slots, ${tokenMs} ms/word, ${words} words a reply: ${runSeconds.toFixed(2)} s`);
    print('episode  turns  replay s  run rollout s  ratio  same texts');
    for (const x of rows) print(`${String(x.episode).padStart(7)}  ${String(x.turns).padStart(5)}  ${x.replaySeconds.toFixed(3).padStart(8)}  ${x.storedSeconds.toFixed(3).padStart(13)}  ${x.ratio.toFixed(2).padStart(5)}  ${x.sameTexts ? 'yes' : 'NO'}`);
    print(`replay / run rollout: median ${summary.medianRatio.toFixed(2)}, max ${summary.maxRatio.toFixed(2)} (≤ 1: the replay took no longer than the run's rollout of the episode)`);
  } finally {
    store.close();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

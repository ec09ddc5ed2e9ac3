import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROLES, type Role } from '#shared/agents';
import { initBackend, type BackendPreference } from '../../engine/model/backend';
import { resolveDatabasePath } from '../../engine/paths';
import { openStore } from '../../engine/store';
import { describeCheckpointPolicy, loadCheckpointPolicy, type ServedPolicy, type ServedPolicyInfo } from '../../server/openai/policy';
import { ThreadEngine } from '../../server/openai/engine';
import { createModelServer } from '../../server/openai/server';
import { choiceFlag, intFlag, UsageError } from '../args';
import { defineCommand } from '../context';
import { accessLines, listenAddress, SERVER_OPTIONS, serverToken, untilStopped } from '../serving';

const DEFAULT_PORT = 8000;

const usage = `Usage: marsrl serve-model [FOLDER[=ID] ...] [--run RUN [--step N]] [--host HOST] [--port PORT]
                         [--token TOKEN] [--role ROLE] [--batch-window MS] [--join-wait MS] [--backend NAME]
                         [--engine auto|thread|inline]

Serves Studio policies on the OpenAI-compatible API (GET /v1/models, POST /v1/chat/completions
and /v1/completions, streaming, n, seed, logprobs/top_logprobs, stop), so any OpenAI client —
MarsRL's reasoning system, a notebook, another Studio's endpoint policy — can call them.
Concurrent requests are decoded together (continuous batching: a request that arrives while a batch
decodes joins it at the next step).

  FOLDER[=ID]        a Studio checkpoint folder of either family (checkpoint.json: resources/checkpoints/quick/solver,
                     or a run's checkpoints/step-…/solver, LoRA adapters served on their base folder)
                     or a Hugging Face model folder (config.json,
                     safetensors, tokenizer files; chat rendered by its chat template); served as ID
                     (default: the folder's name)
  --run RUN          serve the policies of a run's latest checkpoint (id or name; --step picks another)
  --role ROLE        Studio GPT only: which role token closes chat prompts (solver, verifier,
                     corrector); default: the folder's name when it is a role, else solver
  --host HOST        address to listen on (default 127.0.0.1: this machine only). Any other address
                     requires a token: one is generated and printed, unless --token or MARSRL_TOKEN gives it
  --port PORT        port (default ${DEFAULT_PORT}; 0 picks a free one)
  --token TOKEN      API key clients must send (Authorization: Bearer TOKEN), at least 16 characters;
                     when given it is required on loopback too
  --batch-window MS  how long a request reaching an idle server waits for others to start a batch
                     with (default 0: at once; later ones join the running batch at its next step)
  --join-wait MS     how long requests arriving while a batch decodes may wait to join it together,
                     sharing one prefill (default 0: each joins at the next step)
  --backend NAME     tensor backend: auto, tensorflow, wasm, cpu (default auto)
  --engine MODE      where decoding runs: thread (a thread of its own, which alone loads the weights,
                     so parsing and answering requests never delay a decode step, as vLLM keeps its
                     engine core apart from its API server), inline (in the HTTP thread: one core),
                     auto (default: thread when the machine has two cores or more). --engine-thread
                     is --engine thread

Example: marsrl serve-model resources/checkpoints/quick/solver resources/checkpoints/quick/verifier
then:    curl http://127.0.0.1:${DEFAULT_PORT}/v1/chat/completions -H 'content-type: application/json' \\
           -d '{"model":"solver","messages":[{"role":"user","content":"sort 53819072"}],"temperature":0}'`;

export const serveModelCommand = defineCommand({
  name: 'serve-model',
  summary: 'serve Studio policies on the OpenAI-compatible API',
  usage,
  options: {
    ...SERVER_OPTIONS,
    run: { type: 'string' },
    step: { type: 'string' },
    role: { type: 'string' },
    'batch-window': { type: 'string' },
    'join-wait': { type: 'string' },
    backend: { type: 'string' },
    engine: { type: 'string' },
    'engine-thread': { type: 'boolean' },
  },
  async run({ values, positionals }, ctx) {
    const { host, port } = listenAddress(values, DEFAULT_PORT, usage);
    const batchWindowMs = intFlag('batch-window', values['batch-window'], 0, 10_000, usage) ?? 0;
    const joinWaitMs = intFlag('join-wait', values['join-wait'], 0, 10_000, usage) ?? 0;
    choiceFlag('role', values.role, ROLES, usage);
    choiceFlag('backend', values.backend, ['auto', 'tensorflow', 'wasm', 'cpu'], usage);
    choiceFlag('engine', values.engine, ['auto', 'thread', 'inline'], usage);
    if (values['engine-thread'] && values.engine !== undefined && values.engine !== 'thread') throw new UsageError(`--engine-thread is --engine thread; it contradicts --engine ${values.engine}`, usage);
    const engineMode = values['engine-thread'] ? 'thread' : (values.engine ?? 'auto');
    // On one core a second thread only adds hand-offs; from two up, decoding gets a core of its
    // own (npm run bench -- serve on 2 cores, 8 clients: tiny-qwen's overhead 5.5% vs 18.6% inline).
    const engineThread = engineMode === 'thread' || (engineMode === 'auto' && os.availableParallelism() >= 2);
    const { token, generated } = serverToken(host, values.token, ctx.env, usage);

    const sources: Array<{ dir: string; id?: string }> = positionals.map((arg) => {
      const eq = arg.lastIndexOf('=');
      return eq > 0 ? { dir: arg.slice(0, eq), id: arg.slice(eq + 1) } : { dir: arg };
    });
    if (values.step !== undefined && values.run === undefined) throw new UsageError('--step needs --run', usage);
    if (values.run !== undefined) sources.push(...runCheckpoints(values.run, values.step, resolveDatabasePath(values.db, ctx.env)));
    if (sources.length === 0) throw new UsageError('nothing to serve: give a checkpoint folder or --run RUN', usage);

    const info = await initBackend((values.backend ?? 'auto') as BackendPreference);
    for (const { dir } of sources) if (!fs.existsSync(dir)) throw new UsageError(`${dir}: no such folder`, usage);
    const role = values.role as Role | undefined;
    // With an engine thread the weights are loaded there only; this thread keeps each policy's
    // tokenizer and context length.
    const policies: Array<ServedPolicy | ServedPolicyInfo> = sources.map(({ dir, id }) => (engineThread ? describeCheckpointPolicy(dir, { id, role }) : loadCheckpointPolicy(dir, { id, role })));
    let engine: ThreadEngine | null = null;
    if (engineThread) engine = await ThreadEngine.start({ sources: sources.map((s, i) => ({ dir: s.dir, id: policies[i].id, role })), backend: info.name, windowMs: batchWindowMs, joinWaitMs });
    const engines = engine ? new Map(policies.map((p) => [p.id, engine!.engineFor(p.id)])) : undefined;
    const disposeInline = () => {
      for (const p of policies) if ('model' in p) p.model.dispose();
    };
    const server = await createModelServer({ policies, host, port, token, batchWindowMs, joinWaitMs, engines, log: ctx.err }).catch(async (error: unknown) => {
      await engine?.close();
      disposeInline();
      throw error;
    });
    const lines = [
      `Serving on ${server.baseUrl} (OpenAI-compatible; backend ${info.name}; decoding ${engine ? 'in its own thread' : 'in the HTTP thread'}):`,
      ...policies.map((p) => `  ${p.id.padEnd(12)} ${p.source}  (context ${p.context} tokens)`),
    ];
    lines.push(...accessLines({ host, port: server.port, token, generated, tokenLine: (t, g) => `  API key: ${t}${g ? ' (generated for this session)' : ''}; clients send "Authorization: Bearer KEY".` }));
    lines.push('Press Ctrl-C to stop.');
    ctx.out(lines.join('\n'));
    await untilStopped(ctx);
    await server.close();
    await engine?.close();
    disposeInline();
    ctx.err('Stopped.');
    return 0;
  },
});

/** The policy folders of a run's checkpoint at `step` (default: its latest), from the store. */
function runCheckpoints(run: string, step: string | undefined, databasePath: string): Array<{ dir: string; id?: string }> {
  const store = openStore(databasePath, { readonly: true });
  try {
    const row = store.runs.find(run);
    if (!row) throw new UsageError(`--run ${run}: no such run in ${databasePath}`, usage);
    const all = store.events.checkpoints(row.id);
    if (all.length === 0) throw new UsageError(`--run ${run}: the run has no checkpoints yet`, usage);
    const wanted = step === undefined ? Math.max(...all.map((c) => c.step)) : intFlag('step', step, 0, Number.MAX_SAFE_INTEGER, usage)!;
    const at = all.filter((c) => c.step === wanted);
    if (at.length === 0) throw new UsageError(`--step ${wanted}: run ${run} has checkpoints at steps ${[...new Set(all.map((c) => c.step))].join(', ')}`, usage);
    const gone = at.filter((c) => !fs.existsSync(c.path));
    if (gone.length > 0) throw new UsageError(`--run ${run}: checkpoint ${gone[0].path} is gone (a run keeps its two newest checkpoints); pick another --step`, usage);
    return at.map((c) => ({ dir: c.path, id: path.basename(c.path) }));
  } finally {
    store.close();
  }
}

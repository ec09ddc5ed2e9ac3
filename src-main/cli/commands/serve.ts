import path from 'node:path';
import { openStudio } from '../../app/studio';
import { resolveDatabasePath } from '../../engine/paths';
import { buildInstructions, buildOutDir, buildRenderer, defaultRendererDir } from '../../server/renderer-build';
import { createStudioServer } from '../../server/server';
import { rendererBuilt } from '../../server/static-files';
import { UsageError } from '../args';
import { defineCommand } from '../context';
import { accessLines, listenAddress, SERVER_OPTIONS, serverToken, untilStopped } from '../serving';

const DEFAULT_PORT = 7878;

const usage = `Usage: marsrl serve [--host HOST] [--port PORT] [--token TOKEN] [--db PATH] [--renderer DIR] [--no-build]

Serves MarsRL Studio to a web browser: the desktop app's interface and API over HTTP, with live
updates over a WebSocket. Runs, dashboards and trajectories of the database are shown as they
train, including runs started by other processes.

  --host HOST     address to listen on (default 127.0.0.1: this machine only). Any other address
                  requires an access token: one is generated and printed, unless --token or
                  MARSRL_TOKEN gives it.
  --port PORT     port to listen on (default ${DEFAULT_PORT}; 0 picks a free port)
  --token TOKEN   access token (or MARSRL_TOKEN), at least 16 characters; when given, it is
                  required on loopback too
  --renderer DIR  serve this built renderer instead of the project's out/renderer
  --no-build      if the renderer is not built, do not build it; print what to run instead
                  (the first start builds it, about a minute, printing its progress; into
                  MARSRL_BUILD_OUT when set, else the project's out/)

To watch a GPU box from a laptop, keep the default host and tunnel over SSH:
  ssh -L ${DEFAULT_PORT}:127.0.0.1:${DEFAULT_PORT} gpu-box   then open http://127.0.0.1:${DEFAULT_PORT}/`;

export const serveCommand = defineCommand({
  name: 'serve',
  summary: 'serve the interface to a web browser (HTTP + WebSocket)',
  usage,
  options: {
    ...SERVER_OPTIONS,
    renderer: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
  },
  maxPositionals: 0,
  async run({ values }, ctx) {
    const { host, port } = listenAddress(values, DEFAULT_PORT, usage);
    const { token, generated } = serverToken(host, values.token, ctx.env, usage);

    let rendererDir = values.renderer ? path.resolve(values.renderer) : defaultRendererDir(ctx.env);
    if (!rendererBuilt(rendererDir)) {
      if (values.renderer) {
        throw new UsageError(`--renderer ${values.renderer}: no index.html there (build the renderer with: ${buildInstructions()})`, usage);
      }
      if (values['no-build']) {
        ctx.err(`The interface is not built (no ${path.join(rendererDir, 'index.html')}). Serving the API only. To build it run:\n  ${buildInstructions()}`);
      } else {
        const outcome = await buildRenderer({ outDir: buildOutDir(ctx.env), log: ctx.err });
        if (!outcome.ok) {
          ctx.err(`Could not build the interface: ${outcome.reason}.\nServing the API only. To build it run:\n  ${buildInstructions()}`);
        }
      }
      if (!rendererBuilt(rendererDir)) rendererDir = defaultRendererDir(ctx.env);
    }

    const databasePath = resolveDatabasePath(values.db, ctx.env);
    // The manager lets the browser launch runs; the watcher pushes what `marsrl run` in another
    // terminal writes.
    const studio = openStudio({ databasePath, transport: 'http', origin: 'marsrl serve', watch: true, reattachEngineRuns: true });
    const { recovered } = studio;
    if (recovered.length > 0) ctx.err(`Marked ${recovered.length} run(s) interrupted: their worker process is gone (${recovered.join(', ')}).`);

    let server;
    try {
      server = await createStudioServer({ service: studio.service, hub: studio.hub, host, port, token, rendererDir, log: ctx.err });
    } catch (error) {
      await studio.close();
      throw error;
    }

    const lines = [
      `MarsRL Studio is serving ${databasePath}`,
      `  Open: ${server.loginUrl}`,
    ];
    lines.push(...accessLines({ host, port: server.port, token, generated, tokenLine: (t, g) => `  Token: ${t}${g ? ' (generated for this session)' : ''}; API clients send "Authorization: Bearer TOKEN".` }));
    lines.push('Press Ctrl-C to stop.');
    ctx.out(lines.join('\n'));

    await untilStopped(ctx);
    // Runs launched from the browser belong to this process; they stop resumable, not killed.
    await studio.close({ reason: 'marsrl serve was stopped', edges: [server] });
    ctx.err('Stopped.');
    return 0;
  },
});

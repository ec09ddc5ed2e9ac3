/**
 * An in-process `serve-model` server for one test file, driven by the official `openai` npm
 * package as an independent client. Registers its own hooks, like the e2e session: the wasm
 * backend and the server before all tests, the server closed (then the file's own cleanup) after.
 */
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import type { ModelServer } from '../../src-main/server/openai/server';
import { startedBy } from './started';

/** The shipped quick checkpoints: one Studio checkpoint folder per role. */
export const QUICK_CHECKPOINTS = path.resolve(__dirname, '../../resources/checkpoints/quick');

/** The key sent to a loopback server started without a token (the client refuses to send none). */
export const LOOPBACK_KEY = 'unused-on-loopback';

/** The `openai` client on a served endpoint; no retries, so a test sees the server's first answer. */
export function openAiClient(baseURL: string, apiKey = LOOPBACK_KEY): OpenAI {
  return new OpenAI({ baseURL, apiKey, maxRetries: 0 });
}

export interface ServedModels {
  readonly server: ModelServer;
  readonly client: OpenAI;
}

export function servedModels(options: {
  /** Loads the file's policies and starts its server (the backend is ready by then). */
  start: () => Promise<ModelServer>;
  /** The key the client sends: the server's token where it has one. */
  apiKey?: string;
  /** After the server is closed: what else the file started or wrote. */
  cleanup?: () => unknown;
  /** The start's own time limit, where loading takes longer than a hook's default. */
  timeoutMs?: number;
}): ServedModels {
  let server: ModelServer | undefined;
  let client: OpenAI | undefined;
  const ready = startedBy('the model server');

  beforeAll(async () => {
    await initBackend('wasm');
    server = await options.start();
    client = openAiClient(server.baseUrl, options.apiKey);
  }, options.timeoutMs);

  afterAll(async () => {
    await server?.close();
    await options.cleanup?.();
  });

  return {
    get server() {
      return ready(server, 'server');
    },
    get client() {
      return ready(client, 'client');
    },
  };
}

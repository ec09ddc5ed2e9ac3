/**
 * What the configured interpreter has installed (resources/engines/probe.py prints one line
 * `MARSRL_PROBE {json}`): run directly for a local head, or as a short Ray job on a cluster (the
 * interpreter lives there). `marsrl doctor` and the plan read the same answer.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { resourcesDir } from '../../resources';
import { shellQuote } from '../hydra';
import type { EngineProbe } from '../types';
import { RayError, type RayJobsClient } from './client';
import { isTerminal } from './types';

export const PROBE_MARKER = 'MARSRL_PROBE ';

export function probeScript(): string {
  return fs.readFileSync(path.join(resourcesDir(), 'engines', 'probe.py'), 'utf8');
}

/** The probe's answer in a log or an output; null when the line is absent. */
export function parseProbe(output: string): EngineProbe | null {
  const line = output.split('\n').reverse().find((l) => l.includes(PROBE_MARKER));
  if (!line) return null;
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(line.slice(line.indexOf(PROBE_MARKER) + PROBE_MARKER.length)) as Record<string, unknown>;
  } catch {
    return null;
  }
  const s = (k: string) => (typeof json[k] === 'string' ? (json[k] as string) : null);
  return {
    python: s('python') ?? '',
    verl: s('verl'),
    drmas: json.drmas === true,
    drmasRoot: s('drmas_root'),
    ray: s('ray'),
    torch: s('torch'),
    vllm: s('vllm'),
    sglang: s('sglang'),
    tensorboard: s('tensorboard'),
  };
}

/**
 * Runs the probe with a local interpreter. `cwd` is DrMAS's checkout when configured (its
 * `agent_system/` is importable only from there); otherwise `/`, so a folder named `verl` in the
 * Studio's own folder is never mistaken for the package.
 */
export function probeLocal(python: string, cwd = '/', timeoutMs = 120_000): Promise<EngineProbe> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-c', probeScript()], { cwd, timeout: timeoutMs, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      const probe = parseProbe(stdout);
      if (probe) return resolve(probe);
      const why = error ? ((error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such interpreter' : error.message.split('\n')[0]) : 'no answer';
      reject(new Error(`engine.python: ${python} could not run the engine probe (${why})${stderr ? `: ${stderr.trim().split('\n').slice(-1)[0]}` : ''}`));
    });
  });
}

/** Runs the probe as a Ray job on the cluster (its interpreter and packages are there). */
export async function probeOnCluster(client: RayJobsClient, python: string, options: { cwd?: string; timeoutMs?: number; pollMs?: number } = {}): Promise<EngineProbe> {
  const id = `marsrl-probe-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const entrypoint = `cd ${shellQuote(options.cwd ?? '/')} && ${shellQuote(python)} -c ${shellQuote(probeScript())}`;
  await client.submit({ entrypoint, submission_id: id, metadata: { marsrl_probe: '1' } });
  const deadline = Date.now() + (options.timeoutMs ?? 300_000);
  for (;;) {
    const job = await client.status(id);
    if (isTerminal(job.status)) {
      const logs = await client.logs(id);
      const probe = parseProbe(logs);
      if (probe) return probe;
      throw new Error(`engine.python: the probe job ${id} ended ${job.status} without an answer: ${job.message ?? ''}`.trim());
    }
    if (Date.now() > deadline) {
      await client.stop(id).catch(() => false);
      throw new RayError('timeout', `the probe job ${id} did not finish in time (${job.status}: ${job.message ?? ''}); is the cluster busy?`);
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 1000));
  }
}

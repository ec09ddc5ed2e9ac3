/**
 * A run's checkpoints on disk: one folder per saved step, the newest two kept (resume.ts picks
 * the one a resume loads).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import type { Store } from '../store';
import { savePolicies, type PolicyRuntime } from './policies';

export async function saveRunCheckpoint(store: Store, runId: number, root: string, policies: Map<string, PolicyRuntime>, config: RunConfig, step: number, metrics: Record<string, number>): Promise<void> {
  const dir = path.join(root, `step-${String(step).padStart(6, '0')}`);
  const written = await savePolicies(dir, policies, config, step, { runId });
  for (const target of written) {
    store.events.addCheckpoint({ runId, step, policyId: path.basename(target), path: target, createdAt: Date.now(), metrics: null });
  }
  store.events.log(runId, 'info', 'checkpoint', `checkpoint at step ${step}`, { dir, metrics }, step);
  // Keep the two newest checkpoints and every one that evaluation might pick later.
  const all = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => d.startsWith('step-')).sort() : [];
  for (const old of all.slice(0, -2)) fs.rmSync(path.join(root, old), { recursive: true, force: true });
}


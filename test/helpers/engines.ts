/**
 * Engine-run test helpers (issue 38): the shipped presets as documents, plans with a given probe,
 * and the stand-in interpreter's path.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { deepMerge } from '../../src-main/engine/config/load';
import { getEngine } from '../../src-main/engine/engines/registry';
import { parseEngineRun } from '../../src-main/engine/engines/run-config';
import type { EnginePlan, EngineProbe, PlanContext } from '../../src-main/engine/engines/types';

export const STANDIN_PYTHON = path.resolve('test/helpers/standin/python');

export function presetDoc(name: 'verl-grpo' | 'drmas-marsrl', over: Record<string, unknown> = {}): Record<string, unknown> {
  const doc = YAML.parse(fs.readFileSync(path.resolve('resources/presets', `${name}.yaml`), 'utf8')) as Record<string, unknown>;
  return deepMerge(doc, over);
}

export function probeOf(over: Partial<EngineProbe> = {}): EngineProbe {
  return { python: '/opt/venv/bin/python', verl: '0.7.1', drmas: false, drmasRoot: null, ray: '2.58.0', torch: '2.8.0', vllm: '0.11.0', sglang: null, tensorboard: '2.20.0', ...over };
}

export function contextOf(root: string, over: Partial<PlanContext> = {}): PlanContext {
  return { runId: 42, runName: 'run 42', attempt: 1, storeTag: '1a2b3c4d', defaultRunRoot: root, probe: probeOf(), ...over };
}

export function planDoc(doc: unknown, context: PlanContext): EnginePlan {
  const { config, engine } = parseEngineRun(doc);
  return getEngine(engine.kind).plan(config, engine, context);
}

/** A directory standing for DrMAS's checkout (`agent_system/` is what makes its imports work). */
export function fakeDrmasCheckout(root: string): string {
  const dir = path.join(root, 'DrMAS');
  fs.mkdirSync(path.join(dir, 'agent_system'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'verl'), { recursive: true });
  return dir;
}

/** The small run every end-to-end test uses: a few steps of a few problems. */
export function smallRun(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return deepMerge(
    {
      task: { train_size: 64, test_size: 20 },
      rollout: { problems_per_step: 4 },
      optimization: { steps: 3, checkpoint_every: 2 },
      eval: { every: 2, problems: 4 },
    },
    extra,
  );
}

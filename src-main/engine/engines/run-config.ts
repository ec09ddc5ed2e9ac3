/**
 * Reading a run config whose `engine.kind` is veRL or DrMAS (issue 38). The run schema holds the
 * `engine` block and, for an engine run, skips the rules of the Studio's own trainer (a GPT's
 * context, Hugging Face folders on this disk, this machine's memory): the engine trains the models
 * named in `engine.model` on its cluster, and the engine's plan checks what the engine would refuse
 * (verl/plan.ts, drmas/plan.ts).
 */
import type { EngineConfig } from '../config/engine';
import { ConfigError, parseRunConfig } from '../config/load';
import type { RunConfig } from '../config/schema';

/** The engine block of a run on Ray, or null for the Studio's own trainer. */
export function rayEngineOf(config: RunConfig): EngineConfig | null {
  return config.engine && config.engine.kind !== 'studio' ? config.engine : null;
}

/** A whole engine-run document (preset, file and `--set`s merged): the run config and its engine block. Throws ConfigError naming every field. */
export function parseEngineRun(doc: unknown, source?: string): { config: RunConfig; engine: EngineConfig } {
  const config = parseRunConfig(doc, source);
  const engine = rayEngineOf(config);
  if (!engine) throw new ConfigError([{ path: 'engine.kind', message: 'this is a Studio run; engine runs have engine.kind verl or drmas', value: config.engine?.kind ?? 'studio' }], source);
  return { config, engine };
}

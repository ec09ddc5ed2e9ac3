/**
 * Who trains a run (issue 38): the Studio's own trainer, or an outside engine on Ray. The run
 * config's `engine.kind` offers them; src-main/engine/engines/ holds one folder per Ray engine.
 */
export const ENGINE_KINDS = ['studio', 'verl', 'drmas'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
/** The kinds that run on Ray (studio is the Studio's own trainer). */
export type RayEngineKind = Exclude<EngineKind, 'studio'>;

/** Whether a stored run config (loosely typed: a run row's snapshot) is trained by an engine on Ray. */
export function isRayEngineRun(config: Record<string, unknown>): boolean {
  const engine = config.engine as { kind?: unknown } | undefined | null;
  return typeof engine === 'object' && engine !== null && (engine.kind === 'verl' || engine.kind === 'drmas');
}

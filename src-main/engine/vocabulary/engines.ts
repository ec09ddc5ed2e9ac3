/**
 * Who trains a run (issue 38): the Studio's own trainer, or an outside engine on Ray. The run
 * config's `engine.kind` offers them; src-main/engine/engines/ holds one folder per Ray engine.
 */
export const ENGINE_KINDS = ['studio', 'verl', 'drmas'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];
/** The kinds that run on Ray (studio is the Studio's own trainer). */
export type RayEngineKind = Exclude<EngineKind, 'studio'>;

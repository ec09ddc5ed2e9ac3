/**
 * The names of the strategies a run config chooses among (issue 37, the vocabulary leaf): how
 * later agents select their inputs, how rewards are given and how advantages are normalized. The
 * schema offers them as enums; agents/selection.ts and rl/ implement them. The roles themselves
 * are src-shared/agents.ts's (ROLES), shared with the renderer.
 */

/** How a Verifier or Corrector picks the outputs it reads (MarsRL: adaptive works best). */
export const SELECTION_STRATEGIES = ['random', 'balanced', 'adaptive'] as const;
export type SelectionStrategy = (typeof SELECTION_STRATEGIES)[number];

/** decoupled: agent-specific rewards (MarsRL); shared: the episode outcome for every turn. */
export const REWARD_SCHEMES = ['decoupled', 'shared'] as const;

/** Advantage normalization (Dr. MAS Table 3). */
export const ADVANTAGE_MODES = ['agentwise', 'global', 'agent-mean', 'agent-std', 'no-std'] as const;
export const STD_CONVENTIONS = ['unbiased', 'population'] as const;
export const SINGLE_SAMPLE_RULES = ['zero', 'verl'] as const;

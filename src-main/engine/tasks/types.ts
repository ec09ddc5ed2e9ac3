/**
 * The contract every task family implements, and the words around it: the engine's vocabulary
 * (vocabulary/problems.ts) holds them so that the agents read them without reading the tasks.
 */
export type { GenerateOptions, Problem, Split, TaskFamily, TaskNotation } from '../vocabulary';

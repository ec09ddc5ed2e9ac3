/** The engine's vocabulary leaf (issue 37): names and types the config, the agents and the tasks share. */
export * from './problems';
export * from './strategies';
export * from './engines';

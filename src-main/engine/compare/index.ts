/** Comparing runs: summaries, groups over seeds, bands, spikes, diff-only configs. Pure except load.ts. */
export * from './stats';
export * from './spikes';
export * from './config-diff';
export * from './summary';
export * from './series';
export { loadRuns, isSummaryKey, UnknownRunError } from './load';

export * from './format';
export { collapseFlags, collapseFromCounts, MIN_CLASS, MIN_OUTPUTS, NEARLY_ALL, WINDOW_STEPS, type CollapseFlag } from './collapse';
export { compareWarnings, studyCommand, SUGGESTED_SEEDS, type CompareWarning } from './warnings';
export { DEFAULT_PROBLEM_STEPS, listProblemOutcomes, matchProblems, outcomesDiffer, problemEpisodes, ProblemRequestError, runLabel, spreadSteps, type MatchedProblem } from './problems';

/**
 * The one home of the tests' store seeders: `seedStudio` (a database that looks like training
 * wrote it, for the UI, server and store tests), `createFixture` (the export tests' awkward
 * cases), the two real quick runs' turns, issue 40's two runs on the same problems (`seedProblems`),
 * and the row builders they all write with.
 */
export * from './studio';
export * from './export';
export * from './quick-runs';
export * from './rows';
export * from './credit';
export * from './problems';

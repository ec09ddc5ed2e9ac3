/**
 * No shipped function over 150 lines (issue 37). Today's long functions are listed with the step
 * of the restructure that splits them; the test fails on any other, and on a listed one that is
 * no longer long, so the list only shrinks until it is empty.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionsOf, longFunctions } from './function-length';

const ROOT = path.join(import.meta.dirname, '..', '..');
const BUDGET = 150;

/** `file name`, as function-length.ts names them. */
const KNOWN_LONG: Record<string, string> = {
  'src-main/engine/served/system-run.ts systemRun': 'phase B: one run shell for training and system runs',
  'src-main/engine/training/pipeline-trainer.ts trainPipelined': 'phase B: training split by what it does',
  'src-main/engine/training/pipeline-rollout.ts runRolloutLoop': 'phase B: training split by what it does',
  'src-main/engine/training/trainer.ts trainRun': 'phase B: one run shell for training and system runs',
  'src-main/engine/export/index.ts runExport': 'phase B: the engine split',
  'src-main/api/service.ts createStudioService': 'phase B: the service split by area',
  'src-main/server/server.ts createStudioServer': 'phase B: the server split by route family',
  'src-main/server/openai/server.ts createModelServer': 'phase B: the server split by route family',
  'src-main/runner/manager.ts createRunManager': 'phase B: the run manager split',
  'src-main/bench/hf.ts run': 'phase A2: benchmarks out of the shipped tree',
  'src-main/bench/reliability.ts badInputs': 'phase A2: benchmarks out of the shipped tree',
  'src-renderer/src/stores/exports.ts (callback of defineStore)': 'phase B: renderer stores split into composables',
  'src-renderer/src/stores/trajectories.ts (callback of defineStore)': 'phase B: renderer stores split into composables',
  'src-renderer/src/stores/newRun.ts (callback of defineStore)': 'phase B: renderer stores split into composables',
  'src-renderer/src/stores/runs.ts (callback of defineStore)': 'phase B: renderer stores split into composables',
  'src-renderer/src/stores/dashboard.ts (callback of defineStore)': 'phase B: renderer stores split into composables',
};

describe(`shipped functions stay under ${BUDGET} lines (issue 37)`, () => {
  const long = longFunctions(ROOT, BUDGET);
  const keys = long.map((f) => `${f.file} ${f.name}`);

  it('has no long function outside the shrinking list', () => {
    const unknown = long.filter((f) => !(`${f.file} ${f.name}` in KNOWN_LONG));
    expect(unknown.map((f) => `${f.file}:${f.line} ${f.name} is ${f.lines} lines (budget ${BUDGET}): split it into functions that read top to bottom`)).toEqual([]);
  });

  it('lists no function that is no longer long (delete its entry)', () => {
    expect(Object.keys(KNOWN_LONG).filter((k) => !keys.includes(k))).toEqual([]);
  });

  it('measures every function form by its first and last line, nested ones on their own', () => {
    const code = ['function outer() {', '  const inner = () => {', '    return 1;', '  };', '  return inner();', '}', 'class A { method() {', '  return 2;', '} }'].join('\n');
    expect(functionsOf('x.ts', code, 10, 2)).toEqual([
      { file: 'x.ts', name: 'outer', line: 11, lines: 6 },
      { file: 'x.ts', name: 'inner', line: 12, lines: 3 },
      { file: 'x.ts', name: 'method', line: 17, lines: 3 },
    ]);
    expect(functionsOf('x.ts', code, 0, 6)).toEqual([]);
  });
});

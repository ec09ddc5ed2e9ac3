/**
 * What a comparison cannot claim (issue 35, "A comparison that misleads"): how many seeds stand
 * behind each side, and, where a side is one seed, that a difference is not evidence (two runs
 * of one config differ from seed to seed, and one run per side says nothing about by how much),
 * with the study that would make it evidence; and every agent that collapsed to one output,
 * which an accuracy column hides.
 */
import type { CollapseFlag } from './collapse';
import type { Comparison } from './summary';

export interface CompareWarning {
  kind: 'one-seed' | 'collapse';
  message: string;
  command: string | null;
  runIds: number[];
}

/** Seeds per side of a study `marsrl study --like` launches by default. */
export const SUGGESTED_SEEDS = 3;

export function studyCommand(runIds: readonly number[], seeds = SUGGESTED_SEEDS): string {
  return `marsrl study --like ${runIds.join(',')} --seeds ${seeds}`;
}

const seedWords = (seeds: readonly number[]) => `${seeds.length} seed${seeds.length === 1 ? '' : 's'} (${seeds.join(', ')})`;

function oneSeedWarning(comparison: Comparison): CompareWarning | null {
  if (comparison.groups.length > 0) {
    const lone = comparison.groups.filter((g) => g.seeds.length === 1);
    if (lone.length === 0 || comparison.groups.length < 2) return null;
    const sides = comparison.groups.map((g) => `${g.label}: ${seedWords(g.seeds)}`).join('; ');
    return {
      kind: 'one-seed',
      message: `Seeds behind each side — ${sides}. ${lone.length === comparison.groups.length ? 'Every side is' : `${lone.map((g) => g.label).join(', ')} ${lone.length === 1 ? 'is' : 'are'}`} one seed, so a difference from ${lone.length === 1 ? 'it' : 'them'} is not evidence: runs of one config differ from seed to seed, and one run cannot tell by how much. Run each side with more seeds:`,
      command: studyCommand(comparison.groups.map((g) => g.runIds[0])),
      runIds: lone.flatMap((g) => g.runIds),
    };
  }
  if (comparison.runs.length < 2) return null;
  const sides = comparison.runs.map((r) => `run ${r.runId}: seed ${r.seed}`).join('; ');
  return {
    kind: 'one-seed',
    message: `Each side is one run of one seed (${sides}), so a difference between them is not evidence: runs of one config differ from seed to seed, and one run per side cannot tell by how much. Run each config with more seeds, then compare the groups:`,
    command: studyCommand(comparison.runs.map((r) => r.runId)),
    runIds: comparison.runs.map((r) => r.runId),
  };
}

export function compareWarnings(comparison: Comparison, collapse: ReadonlyMap<number, readonly CollapseFlag[]>): CompareWarning[] {
  const warnings: CompareWarning[] = [];
  const seeds = oneSeedWarning(comparison);
  if (seeds) warnings.push(seeds);
  for (const run of comparison.runs) {
    for (const flag of collapse.get(run.runId) ?? []) {
      warnings.push({ kind: 'collapse', message: `Run ${run.runId} (${run.name}): ${flag.message}. Its accuracy is not the agents doing their jobs.`, command: null, runIds: [run.runId] });
    }
  }
  return warnings;
}

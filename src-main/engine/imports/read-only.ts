/**
 * Imported runs are read-only (issue 39): their records are another tool's history, so nothing
 * here stops, resumes or runs them again. What is new in their source comes in by importing it
 * again. Renaming, notes, tags, deleting and re-judging stay allowed: they are the Studio's own.
 */
import type { RunRow } from '../store';

export type ReadOnlyAction = 'stop' | 'resume' | 'run-again';

const DOING: Record<ReadOnlyAction, string> = { stop: 'be stopped', resume: 'be resumed', 'run-again': 'be run again (it has no Studio config)' };

/** Why `action` is refused for an imported run, naming the run and its source; null for a run made here. */
export function importedRunRefusal(run: Pick<RunRow, 'id' | 'name' | 'imported'>, action: ReadOnlyAction): string | null {
  const origin = run.imported;
  if (origin === null) return null;
  const source = `${origin.format} ${origin.path}${origin.sourceKey === '.' ? '' : ` (run ${origin.sourceKey})`}`;
  return `run ${run.id} (${run.name}) was imported from ${source} and is read-only: it cannot ${DOING[action]}; re-import the source to add what is new: marsrl import ${origin.path}`;
}

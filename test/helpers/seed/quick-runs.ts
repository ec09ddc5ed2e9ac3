/**
 * The turns of two real quick runs' last ten steps (test/fixtures/collapse-quick.json: shared and
 * decoupled rewards), written as the trainer writes them: the collapse detector's test reads
 * them from the store, the end-to-end truth test shows them in the UI.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BatchWriter } from '../../../src-main/engine/store';
import { episodeRow, turnRow } from './rows';

/** [turn id, episode id, step, agent, parent turn id, parsed answer, correct (1/0/null)] */
export type QuickRunRow = [number, number, number, string, number | null, string | null, number | null];
export type QuickRun = 'shared' | 'decoupled';

export function quickRunRows(which: QuickRun): QuickRunRow[] {
  const file = path.join(import.meta.dirname, '..', '..', 'fixtures', 'collapse-quick.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { runs: Record<QuickRun, QuickRunRow[]> }).runs[which];
}

/** Writes the rows into `runId`, every id moved by `offset` (two copies of a run in one database). */
export function writeQuickRunTurns(writer: BatchWriter, runId: number, rows: QuickRunRow[], offset = 0): void {
  for (const episodeId of new Set(rows.map((r) => r[1]))) {
    writer.episode(episodeRow({ id: offset + episodeId, runId, step: rows.find((r) => r[1] === episodeId)![2] }));
  }
  for (const [id, episodeId, step, agent, parent, parsed, correct] of rows) {
    writer.turn(turnRow({
      id: offset + id, runId, episodeId: offset + episodeId, step, agent, round: agent === 'solver' ? 0 : 1,
      parentTurnId: parent === null ? null : offset + parent, parsed, correct: correct === null ? null : correct === 1,
      formatValid: parsed !== null, policyVersionMin: 0, policyVersionMax: 0,
    }));
  }
}

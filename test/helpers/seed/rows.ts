/**
 * Store rows as the trainer writes them, from the fields a seeder cares about; the rest take the
 * values of a plain first-round turn (or a one-round training episode). The seeders in this
 * folder and the tests that write a few rows of their own build every row here, so a column the
 * store gains is filled in one place.
 */
import type { EpisodeRow, TurnRow } from '../../../src-main/engine/store';

/** A turn: its policy is the agent's role (`verifier1` → `verifier`), one token per character. */
export function turnRow(row: Pick<TurnRow, 'id' | 'runId' | 'episodeId' | 'step' | 'agent'> & Partial<TurnRow>): TurnRow {
  return {
    policyId: row.agent.replace(/\d+$/, ''), round: 0, groupId: 0, parentTurnId: null, sampleIndex: 0, prompt: '', text: '',
    tokenCount: (row.text ?? '').length, parsed: null, correct: null, formatValid: true, policyVersionMin: row.step, policyVersionMax: row.step,
    createdAt: 0, ...row,
  };
}

/** An episode of the training split whose outcome is not known yet. */
export function episodeRow(row: Pick<EpisodeRow, 'id' | 'runId' | 'step'> & Partial<EpisodeRow>): EpisodeRow {
  return { problemId: null, split: 'train', finalAnswer: null, correct: null, rounds: 1, meta: null, ...row };
}

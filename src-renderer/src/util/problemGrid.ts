/**
 * The problem view's pure parts (issue 40): one problem's episodes as a grid (steps as rows, runs
 * as columns), each episode as compact tree rows, the outcome marks of the problem list, and the
 * step picker's text. No Vue here, so test/renderer/problem-view.test.ts checks it directly.
 */
import type { ProblemEpisode, ProblemEpisodes, ProblemRunOutcome, Turn } from '#shared/contract';
import { excerpt, turnTreeOrder } from '#shared/turn-tree';
import { describeParsed } from './episodeTree';

export interface GridCell {
  runId: number;
  /** The run's episodes of the problem at this step (usually one). */
  episodes: ProblemEpisode[];
  /** Why the cell is empty: the run has no such problem, or no episode of it at this step. */
  empty: string | null;
}

export interface GridRow {
  step: number;
  cells: GridCell[];
}

/** Steps as rows, the runs in their order as columns. */
export function problemGrid(view: ProblemEpisodes): GridRow[] {
  return view.steps.map((step) => ({
    step,
    cells: view.runs.map((run) => {
      const episodes = view.episodes.filter((e) => e.runId === run.runId && e.step === step);
      const empty = episodes.length ? null : run.problemId === null ? 'not in this run' : 'no episode at this step';
      return { runId: run.runId, episodes, empty };
    }),
  }));
}

export interface CompactTurnRow {
  turn: Turn;
  depth: number;
  /** The output on one line, cut to fit a cell. */
  text: string;
  /** A verdict as a word, an answer as itself. */
  outcome: string;
  tone: 'good' | 'bad' | 'dim';
}

/** A verdict as the word it stands for, an answer as itself: the trajectory tree's wording, so both views read alike. */
export const verdictWord = describeParsed;

/** An episode's turns in tree order (each output above the verdicts and repairs that read it). */
export function compactTurnRows(turns: readonly Turn[], textLength = 34): CompactTurnRow[] {
  return turnTreeOrder(turns).map(({ turn, depth }) => ({
    turn,
    depth,
    text: excerpt(turn.text, textLength),
    outcome: verdictWord(turn.agent, turn.parsed),
    tone: turn.correct === true ? 'good' : turn.correct === false ? 'bad' : 'dim',
  }));
}

/** ✓, ✗ or ? for a known, wrong or unknown outcome. */
export function outcomeMark(correct: boolean | null | undefined): string {
  return correct === true ? '✓' : correct === false ? '✗' : '?';
}

/** A run's outcome on a problem in the list: its last outcome and the episodes it solved. */
export function outcomeText(o: ProblemRunOutcome | null): { mark: string; detail: string; tone: 'good' | 'bad' | 'dim' } {
  if (!o) return { mark: '—', detail: 'not in this run', tone: 'dim' };
  if (o.lastStep === null) return { mark: '·', detail: 'no episodes yet', tone: 'dim' };
  return {
    mark: outcomeMark(o.lastCorrect),
    detail: `step ${o.lastStep} · ${o.solved}/${o.episodes} solved`,
    tone: o.lastCorrect === true ? 'good' : o.lastCorrect === false ? 'bad' : 'dim',
  };
}

/** A reward or advantage in a cell: two decimals, a true minus, a dash when none was stored. */
export function creditText(value: number | null): string {
  if (value === null) return '—';
  const text = Math.abs(value) < 0.005 ? '0.00' : Math.abs(value).toFixed(2);
  return value < 0 && text !== '0.00' ? `−${text}` : text;
}

/** Steps typed in the picker ("0, 10 20"), ascending and unique; null when a part is not a whole number. */
export function parseStepList(text: string): number[] | null {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.some((p) => !/^\d+$/.test(p))) return null;
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

/** The steps with one toggled: added if absent, removed if present (never the last one). */
export function toggleStep(steps: readonly number[], step: number): number[] {
  if (steps.includes(step)) return steps.length > 1 ? steps.filter((s) => s !== step) : [...steps];
  return [...steps, step].sort((a, b) => a - b);
}

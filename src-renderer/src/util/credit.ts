/**
 * The turn panel's counterfactual-credit table (issue 40), laid out for a narrow pane: one column
 * per reward scheme (the run's first), a row for the reward and one per normalization mode, and
 * for each mode how far the run's stored advantage is from it under the run's scheme.
 */
import type { CounterfactualCredit } from '#shared/contract';

export interface CreditCell {
  value: number | null;
  /** The run's own scheme (and, in a mode row, its own mode): the stored value. */
  own: boolean;
}

export interface CreditRow {
  kind: 'reward' | 'advantage';
  /** 'reward', or the mode's name. */
  label: string;
  cells: CreditCell[];
  /** Advantage rows: stored advantage − this mode's under the run's scheme; null for the reward row or when unknown. */
  delta: number | null;
}

export interface CreditTable {
  schemes: string[];
  rows: CreditRow[];
  /** The run's own cell equals the stored advantage (to 1e-9 relative); null when the run's scheme · mode is not one the Studio computes. */
  reproduced: boolean | null;
}

export function creditTable(c: CounterfactualCredit): CreditTable {
  const schemes = [c.scheme, ...c.schemes.filter((s) => s !== c.scheme)];
  const reward: CreditRow = { kind: 'reward', label: 'reward', cells: schemes.map((s) => ({ value: c.rewards[s] ?? null, own: s === c.scheme })), delta: null };
  const modes = c.modes.map((mode): CreditRow => {
    const mine = c.advantages[c.scheme]?.[mode] ?? null;
    return {
      kind: 'advantage',
      label: mode,
      cells: schemes.map((s) => ({ value: c.advantages[s]?.[mode] ?? null, own: s === c.scheme && mode === c.mode })),
      delta: mine === null ? null : c.stored.advantage - mine,
    };
  });
  const own = c.advantages[c.scheme]?.[c.mode];
  const reproduced = !c.reproducible ? null : own !== undefined && own !== null && Math.abs(own - c.stored.advantage) <= 1e-9 * Math.max(1, Math.abs(c.stored.advantage));
  return { schemes, rows: [reward, ...modes], reproduced };
}

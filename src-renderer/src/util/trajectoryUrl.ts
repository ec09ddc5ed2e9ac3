/**
 * The trajectory browser's filters ↔ its URL (issue 35: a link or the Back button kept only the
 * step and the open episode). Every filter is a query parameter, absent when "any"; a value the
 * browser does not know is dropped rather than guessed. Pure, so the round trip is tested.
 */
import type { EpisodeQuery } from '#shared/contract';

/**
 * The trajectory browser's filters as they appear in its URL (issue 35): each a query parameter,
 * absent when "any". The view turns them into store filters and back; unknown values are dropped.
 * Here rather than in the router or the store, which both import it: util sits under both.
 */
export const TRAJECTORY_FILTER_KEYS = ['view', 'outcome', 'split', 'verifier', 'corrector', 'from', 'to', 'q', 'agent', 'correct', 'rmin', 'rmax', 'superseded'] as const;
export type TrajectoryFilters = Partial<Record<(typeof TRAJECTORY_FILTER_KEYS)[number], string>>;

/** The episode filters (issue 18); null is "any". */
export interface EpisodeFilters {
  outcome: EpisodeQuery['outcome'] | null;
  verifier: EpisodeQuery['verifier'] | null;
  corrector: EpisodeQuery['corrector'] | null;
  split: EpisodeQuery['split'] | null;
  stepFrom: number | null;
  stepTo: number | null;
  search: string;
}

export const NO_EPISODE_FILTERS: EpisodeFilters = { outcome: null, verifier: null, corrector: null, split: null, stepFrom: null, stepTo: null, search: '' };

export interface TurnFilters {
  agent: string | null;
  correct: boolean | null;
  minReward: number | null;
  maxReward: number | null;
}

export interface BrowserFilters {
  mode: 'episodes' | 'turns';
  episode: EpisodeFilters;
  turn: TurnFilters;
  includeSuperseded: boolean;
}

export const NO_TURN_FILTERS: TurnFilters = { agent: null, correct: null, minReward: null, maxReward: null };

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[]): T | null {
  return value !== undefined && (allowed as readonly string[]).includes(value) ? (value as T) : null;
}
function step(value: string | undefined): number | null {
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : null;
}
function finite(value: string | undefined): number | null {
  if (value === undefined || value.trim() === '') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

export function filtersFromUrl(f: TrajectoryFilters): BrowserFilters {
  return {
    mode: f.view === 'turns' ? 'turns' : 'episodes',
    episode: {
      ...NO_EPISODE_FILTERS,
      outcome: oneOf<NonNullable<EpisodeQuery['outcome']>>(f.outcome, ['solved', 'unsolved']),
      split: oneOf<NonNullable<EpisodeQuery['split']>>(f.split, ['train', 'test']),
      verifier: oneOf<NonNullable<EpisodeQuery['verifier']>>(f.verifier, ['false_approve', 'false_reject']),
      corrector: oneOf<NonNullable<EpisodeQuery['corrector']>>(f.corrector, ['fixed', 'broke', 'unchanged']),
      stepFrom: step(f.from),
      stepTo: step(f.to),
      search: f.q ?? '',
    },
    turn: {
      agent: f.agent !== undefined && /^[a-z]+\d*$/.test(f.agent) ? f.agent : null,
      correct: f.correct === 'true' ? true : f.correct === 'false' ? false : null,
      minReward: finite(f.rmin),
      maxReward: finite(f.rmax),
    },
    includeSuperseded: f.superseded === '1',
  };
}

export function urlFromFilters(b: BrowserFilters): TrajectoryFilters {
  const out: TrajectoryFilters = {};
  const set = (key: keyof TrajectoryFilters, value: string | number | boolean | null | undefined) => {
    if (value !== null && value !== undefined && value !== '') out[key] = String(value);
  };
  if (b.mode === 'turns') out.view = 'turns';
  set('outcome', b.episode.outcome);
  set('split', b.episode.split);
  set('verifier', b.episode.verifier);
  set('corrector', b.episode.corrector);
  set('from', b.episode.stepFrom);
  set('to', b.episode.stepTo);
  set('q', b.episode.search.trim());
  set('agent', b.turn.agent);
  set('correct', b.turn.correct);
  set('rmin', b.turn.minReward);
  set('rmax', b.turn.maxReward);
  if (b.includeSuperseded) out.superseded = '1';
  return out;
}

/** A stable text of a filter set, to tell whether two URLs ask for the same lists. */
export function filtersKey(f: TrajectoryFilters): string {
  return JSON.stringify(Object.entries(f).filter(([, v]) => v !== undefined).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * A hash router: the page is one file (file:// in Electron, `/` under `marsrl serve`), so the
 * view lives in the fragment and a reload or a copied URL reopens the same view.
 *
 *   #/runs                                  runs table
 *   #/new?preset=quick | ?from=12           new-run form (from a preset, or a run's settings)
 *   #/runs/12?tab=charts|pipeline|events|config
 *   #/runs/12/trajectories?step=40&episode=9&turn=311&corrector=broke&view=turns&agent=verifier1
 *                                           (the browser's filters too, so a link or Back keeps them)
 *   #/compare?runs=3,4,5&study=2            compare runs (a study's runs, grouped by its axes)
 *   #/studies | #/studies/2                 studies: list and launch, one study's progress
 *   #/problem?runs=3,4&problem=17&steps=0,10,20&differs=1&split=test
 *                                           one problem across steps and runs (issue 40); `turn=311`
 *                                           instead of `problem` opens a turn's problem
 */
import { shallowRef } from 'vue';
import { TRAJECTORY_FILTER_KEYS, type TrajectoryFilters } from './util/trajectoryUrl';

/** The run page's tabs; `engine` (a veRL or DrMAS run's Ray jobs, issue 38) is shown only for runs an engine trains. */
export const RUN_TABS = ['charts', 'engine', 'pipeline', 'events', 'config'] as const;
export type RunTab = (typeof RUN_TABS)[number];

export type Route =
  | { name: 'runs' }
  | { name: 'new'; preset: string | null; from: number | null }
  | { name: 'run'; runId: number; tab: RunTab }
  | { name: 'trajectories'; runId: number; step: number | null; episode: number | null; turn: number | null; filters?: TrajectoryFilters }
  | { name: 'compare'; runs: number[]; study: number | null }
  | { name: 'studies'; studyId: number | null }
  | ProblemRoute
  | { name: 'not-found'; path: string };

/** One problem across the steps of the chosen runs (issue 40), with the problem list's filters. */
export interface ProblemRoute {
  name: 'problem';
  runs: number[];
  problem: number | null;
  turn: number | null;
  /** The steps shown; empty for the default spread. */
  steps: number[];
  differs: boolean;
  split: 'train' | 'test' | null;
}

function problemRoute(query: URLSearchParams): ProblemRoute {
  const ids = (key: string) => (query.get(key) ?? '').split(',').map(positiveInt).filter((id): id is number => id !== null);
  const split = query.get('split');
  return {
    name: 'problem',
    runs: [...new Set(ids('runs').filter((id) => id > 0))],
    problem: positiveInt(query.get('problem')),
    turn: positiveInt(query.get('turn')),
    steps: [...new Set(ids('steps'))].sort((a, b) => a - b),
    differs: query.get('differs') === '1',
    split: split === 'train' || split === 'test' ? split : null,
  };
}

function trajectoryFilters(query: URLSearchParams): TrajectoryFilters {
  const out: TrajectoryFilters = {};
  for (const key of TRAJECTORY_FILTER_KEYS) {
    const value = query.get(key);
    if (value !== null && value !== '') out[key] = value;
  }
  return out;
}

function positiveInt(text: string | null): number | null {
  if (text === null || !/^\d+$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/runs';
  const [pathPart, queryPart = ''] = raw.split('?', 2);
  const query = new URLSearchParams(queryPart);
  const parts = pathPart.split('/').filter(Boolean);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'runs')) return { name: 'runs' };
  if (parts.length === 1 && parts[0] === 'new') return { name: 'new', preset: query.get('preset'), from: positiveInt(query.get('from')) };
  if (parts.length === 1 && parts[0] === 'compare') {
    const runs = (query.get('runs') ?? '').split(',').map(positiveInt).filter((id): id is number => id !== null && id > 0);
    return { name: 'compare', runs: [...new Set(runs)], study: positiveInt(query.get('study')) };
  }
  if (parts.length === 1 && parts[0] === 'problem') return problemRoute(query);
  if (parts[0] === 'studies' && parts.length <= 2) {
    const studyId = parts.length === 2 ? positiveInt(parts[1]) : null;
    if (parts.length === 1 || (studyId !== null && studyId > 0)) return { name: 'studies', studyId };
  }
  if (parts[0] === 'runs' && parts.length >= 2) {
    const runId = positiveInt(parts[1]);
    if (runId !== null && runId > 0) {
      if (parts.length === 2) {
        const tab = query.get('tab');
        return { name: 'run', runId, tab: (RUN_TABS as readonly string[]).includes(tab ?? '') ? (tab as RunTab) : 'charts' };
      }
      if (parts.length === 3 && parts[2] === 'trajectories') {
        return { name: 'trajectories', runId, step: positiveInt(query.get('step')), episode: positiveInt(query.get('episode')), turn: positiveInt(query.get('turn')), filters: trajectoryFilters(query) };
      }
    }
  }
  return { name: 'not-found', path: pathPart };
}

export function hrefOf(route: Route): string {
  const withQuery = (path: string, entries: [string, string | number | null][]) => {
    const query = new URLSearchParams();
    for (const [key, value] of entries) if (value !== null) query.set(key, String(value));
    const text = query.toString();
    return `#${path}${text ? `?${text}` : ''}`;
  };
  switch (route.name) {
    case 'runs':
      return '#/runs';
    case 'new':
      return withQuery('/new', [['preset', route.preset], ['from', route.from]]);
    case 'run':
      return withQuery(`/runs/${route.runId}`, [['tab', route.tab === 'charts' ? null : route.tab]]);
    case 'trajectories':
      return withQuery(`/runs/${route.runId}/trajectories`, [
        ['step', route.step],
        ...TRAJECTORY_FILTER_KEYS.map((key): [string, string | null] => [key, route.filters?.[key] ?? null]),
        ['episode', route.episode],
        ['turn', route.turn],
      ]);
    case 'compare':
      return withQuery('/compare', [['runs', route.runs.length ? route.runs.join(',') : null], ['study', route.study]]);
    case 'studies':
      return route.studyId === null ? '#/studies' : `#/studies/${route.studyId}`;
    case 'problem':
      return withQuery('/problem', [
        ['runs', route.runs.length ? route.runs.join(',') : null],
        ['problem', route.problem],
        ['turn', route.turn],
        ['steps', route.steps.length ? route.steps.join(',') : null],
        ['differs', route.differs ? 1 : null],
        ['split', route.split],
      ]);
    case 'not-found':
      return `#${route.path}`;
  }
}

/** The current route; replaced (never mutated) on every hash change. */
export const currentRoute = shallowRef<Route>(parseHash(window.location.hash));

window.addEventListener('hashchange', () => {
  currentRoute.value = parseHash(window.location.hash);
});

/** Go to `route`; `replace` keeps filter tweaks out of the back-button history. */
export function navigate(route: Route, replace = false): void {
  const href = hrefOf(route);
  if (href === window.location.hash) return;
  if (replace) {
    window.history.replaceState(null, '', href);
    currentRoute.value = parseHash(href);
  } else {
    window.location.hash = href;
  }
}

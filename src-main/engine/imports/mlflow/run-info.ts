/**
 * What a Studio run takes from an MLflow run's info, params and tags, in both stores. The name is
 * the `mlflow.runName` tag, else the run's own name (meta.yaml `run_name`, the SQL store's
 * `runs.name`), as MLflow's `_get_run_name_from_tags` and `RunInfo.run_name` do; else the id.
 * Tags under `mlflow.` are MLflow's system tags (mlflow/utils/mlflow_tags.py); the others are the
 * user's and become Studio tags `key=value`.
 */
import type { ScannedRun } from '../types';

export interface RunInfo {
  id: string;
  name: unknown;
  startTime: unknown;
  endTime: unknown;
  params: Record<string, string>;
  tags: Record<string, string>;
}

function millis(value: unknown): number | null {
  const number = typeof value === 'number' ? value : typeof value === 'string' && value !== '' ? Number(value) : NaN;
  return Number.isFinite(number) ? number : null;
}

export interface MetricTally {
  steps: Set<number>;
  keys: Set<string>;
  points: number;
}

export function emptyTally(): MetricTally {
  return { steps: new Set(), keys: new Set(), points: 0 };
}

export function scannedRun(info: RunInfo, tally: MetricTally): ScannedRun {
  const steps = [...tally.steps].sort((a, b) => a - b);
  const ownName = typeof info.name === 'string' && info.name !== '' ? info.name : info.id;
  return {
    key: info.id,
    name: info.tags['mlflow.runName'] || ownName,
    steps: steps.length,
    firstStep: steps.length > 0 ? steps[0] : null,
    lastStep: steps.length > 0 ? steps[steps.length - 1] : null,
    metricKeys: [...tally.keys].sort(),
    metricPoints: tally.points,
    generations: 0,
    episodes: 0,
    agents: [],
    config: { ...info.params },
    tags: Object.entries(info.tags)
      .filter(([key]) => !key.startsWith('mlflow.'))
      .map(([key, value]) => `${key}=${value}`),
    startedAt: millis(info.startTime),
    endedAt: millis(info.endTime),
  };
}

/** How a compare table colours a difference; its text is src-shared/format.ts's (formatMetric …), as in the CLI and the report. */
import type { CompareMetric } from '#shared/contract';

/** good / bad / neutral for colouring a delta by the metric's better direction. */
export function deltaTone(delta: number | null | undefined, metric: CompareMetric): 'good' | 'bad' | '' {
  if (delta === null || delta === undefined || delta === 0 || metric.better === null) return '';
  return (delta > 0) === (metric.better === 'higher') ? 'good' : 'bad';
}

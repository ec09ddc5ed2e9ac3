/**
 * A run's credit divergence (issue 40): per step, agent and alternative (scheme, mode), the mean
 * |run's advantage − alternative's| and the spread (population std) of the alternative's
 * advantages, accumulated group by group from `counterfactualGroup`. Dr. MAS's Lemma 4.2 says
 * global normalization inflates the gradient of an agent whose rewards sit far from the pooled
 * mean; the std lines show that inflation on the run's own data, the |Δ| lines how much credit
 * each agent would have had otherwise. One pass, memory bounded by steps × agents × alternatives.
 */
import type { CreditDivergence, CreditDivergenceSeries } from '#shared/contract';
import { reproducible, type StoredCreditTurn, type TurnCredit } from './counterfactual';

/** Running mean |Δ| and, by Welford's update, the mean and squared deviations of the alternative's advantages. */
interface Cell {
  n: number;
  absDiff: number;
  mean: number;
  m2: number;
}

const SEP = '\u0000';

export class CreditDivergenceAccumulator {
  private readonly cells = new Map<string, Map<number, Cell>>();
  private readonly agents = new Set<string>();
  private readonly steps = new Set<number>();
  private turns = 0;
  private groups = 0;
  private maxStoredDifference = 0;
  private rewardMismatches = 0;

  constructor(
    private readonly scheme: string,
    private readonly mode: string,
    private readonly schemes: readonly string[],
    private readonly modes: readonly string[],
  ) {}

  /** Adds one group: its stored turns and their credit, in the same order. */
  add(step: number, stored: readonly StoredCreditTurn[], credit: readonly TurnCredit[]): void {
    this.groups++;
    this.steps.add(step);
    credit.forEach((c, i) => {
      const actual = stored[i].advantage;
      this.turns++;
      this.agents.add(c.agent);
      if (c.rewardMatches === false) this.rewardMismatches++;
      const own = c.advantages[this.scheme]?.[this.mode];
      if (own !== null && own !== undefined) this.maxStoredDifference = Math.max(this.maxStoredDifference, Math.abs(own - actual));
      for (const scheme of this.schemes) {
        for (const mode of this.modes) {
          const value = c.advantages[scheme]?.[mode];
          if (value === null || value === undefined) continue;
          const cell = this.cell(`${scheme}${SEP}${mode}${SEP}${c.agent}`, step);
          cell.n++;
          cell.absDiff += Math.abs(actual - value);
          const delta = value - cell.mean;
          cell.mean += delta / cell.n;
          cell.m2 += delta * (value - cell.mean);
        }
      }
    });
  }

  private cell(key: string, step: number): Cell {
    let byStep = this.cells.get(key);
    if (!byStep) this.cells.set(key, (byStep = new Map()));
    let cell = byStep.get(step);
    if (!cell) byStep.set(step, (cell = { n: 0, absDiff: 0, mean: 0, m2: 0 }));
    return cell;
  }

  /** The result, with `runId` and the seconds the caller measured. */
  result(runId: number, seconds: number): CreditDivergence {
    const steps = [...this.steps].sort((a, b) => a - b);
    const agents = [...this.agents].sort();
    const series: CreditDivergenceSeries[] = [];
    for (const scheme of this.schemes) {
      for (const mode of this.modes) {
        for (const agent of agents) {
          const byStep = this.cells.get(`${scheme}${SEP}${mode}${SEP}${agent}`);
          if (!byStep) continue;
          const at = steps.map((s) => byStep.get(s));
          series.push({
            scheme,
            mode,
            agent,
            meanAbsDiff: at.map((c) => (c ? c.absDiff / c.n : null)),
            std: at.map((c) => (c ? Math.sqrt(c.m2 / c.n) : null)),
          });
        }
      }
    }
    return {
      runId,
      scheme: this.scheme,
      mode: this.mode,
      schemes: [...this.schemes],
      modes: [...this.modes],
      agents,
      steps,
      series,
      turns: this.turns,
      groups: this.groups,
      reproducible: reproducible(this.scheme, this.mode),
      maxStoredDifference: this.maxStoredDifference,
      rewardMismatches: this.rewardMismatches,
      seconds,
    };
  }
}

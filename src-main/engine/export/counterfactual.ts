/**
 * Counterfactual columns for the trajectories export (issue 40, option `counterfactual`, CLI
 * `--counterfactual`): `reward_<scheme>` for every reward scheme and `advantage_<mode>` for every
 * normalization mode under the run's own scheme (a mode's `-` written `_`), computed by
 * rl/credit-run.ts from each turn's stored group. The run's own mode's column equals the stored
 * `advantage`. Held-out turns (no advantage) get nulls.
 *
 * Pages arrive in turn-id order and a group's turns are contiguous in id, so each group is read
 * once and its credit kept until the cache is full.
 */
import { creditModes, creditSchemes } from '../rl/counterfactual';
import { creditOfGroup, scoringOptionsOf } from '../rl/credit-run';
import { CreditRepo, type Store } from '../store';
import type { Row } from './formats';
import { f64, type ColumnSpec } from './schema';

const column = (prefix: 'reward' | 'advantage', name: string) => `${prefix}_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;

/** The columns added, after the trajectory table's own. */
export function counterfactualColumns(): ColumnSpec[] {
  return [
    ...creditSchemes().map((scheme) => f64(column('reward', scheme), true, `Issue 40: the turn's reward under the ${scheme} scheme, recomputed from its stored outcome (the run's own scheme: the stored reward); null for a held-out turn or one whose correctness is unknown.`)),
    ...creditModes().map((mode) => f64(column('advantage', mode), true, `Issue 40: the turn's advantage under ${mode} normalization of its group's rewards under the run's scheme; equals \`advantage\` where the run used ${mode}.`)),
  ];
}

const CACHE_LIMIT = 50_000;

export class CounterfactualColumns {
  private readonly repo: CreditRepo;
  private readonly cache = new Map<number, Row>();
  private readonly options = new Map<number, ReturnType<typeof scoringOptionsOf>>();
  private readonly empty: Row;

  constructor(private readonly store: Store) {
    this.repo = new CreditRepo(store.db);
    this.empty = Object.fromEntries(counterfactualColumns().map((c) => [c.name, null]));
  }

  /** The added columns of turn `turnId` of run `runId`. */
  of(turnId: number, runId: number): Row {
    const cached = this.cache.get(turnId);
    if (cached) return cached;
    const group = this.repo.groupOfTurn(turnId);
    if (!group) return this.empty;
    if (this.cache.size > CACHE_LIMIT) this.cache.clear();
    const credit = creditOfGroup(group, this.optionsOf(runId));
    credit.forEach((c) => {
      const row: Row = {};
      for (const scheme of creditSchemes()) row[column('reward', scheme)] = c.rewards[scheme];
      for (const mode of creditModes()) row[column('advantage', mode)] = c.advantages[group.scheme]?.[mode] ?? null;
      this.cache.set(c.turnId, row);
    });
    return this.cache.get(turnId) ?? this.empty;
  }

  private optionsOf(runId: number): ReturnType<typeof scoringOptionsOf> {
    let options = this.options.get(runId);
    if (!options) this.options.set(runId, (options = scoringOptionsOf(this.store.runs.get(runId)?.config ?? {})));
    return options;
  }
}

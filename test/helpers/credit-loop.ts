/**
 * An independent recomputation of counterfactual credit (issue 40) in plain loops over plain SQL
 * rows, written from DESIGN.md and the papers, not from engine/rl: rewards by hand (decoupled: a
 * turn's own correctness; shared: the majority outcome of the chains through the turn, a chain's
 * outcome being its last Solver/Corrector turn's correctness), then μ and σ by hand per mode.
 */
import type { Database } from 'better-sqlite3';

export interface LoopRow {
  id: number;
  episode_id: number;
  step: number;
  agent: string;
  parent_turn_id: number | null;
  correct: number | null;
  format_valid: number;
  reward: number;
  scheme: string;
  advantage: number;
  mode: string;
  weight: number;
  group_key: string;
}

export function loopRows(db: Database, runId: number): LoopRow[] {
  return db
    .prepare(
      `SELECT t.id, t.episode_id, t.step, t.agent, t.parent_turn_id, t.correct, t.format_valid, r.value AS reward, r.scheme,
              a.value AS advantage, a.mode, a.weight, a.group_key
         FROM turns t, rewards r, advantages a WHERE r.turn_id = t.id AND a.turn_id = t.id AND t.run_id = ? AND t.superseded_by IS NULL ORDER BY t.id`,
    )
    .all(runId) as LoopRow[];
}

const roleOf = (agent: string) => (agent.startsWith('verifier') ? 'verifier' : agent.startsWith('corrector') ? 'corrector' : 'solver');

/** Rewards of one group's rows under a scheme, by hand (format penalty and role scales as given). */
export function loopRewards(group: LoopRow[], scheme: string, penalty: number, scale: Record<string, number> = {}): number[] {
  const right = (row: LoopRow, ok: boolean) => (ok ? (scale[roleOf(row.agent)] ?? 1) : 0) - (row.format_valid ? 0 : penalty);
  if (scheme === 'decoupled') return group.map((row) => right(row, row.correct === 1));
  // Chains: from each Solver turn a Verifier read (or every Solver turn if none was read) to each leaf.
  const children = new Map<number, number[]>();
  for (const row of group) if (row.parent_turn_id !== null) children.set(row.parent_turn_id, [...(children.get(row.parent_turn_id) ?? []), row.id]);
  const byId = new Map(group.map((row) => [row.id, row]));
  const solvers = group.filter((row) => roleOf(row.agent) === 'solver');
  const roots = solvers.some((s) => children.has(s.id)) ? solvers.filter((s) => children.has(s.id)) : solvers;
  const votes = new Map<number, { yes: number; all: number }>();
  const walk = (id: number, path: number[]) => {
    const next = children.get(id) ?? [];
    if (next.length > 0) {
      for (const child of next) walk(child, [...path, id]);
      return;
    }
    const chain = [...path, id];
    let outcome = false;
    for (let k = chain.length - 1; k >= 0; k--) {
      const row = byId.get(chain[k])!;
      if (roleOf(row.agent) !== 'verifier') {
        outcome = row.correct === 1;
        break;
      }
    }
    for (const member of chain) {
      const v = votes.get(member) ?? { yes: 0, all: 0 };
      v.all++;
      if (outcome) v.yes++;
      votes.set(member, v);
    }
  };
  for (const root of roots) walk(root.id, []);
  return group.map((row) => {
    const v = votes.get(row.id);
    return right(row, v === undefined ? row.correct === 1 : v.yes * 2 >= v.all);
  });
}

/** Advantages of one group under a mode: unbiased std (N − 1), ε = 1e-6, a one-sample statistic zeroes (the defaults). */
export function loopAdvantages(group: LoopRow[], rewards: number[], mode: string, eps = 1e-6): number[] {
  const stats = (indices: number[]) => {
    let sum = 0;
    for (const i of indices) sum += rewards[i];
    const mean = sum / indices.length;
    let sq = 0;
    for (const i of indices) sq += (rewards[i] - mean) ** 2;
    return { n: indices.length, mean, std: indices.length > 1 ? Math.sqrt(sq / (indices.length - 1)) : 0 };
  };
  const all = group.map((_, i) => i);
  return group.map((row, i) => {
    const mine = all.filter((j) => group[j].agent === row.agent);
    const baseline = mode === 'global' || mode === 'agent-std' ? stats(all) : stats(mine);
    const scale = mode === 'no-std' ? null : mode === 'global' || mode === 'agent-mean' ? stats(all) : stats(mine);
    if (baseline.n === 1 || (scale !== null && scale.n === 1)) return 0;
    const a = scale === null ? rewards[i] - baseline.mean : (rewards[i] - baseline.mean) / (scale.std + eps);
    return a * row.weight;
  });
}

/** Rows grouped by (episode, group key), in id order. */
export function loopGroups(rows: LoopRow[]): LoopRow[][] {
  const groups = new Map<string, LoopRow[]>();
  for (const row of rows) {
    const key = `${row.episode_id}|${row.group_key}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()];
}

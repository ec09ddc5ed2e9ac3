/**
 * An episode's turns as the rows of a tree: the Solver group, under each selected solution the
 * Verifier group that judged it, under a rejecting verdict the Corrector group that repaired it,
 * then the next round under each repair. Siblings of one sampling group get a header row, so
 * "4 samples judging solution #3" reads as a unit. Rows have one height, so the tree can be
 * virtualised like every other list.
 */
import type { EpisodeDetail } from '../../../src-preload/api';

export type EpisodeTurn = EpisodeDetail['turns'][number];

export type TreeRow =
  | { kind: 'group'; key: string; depth: number; agent: string; groupId: number; round: number; count: number; parent: EpisodeTurn | null }
  | { kind: 'turn'; key: string; depth: number; turn: EpisodeTurn; children: number };

function siblingOrder(a: EpisodeTurn, b: EpisodeTurn): number {
  return a.round - b.round || a.groupId - b.groupId || a.sampleIndex - b.sampleIndex || a.id - b.id;
}

export function episodeTreeRows(turns: readonly EpisodeTurn[]): TreeRow[] {
  const ids = new Set(turns.map((t) => t.id));
  const children = new Map<number | null, EpisodeTurn[]>();
  for (const turn of turns) {
    // A parent outside this episode (should not happen) puts the turn at the top, not nowhere.
    const parent = turn.parentTurnId !== null && ids.has(turn.parentTurnId) ? turn.parentTurnId : null;
    children.set(parent, [...(children.get(parent) ?? []), turn]);
  }
  const rows: TreeRow[] = [];
  const visit = (parentId: number | null, depth: number, parent: EpisodeTurn | null) => {
    const list = (children.get(parentId) ?? []).slice().sort(siblingOrder);
    let i = 0;
    while (i < list.length) {
      const first = list[i];
      let j = i;
      while (j < list.length && list[j].agent === first.agent && list[j].groupId === first.groupId) j++;
      rows.push({ kind: 'group', key: `g:${parentId ?? 'root'}:${first.agent}:${first.groupId}`, depth, agent: first.agent, groupId: first.groupId, round: first.round, count: j - i, parent });
      for (const turn of list.slice(i, j)) {
        rows.push({ kind: 'turn', key: `t:${turn.id}`, depth, turn, children: children.get(turn.id)?.length ?? 0 });
        visit(turn.id, depth + 1, turn);
      }
      i = j;
    }
  };
  visit(null, 0, null);
  return rows;
}

/** Agents a run's chain has: the Solver, then a Verifier and a Corrector per round. */
export function chainAgents(rounds: number): string[] {
  const agents = ['solver'];
  for (let r = 1; r <= rounds; r++) agents.push(`verifier${r}`, `corrector${r}`);
  return agents;
}

/** How a parsed output reads: a Verifier's verdict as a word, an answer as itself. */
export function describeParsed(agent: string, parsed: string | null): string {
  if (parsed === null) return 'unparsed';
  if (agent.startsWith('verifier')) {
    if (parsed === 'approve' || parsed === 'ok') return 'approves';
    if (parsed === 'reject' || parsed === 'no') return 'rejects';
  }
  return parsed;
}

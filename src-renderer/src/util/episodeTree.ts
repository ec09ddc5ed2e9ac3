/**
 * An episode's turns as the rows of a tree: the Solver group, under each selected solution the
 * Verifier group that judged it, under a rejecting verdict the Corrector group that repaired it,
 * then the next round under each repair. Siblings of one sampling group get a header row, so
 * "4 samples judging solution #3" reads as a unit. Rows have one height, so the tree can be
 * virtualised like every other list.
 */
import { hasRole } from '#shared/agents';
import type { EpisodeDetail } from '#shared/contract';

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

/** How a parsed output reads: a Verifier's verdict as a word, an answer as itself. */
export function describeParsed(agent: string, parsed: string | null): string {
  if (parsed === null) return 'unparsed';
  if (hasRole(agent, 'verifier')) {
    if (parsed === 'approve' || parsed === 'ok') return 'approves';
    if (parsed === 'reject' || parsed === 'no') return 'rejects';
  }
  return parsed;
}

export interface BranchMark {
  /** This turn decided the episode's final answer (one turn per episode; see finalTurnId). */
  final: boolean;
  /** Why the chain goes no further from this turn, when it does not. */
  stop: string | null;
}

const isRejection = (t: EpisodeTurn) => t.parsed === 'reject' || t.parsed === 'no';
const isApproval = (t: EpisodeTurn) => t.parsed === 'approve' || t.parsed === 'ok';

/**
 * Which branch produced the episode's final answer and why each branch stopped (issue 18), by
 * MarsRL's rules (agents/outcome.ts): an answer stands until a Verifier rejects it and a Corrector
 * replaces it; a chain stops at an approval, at an unparseable verdict, when selection passed a
 * sample over (only `select_k` of a group go on), or at the round limit.
 */
export function branchMarks(turns: readonly EpisodeTurn[], rounds: number, finalAnswer: string | null): Map<number, BranchMark> {
  const finalTurn = finalTurnId(turns, finalAnswer);
  const children = new Map<number, EpisodeTurn[]>();
  for (const t of turns) if (t.parentTurnId !== null) children.set(t.parentTurnId, [...(children.get(t.parentTurnId) ?? []), t]);
  const groupOf = (t: EpisodeTurn) => turns.filter((s) => s.parentTurnId === t.parentTurnId && s.agent === t.agent && s.groupId === t.groupId);
  const kept = (t: EpisodeTurn) => {
    const group = groupOf(t);
    return { k: group.filter((s) => (children.get(s.id)?.length ?? 0) > 0).length, n: group.length };
  };
  const marks = new Map<number, BranchMark>();
  for (const t of turns) {
    const below = children.get(t.id) ?? [];
    const verifier = hasRole(t.agent, 'verifier');
    let stop: string | null = null;
    if (verifier) {
      if (isApproval(t)) stop = 'approved: the chain ends here';
      else if (!isRejection(t)) stop = 'verdict unreadable: the chain ends here';
      else if (below.length === 0) {
        const { k, n } = kept(t);
        stop = t.round >= rounds ? 'round limit reached' : k > 0 ? `not repaired: selection kept ${k} of ${n} verdicts` : 'not repaired';
      }
    } else if (below.length === 0) {
      const { k, n } = kept(t);
      if (t.round >= rounds) stop = 'round limit reached';
      else if (k > 0) stop = `not judged: selection kept ${k} of ${n}`;
    } else if (!below.some(isRejection)) {
      stop = 'no rejection: every verdict approved';
    }
    marks.set(t.id, { final: t.id === finalTurn, stop });
  }
  return marks;
}

/**
 * The one turn that gave the episode its final answer (issue 35: "★ final" was on up to nine
 * turns of one episode). The engine's rule (training/rollout.ts finishEpisode, agents/outcome.ts):
 * every chain from a verified Solver turn (every Solver turn when none was verified) down to a
 * leaf, in turn order, is walked — an answer stands until a Verifier rejects it and a Corrector
 * replaces it; the chain stops at a Verifier that does not reject — and the episode's answer is
 * the majority of the chains' answers, ties to the first. The turn marked is the one that decided
 * the first chain ending with that answer. Null when no chain ends with it.
 */
export function finalTurnId(turns: readonly EpisodeTurn[], finalAnswer: string | null): number | null {
  if (finalAnswer === null) return null;
  const byId = [...turns].sort((a, b) => a.id - b.id);
  const children = new Map<number, EpisodeTurn[]>();
  for (const t of byId) if (t.parentTurnId !== null) children.set(t.parentTurnId, [...(children.get(t.parentTurnId) ?? []), t]);
  const solvers = byId.filter((t) => t.agent === 'solver');
  const verified = solvers.filter((t) => children.has(t.id));
  const chains: EpisodeTurn[][] = [];
  const walk = (turn: EpisodeTurn, path: EpisodeTurn[]) => {
    const next = children.get(turn.id) ?? [];
    if (next.length === 0) chains.push([...path, turn]);
    for (const child of next) walk(child, [...path, turn]);
  };
  for (const root of verified.length > 0 ? verified : solvers) walk(root, []);
  const target = finalAnswer.trim();
  for (const chain of chains) {
    let decider: EpisodeTurn = chain[0];
    for (const turn of chain.slice(1)) {
      if (hasRole(turn.agent, 'verifier')) {
        if (!isRejection(turn)) break;
      } else decider = turn;
    }
    if (decider.parsed !== null && decider.parsed.trim() === target) return decider.id;
  }
  return null;
}

/**
 * An episode's turns in tree order with their depth: each turn followed by the turns that read it
 * (a Solver answer, the verdicts on it, the repairs of a rejecting verdict), siblings by round,
 * sampling group and sample. Shared by the CLI's `marsrl problem` and the renderer's compact
 * episode cells (issue 40), so both read an episode the same way.
 */
export interface TreeTurn {
  id: number;
  parentTurnId: number | null;
  round: number;
  groupId: number;
  sampleIndex: number;
}

export function turnTreeOrder<T extends TreeTurn>(turns: readonly T[]): { turn: T; depth: number }[] {
  const ids = new Set(turns.map((t) => t.id));
  const children = new Map<number | null, T[]>();
  for (const turn of turns) {
    // A parent outside the episode puts the turn at the top rather than nowhere.
    const parent = turn.parentTurnId !== null && ids.has(turn.parentTurnId) ? turn.parentTurnId : null;
    children.set(parent, [...(children.get(parent) ?? []), turn]);
  }
  const order = (a: T, b: T) => a.round - b.round || a.groupId - b.groupId || a.sampleIndex - b.sampleIndex || a.id - b.id;
  const out: { turn: T; depth: number }[] = [];
  const visit = (parent: number | null, depth: number) => {
    for (const turn of (children.get(parent) ?? []).slice().sort(order)) {
      out.push({ turn, depth });
      visit(turn.id, depth + 1);
    }
  };
  visit(null, 0);
  return out;
}

/** A text cut to `max` characters on one line (an ellipsis marks the cut). */
export function excerpt(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, Math.max(0, max - 1))}…`;
}

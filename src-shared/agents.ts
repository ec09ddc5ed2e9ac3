/**
 * Agent naming, in one place for the engine, the CLI and the UI (issue 37: it was written in six).
 *
 * MarsRL (arXiv 2511.11373) unrolls the chain into agents: the Solver (round 0), then a Verifier
 * and a Corrector per verify/correct round — `solver`, `verifier1`, `corrector1`, `verifier2`, …
 * Verifier r and Corrector r are separate agents for rewards and statistics because their inputs
 * differ, even when they share one policy; the role is what they share.
 *
 * Two readings of a name: `parseAgentName` (and `roleOf`, `roundOf`) accept only names
 * `agentName` writes and throw on anything else, for the engine, where another name is a bug;
 * `splitAgent` reads any name (its trailing digits are the round), for what shows or exports
 * stored names and must not fail on one.
 */

/** The roles of the chain, in chain order. */
export const ROLES = ['solver', 'verifier', 'corrector'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The agent name of a role in a round: `agentName('solver', 0)` = `solver`,
 * `agentName('verifier', 2)` = `verifier2`, `agentName('corrector', 1)` = `corrector1`.
 * The Solver only acts in round 0; Verifiers and Correctors in rounds 1, 2, …
 */
export function agentName(role: Role, round: number): string {
  if (!Number.isInteger(round) || round < 0) throw new Error(`agentName: round must be a non-negative integer, got ${round}`);
  if (role === 'solver') {
    if (round !== 0) throw new Error(`agentName: the solver only acts in round 0, got round ${round}`);
    return 'solver';
  }
  if (round === 0) throw new Error(`agentName: a ${role} acts in rounds 1, 2, …, got round 0`);
  return `${role}${round}`;
}

const AGENT_PATTERN = /^(solver|verifier|corrector)(\d*)$/;

/** Splits an agent name into its role and round; throws on a name `agentName` cannot produce. */
export function parseAgentName(agent: string): { role: Role; round: number } {
  const match = AGENT_PATTERN.exec(agent);
  if (match) {
    const role = match[1] as Role;
    const round = match[2] === '' ? 0 : Number(match[2]);
    const canonicalRound = role === 'solver' ? round === 0 && match[2] === '' : round >= 1 && String(round) === match[2];
    if (canonicalRound) return { role, round };
  }
  throw new Error(`unknown agent name "${agent}": expected solver, verifier<r> or corrector<r> with r = 1, 2, …`);
}

/** The role of an agent: `roleOf('verifier2')` = `verifier`. */
export function roleOf(agent: string): Role {
  return parseAgentName(agent).role;
}

/** The round of an agent: 0 for the solver, r for verifier<r> and corrector<r>. */
export function roundOf(agent: string): number {
  return parseAgentName(agent).round;
}

/** The unrolled chain for `rounds` verify/correct rounds: solver, verifier1, corrector1, …. */
export function agentChain(rounds: number): string[] {
  const chain = ['solver'];
  for (let round = 1; round <= rounds; round++) chain.push(agentName('verifier', round), agentName('corrector', round));
  return chain;
}

/**
 * Any stored name → its role and round, never failing: the name without its trailing digits,
 * and those digits (0 when there are none). `verifier2` → verifier, 2; `system` → system, 0.
 */
export function splitAgent(agent: string): { role: string; round: number } {
  const match = /^(.*?)(\d+)$/.exec(agent);
  return match ? { role: match[1], round: Number(match[2]) } : { role: agent, round: 0 };
}

/** True when a stored name is an agent of `role` (`verifier2` is a verifier). */
export function hasRole(agent: string, role: Role): boolean {
  return splitAgent(agent).role === role;
}

/** Chain order: Solver, then Verifier1, Corrector1, Verifier2 … ; names of no role after, A→Z. */
export function compareAgents(a: string, b: string): number {
  const order = (agent: string): number => {
    const { role, round } = splitAgent(agent);
    const rank = (ROLES as readonly string[]).indexOf(role);
    return rank < 0 ? Number.MAX_SAFE_INTEGER : round * ROLES.length + rank;
  };
  return order(a) - order(b) || a.localeCompare(b);
}

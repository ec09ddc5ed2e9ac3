/**
 * DrMAS's agents and worker groups (langfengQ/DrMAS@19c632bc `agent_system/agent/utils.py`
 * `build_wg_ids`), reproduced so the Studio knows, before the job runs, which worker group each
 * agent trains in and what its metric keys (`actor/{wg_id}/grad_norm`) and checkpoint folders
 * (`global_step_N/actor/{wg_id}/`) will be called.
 *
 *  - without model sharing, one group per agent: `f"{normalize_model_id(model)}_{normalize_model_id(agent)}"`
 *    — the agent id goes through `normalize_model_id` (`split("/")[-1]`), so its spaces survive:
 *    `Qwen3-4B_Solver Agent`;
 *  - with model sharing, one group per distinct model id (first appearance order):
 *    `"_".join([normalize_model_id(model)] + [normalize_agent_id(a) …])`, `normalize_agent_id(a) =
 *    a.strip().replace(" ", "")`: `Qwen3-4B_SolverAgent_VerifierAgent`.
 */
import type { Role } from '#shared/agents';
import type { EngineAgent } from '../follow/spec';

/** The ids the Studio's agents have in DrMAS: its own Solver and Verifier, and the Corrector the Studio's hook registers. */
export const DRMAS_AGENT_IDS: Readonly<Record<Role, string>> = {
  solver: 'Solver Agent',
  verifier: 'Verifier Agent',
  corrector: 'Corrector Agent',
};

export function normalizeModelId(id: string): string {
  return id.split('/').pop() ?? id;
}

export function normalizeAgentId(id: string): string {
  return id.trim().replace(/ /g, '');
}

export interface WorkerGroup {
  wgId: string;
  modelId: string;
  agentIds: string[];
}

/** The worker groups DrMAS builds for these agents, in its order. */
export function drmasWorkerGroups(agentIds: readonly string[], modelIds: readonly string[], sharing: boolean): WorkerGroup[] {
  if (agentIds.length !== modelIds.length) throw new Error('agent_ids and model_ids must have the same length.');
  if (!sharing) {
    return agentIds.map((agent, i) => ({ wgId: `${normalizeModelId(modelIds[i])}_${normalizeModelId(agent)}`, modelId: modelIds[i], agentIds: [agent] }));
  }
  const byModel = new Map<string, string[]>();
  agentIds.forEach((agent, i) => byModel.set(modelIds[i], [...(byModel.get(modelIds[i]) ?? []), agent]));
  return [...byModel].map(([modelId, agents]) => ({ wgId: [normalizeModelId(modelId), ...agents.map(normalizeAgentId)].join('_'), modelId, agentIds: agents }));
}

/** The Studio role of a DrMAS agent id; null for agents the Studio does not know (Search Agent …). */
export function roleOfDrmasAgent(agentId: string): Role | null {
  for (const [role, id] of Object.entries(DRMAS_AGENT_IDS) as [Role, string][]) if (id === agentId) return role;
  return null;
}

/** The follower's agent list of a DrMAS run. */
export function drmasEngineAgents(groups: readonly WorkerGroup[]): EngineAgent[] {
  return groups.flatMap((g) => g.agentIds.map((engineId) => ({ engineId, wgId: g.wgId, role: roleOfDrmasAgent(engineId) })));
}

/**
 * Engines by kind, registered like task families and advantage modes (DESIGN.md): an unknown
 * kind fails with the list of known ones.
 */
import type { RunConfig } from '../config/schema';
import type { EngineConfig } from '../config/engine';
import { planDrmas } from './drmas/plan';
import type { FollowOptions } from './follow/follower';
import { JobFollower } from './follow/live';
import type { FollowSpec } from './follow/spec';
import type { RayJobsClient } from './ray/client';
import { submitPlan } from './submit';
import type { EngineAdapter, EnginePlan, PlanContext, RayEngineKind } from './types';
import { planVerl } from './verl/plan';

const ENGINES = new Map<RayEngineKind, EngineAdapter>();

export function registerEngine(adapter: EngineAdapter): void {
  if (ENGINES.has(adapter.kind)) throw new Error(`engine "${adapter.kind}" is already registered`);
  ENGINES.set(adapter.kind, adapter);
}

export function getEngine(kind: string): EngineAdapter {
  const adapter = ENGINES.get(kind as RayEngineKind);
  if (!adapter) throw new Error(`unknown engine "${kind}"; known engines: studio (the Studio's own trainer), ${[...ENGINES.keys()].join(', ')}`);
  return adapter;
}

export function engineKinds(): RayEngineKind[] {
  return [...ENGINES.keys()];
}

function rayAdapter(kind: RayEngineKind, description: string, plan: (c: RunConfig, e: EngineConfig, ctx: PlanContext) => EnginePlan): EngineAdapter {
  return {
    kind,
    description,
    plan,
    submit: (p: EnginePlan, config: RunConfig, client: RayJobsClient) => submitPlan(p, config, client),
    follow: (spec: FollowSpec, client: RayJobsClient, submissionId: string, options?: FollowOptions) => new JobFollower(spec, client, submissionId, options),
    stop: (submissionId: string, client: RayJobsClient) => client.stop(submissionId),
  };
}

registerEngine(rayAdapter('verl', 'veRL (GRPO, one policy) on Ray: python3 -m verl.trainer.main_ppo', planVerl));
registerEngine(rayAdapter('drmas', 'DrMAS (per-agent policies, agent-wise normalization) on Ray, from its checkout', planDrmas));

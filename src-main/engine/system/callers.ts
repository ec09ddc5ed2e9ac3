/**
 * How a reasoning-system run plays a role: through the pool of served models (each call one
 * streamed chat request) or with a local policy (a segmented decode), behind one signature, so a
 * chain never knows which.
 */
import type { RunConfig } from '../config/schema';
import { ROLES, type Role } from '#shared/agents';
import { chatMessagesOf } from '../agents/prompts';
import { initBackend } from '../model/backend';
import { EndpointError } from '../served/client';
import { usedEndpoints } from '../served/config';
import type { EndpointPool } from '../served/pool';
import { callSampling } from '../served/roles';
import { createPolicy, type PolicyRuntime } from '../training/policies';
import { decodeInSegmentsAsync } from '../training/rollout';
import { yieldToEventLoop, type RunShell } from '../training/run-shell';
import type { TaskData } from '../training/task-data';

/** One agent call of a chain. */
export interface CallSpec {
  role: Role;
  agent: string;
  round: number;
  prompt: string;
  temperature: number;
  seed: number;
}

export interface CallReply {
  text: string;
  /** From the server's usage, or the local decode; null when unknown. */
  tokens: number | null;
}

export interface StreamSink {
  delta(text: string): void;
  /** What streamed so far is void (a cut stream is sent again). */
  restart(): void;
}

/** Plays one role: through the pool (served) or with a local policy. */
export type AgentCaller = (spec: CallSpec, sink: StreamSink) => Promise<CallReply>;

/** A run stops on this: no retry or budget helps (wrong key, model not served, bad request). */
export class FatalCallError extends Error {}

export function servedCaller(pool: EndpointPool, config: RunConfig, role: Role): AgentCaller {
  return async (spec, sink) => {
    const result = await pool.chat(spec.agent, chatMessagesOf(spec.prompt) ?? [{ role: 'user', content: spec.prompt }], {
      sampling: callSampling(config, role, spec.temperature, spec.seed),
      onChunk: (c) => (c.restart ? sink.restart() : c.index === 0 && c.delta ? sink.delta(c.delta) : undefined),
    });
    const choice = result.choices[0];
    if (!choice) throw new EndpointError(`endpoint ${pool.endpointOf(spec.agent)}: the reply has no choice`, pool.endpointOf(spec.agent), 'malformed', 200, true, result.attempts);
    return { text: choice.text, tokens: result.usage?.completionTokens ?? null };
  };
}

export function localCaller(policy: PolicyRuntime, config: RunConfig): AgentCaller {
  return async (spec, sink) => {
    // Local decoding is synchronous on wasm/cpu: let stop messages and streamed replies of served agents through first.
    await yieldToEventLoop();
    const promptTokens = policy.tokenizer.promptTokens(spec.role, spec.prompt);
    const [result] = await decodeInSegmentsAsync(
      policy,
      [{ promptText: spec.prompt, promptTokens, streamId: 0 }],
      {
        seed: spec.seed,
        temperature: spec.temperature,
        topP: spec.temperature === 0 ? 1 : config.rollout.top_p,
        topK: spec.temperature === 0 ? 0 : config.rollout.top_k,
        maxNewTokens: Math.max(1, Math.min(config.rollout.max_response_tokens, policy.model.context - promptTokens.length)),
        segmentTokens: config.pipeline.segment_tokens,
        maxSegments: config.pipeline.max_segments,
        agent: spec.agent,
      },
    );
    for (const s of result.segments) sink.delta(s.text);
    return { text: policy.tokenizer.responseText(result.responseTokens), tokens: result.responseTokens.length };
  };
}

/**
 * Each role's caller: served roles through the pool, the others by local policies, built here
 * (a reasoning-system run does not train, so each needs weights to start from) and disposed
 * when the run ends.
 */
export async function agentCallers(shell: RunShell, data: TaskData, pool: EndpointPool | null): Promise<Record<Role, AgentCaller>> {
  const { store, runId, config } = shell;
  const servedRoles = new Set([...usedEndpoints(config).values()].flat());
  const callers = {} as Record<Role, AgentCaller>;
  const localRoles = ROLES.filter((r) => !servedRoles.has(r));
  if (localRoles.length > 0) {
    const backend = await initBackend(config.runtime.backend);
    store.runs.setBackend(runId, backend.name, backend as unknown as Record<string, unknown>);
    const byId = new Map<string, PolicyRuntime>();
    shell.atEnd(() => {
      for (const p of byId.values()) p.dispose();
    });
    for (const role of localRoles) {
      const id = config.agents[role];
      if (!byId.has(id)) {
        const policyConfig = config.policies[id];
        if (!policyConfig.init && policyConfig.model.kind !== 'hf') {
          throw new FatalCallError(`policies.${id}: a reasoning-system run does not train; give the policy an init checkpoint, a Hugging Face model or an endpoint`);
        }
        const { policy } = createPolicy(id, policyConfig, data.tokenizer, config.seed);
        byId.set(id, policy);
      }
      callers[role] = localCaller(byId.get(id)!, config);
    }
  }
  for (const role of servedRoles) callers[role] = servedCaller(pool!, config, role);
  return callers;
}

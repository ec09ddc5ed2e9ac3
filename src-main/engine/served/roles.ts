/**
 * A role of a run played by a served model (issue #16): the sampling a call sends, and the
 * rollout's `ServedRole` on the pool. The Studio's policies never see the endpoint; the rollout
 * asks the role for replies and judges them like its own.
 */
import { chatMessagesOf } from '../agents/prompts';
import type { RunConfig } from '../config/schema';
import type { Role } from '#shared/agents';
import type { Segment } from '#shared/contract';
import type { EndpointSampling } from './client';
import type { EndpointPool } from './pool';
import { usedEndpoints } from './config';

/**
 * A piece of a turn's text as it was decoded or streamed, with the policy version that wrote it:
 * the stored segment (the contract's Segment) before it belongs to a turn of a worker; the
 * trajectory rows write `index` as its `segIndex` (training/records.ts).
 */
export type SegmentRecord = Omit<Segment, 'segIndex' | 'worker'> & { index: number };

/**
 * A role played by a served model (issue #16): frozen, inference only. `generate` answers every
 * request, in order, with the reply's text (and its segments as they streamed); the turns are
 * parsed, judged and rewarded like the others, carry no tokens of a local tokenizer, and are not
 * trained.
 */
export interface ServedRole {
  /** The policy id its turns record (the config's policy that names the endpoint). */
  policyId: string;
  generate(agent: string, requests: readonly { promptText: string; seed: number; temperature: number }[]): Promise<Array<{ text: string; segments: SegmentRecord[]; tokens: number }>>;
}

/**
 * What one call sends: temperature 0 is greedy whatever the endpoint says; otherwise the
 * endpoint's own temperature and top_p win where it sets them (a served model comes with its
 * recommended sampling, MarsRL's 0.6 / 0.95), else the run's. Every call is seeded.
 *
 * A policy that declares a Hugging Face model sends its `enable_thinking` as a chat-template
 * option, so the server renders the chat as the Studio renders that policy's prompts (Qwen3's
 * template adds an empty think block only when asked: without it the same checkpoint served
 * answered the tiny-qwen preset's held-out problems 0.07 where in process it answered 0.30). The
 * endpoint's own `chat_template_kwargs` win over it.
 */
export function callSampling(config: RunConfig, role: Role, temperature: number, seed: number): EndpointSampling {
  const policy = config.policies[config.agents[role]];
  const endpoint = config.endpoints![policy.endpoint!];
  const sampling: EndpointSampling =
    temperature === 0
      ? { temperature: 0, seed, n: 1 }
      : { temperature: endpoint.sampling.temperature ?? temperature, top_p: endpoint.sampling.top_p ?? config.rollout.top_p, seed, n: 1 };
  sampling.max_tokens = endpoint.sampling.max_tokens ?? config.rollout.max_response_tokens;
  if (policy.model.kind === 'hf') sampling.chat_template_kwargs = { enable_thinking: policy.model.enable_thinking, ...endpoint.sampling.chat_template_kwargs };
  return sampling;
}

/**
 * The rollout's view of a served role: each request one streamed call through the pool (all at
 * once; the pool's concurrency limit queues them), its deltas gathered into segments of
 * `pipeline.segment_tokens` deltas (token ranges count deltas), a cut stream's partial text dropped.
 */
export function servedRole(pool: EndpointPool, config: RunConfig, role: Role): ServedRole {
  return {
    policyId: config.agents[role],
    generate: (agent, requests) =>
      Promise.all(
        requests.map(async (r) => {
          const segments: SegmentRecord[] = [];
          let text = '';
          let deltas = 0;
          let startedAt = Date.now();
          const close = (finished: boolean) => {
            const last = segments.at(-1);
            const endedAt = Date.now();
            segments.push({ index: segments.length, tokenStart: last?.tokenEnd ?? 0, tokenEnd: (last?.tokenEnd ?? 0) + deltas, text, finished, policyVersion: 0, startedAt, endedAt });
            text = '';
            deltas = 0;
            startedAt = endedAt;
          };
          const result = await pool.chat(agent, chatMessagesOf(r.promptText) ?? [{ role: 'user', content: r.promptText }], {
            sampling: callSampling(config, role, r.temperature, r.seed),
            onChunk: (c) => {
              if (c.restart) {
                segments.length = 0;
                text = '';
                deltas = 0;
                return;
              }
              if (c.index !== 0 || !c.delta) return;
              text += c.delta;
              deltas++;
              if (deltas >= config.pipeline.segment_tokens) close(false);
            },
          });
          const reply = result.choices[0]?.text ?? '';
          // A server that did not stream (or sent nothing) gives the whole reply as one segment.
          if (segments.length === 0 && text === '') text = reply;
          close(true);
          // The server's own count where it reports usage (n is 1 here); else one per streamed delta,
          // as a reasoning-system run counts (system/chains.ts).
          return { text: reply, segments, tokens: result.usage?.completionTokens ?? segments.at(-1)!.tokenEnd };
        }),
      ),
  };
}

/** The run's served, frozen roles (issue #16): played through the pool, never built, trained or saved. */
export function servedRoles(pool: EndpointPool | null, config: RunConfig): Partial<Record<Role, ServedRole>> {
  const served: Partial<Record<Role, ServedRole>> = {};
  if (pool) for (const roles of usedEndpoints(config).values()) for (const role of roles) served[role] = servedRole(pool, config, role);
  return served;
}

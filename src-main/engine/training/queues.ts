/**
 * The pure logic of agentic pipeline parallelism (MarsRL §3.3), kept apart from processes and
 * models so it can be tested on its own:
 *
 * - when an agent's turns may be scored without the rest of the episode (`scoringScope`);
 * - the per-agent training queues and the order the trainer takes batches in (`TrainingQueues`);
 * - the staleness bound in policy versions and how the rollout holds it (`StalenessPlanner`).
 *
 * Versions. A policy's version is the number of RL updates applied to it (PolicyRuntime.version).
 * One batch is one agent's turns of one step; the trainer applies
 * `plannedUpdates(turns with response tokens, minibatch_size, ppo_epochs)` updates for it, the same
 * count the synchronous trainer applies. A batch's *staleness* is the trainer's version of the
 * policy when it starts training the batch minus the oldest version that wrote any of its
 * segments. (Minibatches and epochs within a batch are PPO's ordinary reuse of one batch and do
 * not count.)
 *
 * How the bound is held. The rollout knows every batch it has sent, so it knows the version at
 * which the trainer will start the batch it is decoding now: its *slot*, the policy's version at
 * the start plus the planned updates of every earlier batch of that policy. Before each segment
 * it requires the weights it decodes with to be at least `slot − max_staleness` (in planned
 * updates) and waits for newer weights otherwise. A skipped (NaN/Inf) update adds a planned update
 * but no version, which only lowers the real staleness, so real staleness ≤ max_staleness.
 *
 * One exception is forced by the math: when rewards or advantages need the whole episode
 * (`scoringScope` = 'episode'), none of a step's batches can be trained before the step's last
 * agent has finished, so an agent cannot wait for the update of an earlier agent *of the same
 * step* that shares its policy (Verifier2 after Verifier1, or one policy for every role). The
 * requirement is then capped at the slot the policy had when the step began, exactly as the
 * synchronous trainer trains Verifier2's turns after Verifier1's update; the recorded staleness
 * shows it.
 */
import type { RunConfig } from '../config/schema';

/** Reward schemes whose value for a turn depends only on that turn (decoupled, MarsRL). */
export const AGENT_LOCAL_REWARDS: ReadonlySet<string> = new Set(['decoupled']);
/**
 * Advantage modes whose value for agent k's turn depends only on agent k's turns of the group
 * (agentwise: μ_k, σ_k; no-std: μ_k). global, agent-mean and agent-std use the whole group's μ or σ.
 */
export const AGENT_LOCAL_ADVANTAGES: ReadonlySet<string> = new Set(['agentwise', 'no-std']);

export type ScoringScope = 'agent' | 'episode';

/**
 * Whether an agent's turns can be scored (reward, then advantage) as soon as that agent's group
 * is complete ('agent'), or only once the whole episode is ('episode'): a shared reward needs the
 * episode's outcome, and a global baseline or scale needs every agent's rewards of the prompt.
 * A scheme or mode registered later is treated as needing the episode (the safe choice).
 */
export function scoringScope(config: Pick<RunConfig, 'reward' | 'advantage'>): { scope: ScoringScope; reason: string } {
  if (!AGENT_LOCAL_REWARDS.has(config.reward.scheme)) {
    return { scope: 'episode', reason: `reward scheme "${config.reward.scheme}" needs the episode's outcome` };
  }
  if (!AGENT_LOCAL_ADVANTAGES.has(config.advantage.mode)) {
    return { scope: 'episode', reason: `advantage mode "${config.advantage.mode}" normalizes over every agent of the prompt` };
  }
  return { scope: 'agent', reason: `${config.reward.scheme} rewards and ${config.advantage.mode} advantages use only the agent's own turns` };
}

/** Updates the trainer applies for a batch: ppo_epochs passes of ceil(samples / minibatch) steps. */
export function plannedUpdates(samples: number, minibatchSize: number, epochs: number): number {
  if (samples <= 0) return 0;
  return epochs * Math.ceil(samples / minibatchSize);
}

/** What the trainer queues need to know about a batch. */
export interface BatchKey {
  step: number;
  agent: string;
  policyId: string;
}

export type QueueItem<B extends BatchKey> = { kind: 'batch'; batch: B } | { kind: 'step-end'; step: number };

/**
 * Per-agent training queues. Each agent's finished turns enter that agent's queue as one batch
 * the moment the agent's group completes; `stepComplete` says every agent of a step has
 * finished (its episodes are whole).
 *
 * Order. The trainer takes the oldest batch that has arrived, across agents, once it is ready:
 * at once under agent scope, when its step is complete under episode scope. Taking batches in
 * arrival order keeps each policy's updates in the order the rollout planned versions by, and
 * means a step's end (metrics, store rows, checkpoint) comes after all of that step's batches
 * and before any batch of the next step. Since the rollout finishes agents in chain order, the
 * oldest batch is always the first to become ready: nothing ready waits behind something that is
 * not.
 */
export class TrainingQueues<B extends BatchKey> {
  private readonly order: QueueItem<B>[] = [];
  private readonly perAgent = new Map<string, B[]>();
  private readonly complete = new Set<number>();

  constructor(readonly scope: ScoringScope) {}

  push(batch: B): void {
    if (this.complete.has(batch.step)) throw new Error(`a batch of ${batch.agent} arrived after step ${batch.step} was complete`);
    this.order.push({ kind: 'batch', batch });
    const list = this.perAgent.get(batch.agent) ?? [];
    list.push(batch);
    this.perAgent.set(batch.agent, list);
  }

  /** Every agent of `step` has finished; its step-end follows its batches. */
  stepComplete(step: number): void {
    if (this.complete.has(step)) throw new Error(`step ${step} completed twice`);
    this.complete.add(step);
    this.order.push({ kind: 'step-end', step });
  }

  /** Whether the batch at the head may be trained now. */
  private ready(item: QueueItem<B>): boolean {
    return item.kind === 'step-end' || this.scope === 'agent' || this.complete.has(item.batch.step);
  }

  /** The next item to handle without removing it, or null when nothing is ready. */
  peek(): QueueItem<B> | null {
    const head = this.order[0];
    return head && this.ready(head) ? head : null;
  }

  /** Remove and return the next item, or null when nothing is ready (the trainer waits). */
  next(): QueueItem<B> | null {
    const head = this.peek();
    if (!head) return null;
    this.order.shift();
    if (head.kind === 'batch') {
      const list = this.perAgent.get(head.batch.agent)!;
      list.shift();
      if (list.length === 0) this.perAgent.delete(head.batch.agent);
    } else {
      this.complete.delete(head.step);
    }
    return head;
  }

  /** Batches waiting, per agent. */
  depth(agent?: string): number {
    if (agent !== undefined) return this.perAgent.get(agent)?.length ?? 0;
    let n = 0;
    for (const list of this.perAgent.values()) n += list.length;
    return n;
  }
}

/**
 * The rollout's side of the staleness bound, per policy (see the module comment). Slots count
 * planned updates: the trainer's weights after a batch carry the slot they reached, and each
 * batch the rollout starts gets the slot the trainer will be at when it starts training it.
 */
export class StalenessPlanner {
  /** Planned updates of every batch sent so far: the slot of the next batch. */
  private readonly nextSlot = new Map<string, number>();
  /** The slot of each policy when the current step began (the cap under episode scope). */
  private readonly stepStart = new Map<string, number>();

  constructor(
    readonly maxStaleness: number,
    readonly scope: ScoringScope,
    initialSlots: Record<string, number>,
  ) {
    if (!(Number.isInteger(maxStaleness) && maxStaleness >= 0)) throw new Error(`max_staleness must be a non-negative integer, got ${maxStaleness}`);
    for (const [id, slot] of Object.entries(initialSlots)) {
      this.nextSlot.set(id, slot);
      this.stepStart.set(id, slot);
    }
  }

  private slotOf(policyId: string): number {
    const slot = this.nextSlot.get(policyId);
    if (slot === undefined) throw new Error(`no slot for policy ${policyId}`);
    return slot;
  }

  /** A new step begins: its batches can rely only on batches of earlier steps being trainable. */
  beginStep(): void {
    for (const [id, slot] of this.nextSlot) this.stepStart.set(id, slot);
  }

  /** The slot at which the trainer will start the batch the rollout begins now for `policyId`. */
  batchSlot(policyId: string): number {
    return this.slotOf(policyId);
  }

  /** The batch was sent, with this many planned updates. */
  commit(policyId: string, updates: number): void {
    this.nextSlot.set(policyId, this.slotOf(policyId) + updates);
  }

  /** The oldest weights (in slots) a segment of a batch at `batchSlot` may be decoded with. */
  requiredSlot(policyId: string, batchSlot: number): number {
    const bound = batchSlot - this.maxStaleness;
    return this.scope === 'agent' ? bound : Math.min(bound, this.stepStart.get(policyId) ?? bound);
  }

  /** May a segment of the batch at `batchSlot` be decoded with weights at `weightsSlot`? */
  mayDecode(policyId: string, batchSlot: number, weightsSlot: number): boolean {
    return weightsSlot >= this.requiredSlot(policyId, batchSlot);
  }
}

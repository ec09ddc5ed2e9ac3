import { describe, expect, it } from 'vitest';
import { plannedUpdates, scoringScope, StalenessPlanner, TrainingQueues, type BatchKey, type ScoringScope } from '../../src-main/engine/training/queues';
import { Rng } from '../../src-main/engine/util/rng';

const batch = (step: number, agent: string, policyId = agent): BatchKey => ({ step, agent, policyId });

describe('scoring scope', () => {
  it('trains an agent early only when its rewards and advantages read nothing but its own turns', () => {
    const scope = (scheme: string, mode: string) => scoringScope({ reward: { scheme, format_penalty: 0 }, advantage: { mode, std: 'unbiased', single_sample: 'zero', eps: 1e-6 } } as never).scope;
    expect(scope('decoupled', 'agentwise')).toBe('agent');
    expect(scope('decoupled', 'no-std')).toBe('agent');
    expect(scope('shared', 'agentwise')).toBe('episode');
    for (const mode of ['global', 'agent-mean', 'agent-std', 'some-future-mode']) expect(scope('decoupled', mode)).toBe('episode');
  });

  it('plans the updates the trainer applies: epochs × minibatches, none for an empty batch', () => {
    expect(plannedUpdates(0, 64, 2)).toBe(0);
    expect(plannedUpdates(64, 64, 1)).toBe(1);
    expect(plannedUpdates(65, 64, 1)).toBe(2);
    expect(plannedUpdates(10, 4, 3)).toBe(9);
  });
});

describe('training queues', () => {
  it('agent scope: a batch is trainable the moment it arrives, in arrival order; a step ends after its batches', () => {
    const q = new TrainingQueues<BatchKey>('agent');
    expect(q.next()).toBeNull();
    q.push(batch(0, 'solver'));
    expect(q.depth('solver')).toBe(1);
    expect(q.next()).toEqual({ kind: 'batch', batch: batch(0, 'solver') });
    q.push(batch(0, 'verifier1'));
    q.push(batch(0, 'corrector1'));
    q.stepComplete(0);
    q.push(batch(1, 'solver'));
    expect(q.depth()).toBe(3);
    expect(q.depth('verifier1')).toBe(1);
    const order = [];
    for (let item = q.next(); item; item = q.next()) order.push(item.kind === 'batch' ? `${item.batch.step}:${item.batch.agent}` : `end ${item.step}`);
    expect(order).toEqual(['0:verifier1', '0:corrector1', 'end 0', '1:solver']);
    expect(q.depth()).toBe(0);
  });

  it('episode scope: batches wait until their step is complete, then go in arrival order', () => {
    const q = new TrainingQueues<BatchKey>('episode');
    q.push(batch(0, 'solver'));
    q.push(batch(0, 'verifier1'));
    expect(q.peek()).toBeNull();
    expect(q.next()).toBeNull();
    q.stepComplete(0);
    q.push(batch(1, 'solver'));
    expect(q.next()).toMatchObject({ kind: 'batch', batch: { step: 0, agent: 'solver' } });
    expect(q.next()).toMatchObject({ kind: 'batch', batch: { step: 0, agent: 'verifier1' } });
    expect(q.next()).toEqual({ kind: 'step-end', step: 0 });
    // Step 1's Solver batch waits for step 1 to complete.
    expect(q.next()).toBeNull();
    q.stepComplete(1);
    expect(q.next()).toMatchObject({ kind: 'batch', batch: { step: 1 } });
  });

  it('refuses a batch for a step already complete, and a step completed twice', () => {
    const q = new TrainingQueues<BatchKey>('agent');
    q.stepComplete(0);
    expect(() => q.push(batch(0, 'solver'))).toThrow(/after step 0 was complete/);
    expect(() => q.stepComplete(0)).toThrow(/twice/);
  });
});

describe('staleness planner', () => {
  it('gives each batch the slot the trainer will start it at, and requires weights at most max_staleness behind', () => {
    const p = new StalenessPlanner(1, 'agent', { solver: 0, verifier: 0 });
    expect(p.batchSlot('solver')).toBe(0);
    expect(p.mayDecode('solver', 0, 0)).toBe(true);
    p.commit('solver', 1);
    p.beginStep();
    expect(p.batchSlot('solver')).toBe(1);
    expect(p.requiredSlot('solver', 1)).toBe(0);
    p.commit('solver', 1);
    // Two steps ahead of weights at slot 0: must wait for the first update.
    expect(p.batchSlot('solver')).toBe(2);
    expect(p.mayDecode('solver', 2, 0)).toBe(false);
    expect(p.mayDecode('solver', 2, 1)).toBe(true);
    expect(new StalenessPlanner(0, 'agent', { solver: 5 }).mayDecode('solver', 5, 4)).toBe(false);
    expect(() => new StalenessPlanner(-1, 'agent', {})).toThrow(/max_staleness/);
  });

  it('episode scope caps the requirement at the slot the step began with (the same step cannot be trained yet)', () => {
    const p = new StalenessPlanner(0, 'episode', { verifier: 3 });
    p.beginStep();
    p.commit('verifier', 1); // Verifier1's batch of this step
    expect(p.batchSlot('verifier')).toBe(4); // Verifier2's batch
    expect(p.requiredSlot('verifier', 4)).toBe(3);
    const agentScope = new StalenessPlanner(0, 'agent', { verifier: 3 });
    agentScope.commit('verifier', 1);
    expect(agentScope.requiredSlot('verifier', 4)).toBe(4);
  });
});

/**
 * A discrete-time simulation of the two processes with random segment and update durations: the
 * rollout decodes agent groups segment by segment behind the planner's gate, the trainer takes
 * queue items and publishes weights after each batch. It must never deadlock, and no batch may
 * be trained with segments staler than the bound.
 */
function simulate(options: { scope: ScoringScope; maxStaleness: number; agents: { agent: string; policyId: string }[]; steps: number; seed: number }) {
  const rng = new Rng(options.seed, 'sim');
  const policies = [...new Set(options.agents.map((a) => a.policyId))];
  const zero = Object.fromEntries(policies.map((id) => [id, 0]));
  const planner = new StalenessPlanner(options.maxStaleness, options.scope, zero);
  type SimBatch = BatchKey & { slot: number; updates: number; oldest: number };
  const queues = new TrainingQueues<SimBatch>(options.scope);
  const trainerSlot: Record<string, number> = { ...zero };
  const published: Record<string, number> = { ...zero };
  const staleness: { step: number; agent: string; value: number }[] = [];
  let waits = 0;
  let r = { step: 0, agent: 0, segment: 0, segments: 0, busy: 0, slot: 0, oldest: Infinity };
  let t: { batch: SimBatch; busy: number } | null = null;
  let trainedSteps = 0;
  for (let tick = 0; tick < 200_000; tick++) {
    if (r.step < options.steps) {
      if (r.busy > 0) r.busy--;
      else {
        const a = options.agents[r.agent];
        if (r.segment === 0 && r.segments === 0) {
          if (r.agent === 0) planner.beginStep();
          r.slot = planner.batchSlot(a.policyId);
          r.segments = rng.int(1, 4);
          r.oldest = Infinity;
        }
        if (r.segment < r.segments) {
          if (planner.mayDecode(a.policyId, r.slot, published[a.policyId])) {
            r.oldest = Math.min(r.oldest, published[a.policyId]);
            r.segment++;
            r.busy = rng.int(0, 3);
          } else waits++;
        } else {
          const updates = rng.int(1, 2);
          planner.commit(a.policyId, updates);
          queues.push({ step: r.step, agent: a.agent, policyId: a.policyId, slot: r.slot, updates, oldest: r.oldest });
          r = { ...r, agent: r.agent + 1, segment: 0, segments: 0 };
          if (r.agent === options.agents.length) {
            queues.stepComplete(r.step);
            r = { ...r, step: r.step + 1, agent: 0 };
          }
        }
      }
    }
    if (t) {
      if (--t.busy <= 0) {
        trainerSlot[t.batch.policyId] = t.batch.slot + t.batch.updates;
        published[t.batch.policyId] = trainerSlot[t.batch.policyId];
        t = null;
      }
    } else {
      const item = queues.next();
      if (item?.kind === 'batch') {
        expect(trainerSlot[item.batch.policyId]).toBe(item.batch.slot);
        staleness.push({ step: item.batch.step, agent: item.batch.agent, value: trainerSlot[item.batch.policyId] - item.batch.oldest });
        t = { batch: item.batch, busy: rng.int(4, 20) };
      } else if (item?.kind === 'step-end') trainedSteps++;
    }
    if (trainedSteps === options.steps) return { staleness, waits };
  }
  throw new Error(`deadlock: trained ${trainedSteps} of ${options.steps} steps`);
}

describe('the staleness bound under random timing', () => {
  const chain = [
    { agent: 'solver', policyId: 'solver' },
    { agent: 'verifier1', policyId: 'verifier' },
    { agent: 'corrector1', policyId: 'corrector' },
    { agent: 'verifier2', policyId: 'verifier' },
    { agent: 'corrector2', policyId: 'corrector' },
  ];
  const shared = chain.map(({ agent }) => ({ agent, policyId: 'shared' }));

  it.each([0, 1, 3])('agent scope, max_staleness %i: never exceeded, never deadlocks, reached when rollout runs ahead', (maxStaleness) => {
    for (const agents of [chain, shared]) {
      for (let seed = 1; seed <= 5; seed++) {
        const { staleness, waits } = simulate({ scope: 'agent', maxStaleness, agents, steps: 12, seed });
        expect(staleness).toHaveLength(12 * agents.length);
        expect(Math.max(...staleness.map((s) => s.value))).toBeLessThanOrEqual(maxStaleness);
        if (seed === 1) expect(waits).toBeGreaterThan(0);
      }
    }
    // The trainer is slower than the rollout here, so the rollout runs as far ahead as allowed.
    const all = [1, 2, 3].flatMap((seed) => simulate({ scope: 'agent', maxStaleness, agents: chain, steps: 12, seed }).staleness.map((s) => s.value));
    expect(Math.max(...all)).toBe(maxStaleness);
  });

  it('episode scope: no deadlock when agents of one step share a policy; the excess is only those same-step updates', () => {
    for (const maxStaleness of [0, 1]) {
      for (let seed = 1; seed <= 5; seed++) {
        const { staleness } = simulate({ scope: 'episode', maxStaleness, agents: shared, steps: 8, seed });
        // Agent k of a step trains after the step's earlier agents' updates (at most 2 each).
        staleness.forEach((s) => expect(s.value).toBeLessThanOrEqual(maxStaleness + 2 * chain.findIndex((a) => a.agent === s.agent)));
        const { staleness: separate } = simulate({ scope: 'episode', maxStaleness, agents: chain, steps: 8, seed });
        // Separate Verifier/Corrector policies used twice a step still see their round-1 update.
        separate.forEach((s) => expect(s.value).toBeLessThanOrEqual(maxStaleness + (s.agent.endsWith('2') ? 2 : 0)));
      }
    }
  });
});

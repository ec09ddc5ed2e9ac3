/**
 * Counterfactual credit (issue 40) on real tiny runs: on a run trained with each advantage mode
 * (and with shared rewards, and with the Verifier class balance), the recomputed cell of the run's
 * own scheme and mode equals the stored advantage on every turn, and every cell of every turn
 * equals an independent plain-loop recomputation (test/helpers/credit-loop.ts).
 */
import { describe, expect, it } from 'vitest';
import { ADVANTAGE_MODES } from '../../src-main/engine/config/schema';
import { runCreditDivergence, turnCounterfactual } from '../../src-main/engine/rl/credit-run';
import { trainedRun } from '../helpers/trained-run';
import { loopAdvantages, loopGroups, loopRewards, loopRows } from '../helpers/credit-loop';
import { tinyConfig, tinyPolicy } from '../training/tiny';

const runs = [
  ...ADVANTAGE_MODES.map((mode) => ({ name: `mode ${mode}`, overrides: { advantage: { mode } } })),
  { name: 'shared rewards, global', overrides: { reward: { scheme: 'shared' }, advantage: { mode: 'global' } } },
  { name: 'pipeline mode, agentwise', overrides: { pipeline: { mode: 'pipeline', segment_tokens: 16, max_segments: 2 } } },
  { name: 'pipeline mode, shared rewards, agent-mean', overrides: { reward: { scheme: 'shared' }, advantage: { mode: 'agent-mean' }, pipeline: { mode: 'pipeline', segment_tokens: 16, max_segments: 2 } } },
  { name: 'class balance, format penalty', overrides: { reward: { format_penalty: 0.5 }, advantage: { mode: 'agent-std', verifier_class_balance: true } } },
];

// Enough warm start that rewards differ within groups (4 steps leave every turn wrong and every
// advantage 0). The warm start is the same for every run (same seed, task and sizes), so it is made
// once, by a one-step run whose checkpoint (the last step's, step 0) the nine runs start from
// (policies.ID.init): 150 warm-up steps in each run were most of this file's time.
const warmed = trainedRun('warm start', () => tinyConfig({ optimization: { steps: 1, minibatch_size: 16, checkpoint_every: 0 }, pipeline: { mode: 'sync' }, pretrain: { steps: 150, batch_size: 16, warmup_steps: 5, lr: 1e-2 } }), 120_000);
// Each policy starts from its folder of that checkpoint, as the run recorded it.
const fromWarmStart = () => ({
  policies: Object.fromEntries(warmed.store.events.checkpoints(warmed.runId).map((c) => [c.policyId, { ...tinyPolicy, init: c.path }])),
});

describe.each(runs)('counterfactual credit on a tiny run ($name)', ({ name, overrides }) => {
  const trained = trainedRun(name, () => tinyConfig({ optimization: { steps: 2, minibatch_size: 16, checkpoint_every: 0 }, pipeline: { mode: 'sync', segment_tokens: 16, max_segments: 2 }, ...fromWarmStart(), ...overrides }), 120_000);

  it('reproduces the stored reward and advantage of every turn under the run’s own scheme and mode', () => {
    const rows = loopRows(trained.store.db, trained.runId);
    expect(rows.length).toBeGreaterThan(20);
    for (const row of rows) {
      const credit = turnCounterfactual(trained.store, row.id)!;
      expect(credit.scheme).toBe(row.scheme);
      expect(credit.mode).toBe(row.mode);
      expect(credit.rewardMatches).toBe(true);
      expect(credit.rewards[row.scheme]).toBe(row.reward);
      expect(credit.advantages[row.scheme][row.mode]).toBeCloseTo(row.advantage, 12);
    }
    const divergence = runCreditDivergence(trained.store, trained.runId);
    expect(divergence.turns).toBe(rows.length);
    expect(divergence.maxStoredDifference).toBeLessThan(1e-12);
    expect(divergence.rewardMismatches).toBe(0);
  });

  it('equals a plain-loop recomputation on every turn, every scheme and every mode', () => {
    const rows = loopRows(trained.store.db, trained.runId);
    const penalty = name.includes('format penalty') ? 0.5 : 0;
    let differing = 0;
    for (const group of loopGroups(rows)) {
      const credits = group.map((row) => turnCounterfactual(trained.store, row.id)!);
      for (const scheme of ['decoupled', 'shared']) {
        const rewards = scheme === group[0].scheme ? group.map((r) => r.reward) : loopRewards(group, scheme, penalty);
        if (scheme === group[0].scheme) expect(loopRewards(group, scheme, penalty)).toEqual(rewards);
        for (const mode of ADVANTAGE_MODES) {
          const expected = loopAdvantages(group, rewards, mode);
          group.forEach((row, i) => {
            const credit = credits[i];
            expect(credit.rewards[scheme]).toBe(rewards[i]);
            expect(credit.advantages[scheme][mode]).toBeCloseTo(expected[i], 9);
            if (Math.abs(expected[i] - row.advantage) > 1e-6) differing++;
          });
        }
      }
    }
    // The alternatives are not the stored values over again: some cells differ from the run's.
    expect(differing).toBeGreaterThan(0);
    expect(new Set(rows.map((r) => r.reward)).size).toBeGreaterThan(1);
  });
});

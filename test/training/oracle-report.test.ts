/**
 * The oracle-Verifier control's report (engine/agents/prompts.ts referenceReport): on math the
 * Corrector reads the family's reference report for the very solution it repairs (the findings a
 * Verifier is warm-started to write, then the true verdict), as its warm start did; on a character
 * family, the bare verdict line its shipped warm start read. Runs the control's chains on the
 * shipped tiny-qwen policies and on a fresh tiny GPT.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { referenceReport, textFormatOf } from '../../src-main/engine/agents/prompts';
import { loadRunConfig } from '../../src-main/engine/config/load';
import { initBackend } from '../../src-main/engine/model/backend';
import { runChains } from '../../src-main/engine/training/evaluate';
import { createPolicy, rolePolicies, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { loadTaskData } from '../../src-main/engine/training/run-support';
import { tinyConfig } from './tiny';

beforeAll(async () => {
  await initBackend('wasm');
});

function checkOracleChains(config: Parameters<typeof loadTaskData>[0], policyIds: readonly string[], expectFindings: boolean): void {
  const data = loadTaskData(config);
  const byId = new Map<string, PolicyRuntime>(policyIds.map((id) => [id, createPolicy(id, config.policies[id], data.tokenizer, config.seed).policy]));
  try {
    const ctx = { family: data.family, policies: rolePolicies(config, byId), config };
    const chains = runChains(ctx, data.test.slice(0, 6), 1, 1, 'oracle', 5);
    const format = textFormatOf(data.family);
    let repaired = 0;
    for (const chain of chains) {
      const [solver, verifier, corrector] = chain.steps;
      expect(solver.role).toBe('solver');
      expect(verifier.role).toBe('verifier');
      const truth = solver.correct ? 'approve' : 'reject';
      expect(verifier.verdict).toBe(truth);
      expect(verifier.text).toBe(referenceReport(data.family, chain.problem, solver.text, truth));
      expect(format.parseVerdict(verifier.text).verdict).toBe(truth);
      if (expectFindings) expect(verifier.text).toMatch(new RegExp(`\\nAnswer: ${chain.problem.answer}\\. The solution has `));
      else expect(verifier.text).toBe(format.verdictText(truth));
      if (truth === 'approve') {
        expect(corrector).toBeUndefined();
        continue;
      }
      // The Corrector's prompt carries exactly that report.
      expect(corrector.prompt).toBe(format.correctorPrompt(chain.problem, solver.text, verifier.text));
      repaired++;
    }
    expect(repaired).toBeGreaterThan(0);
  } finally {
    for (const p of byId.values()) p.dispose();
  }
}

describe('the oracle-Verifier control', () => {
  it('gives a math Corrector the reference report (findings, then the true verdict) on the shipped tiny-qwen policies', () => {
    const { config } = loadRunConfig({ preset: 'tiny-qwen', overrides: ['rollout.max_response_tokens=24', 'rollout.rounds=1'] });
    checkOracleChains(config, ['solver', 'verifier', 'corrector'], true);
  }, 120_000);

  it('gives a character-family Corrector the bare verdict line', () => {
    checkOracleChains(tinyConfig({ rollout: { problems_per_step: 2, solver_group: 3, select_k: 2, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 48 } }), ['solver', 'verifier', 'corrector'], false);
  }, 120_000);
});

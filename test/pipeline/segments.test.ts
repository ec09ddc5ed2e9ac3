import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { evaluate, evaluatePart, evaluationMetrics, evaluationParts, type EvalChain, type EvalPart } from '../../src-main/engine/training/evaluate';
import { createPolicy, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { ppoStep, responseLogProbs } from '../../src-main/engine/training/ppo';
import { decodeInSegmentsSteps, drain, rolloutEpisodes, type RolloutPause } from '../../src-main/engine/training/rollout';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { scoreAgentTurns, scoreEpisodes, type ScoredEpisode } from '../../src-main/engine/training/scoring';
import { promptTokens } from '../../src-main/engine/training/sequences';
import { solverPrompt } from '../../src-main/engine/agents';
import { tinyConfig } from '../training/tiny';

const config = tinyConfig();
const data = loadTaskData(config);
let policy: PolicyRuntime;
let newer: Float32Array;

beforeAll(async () => {
  await initBackend(config.runtime.backend);
  // Untrained policies: responses of random length, so some finish early and some carry over.
  policy = createPolicy('solver', config.policies.solver, data.tokenizer, 11).policy;
  const other = createPolicy('solver', config.policies.solver, data.tokenizer, 12).policy;
  newer = other.model.getWeights();
  other.dispose();
});

const S = 4;
const M = 2;
const requests = data.train.slice(0, 12).map((p, i) => ({ promptText: solverPrompt(p), promptTokens: promptTokens(data.tokenizer, 'solver', solverPrompt(p)), streamId: i }));
const options = { seed: 5, temperature: 1, topP: 1, maxNewTokens: 24, segmentTokens: S, maxSegments: M, agent: 'solver' };

describe('segment rollout: carry-over of unfinished sequences', () => {
  it('finished sequences leave after each stage; unfinished ones carry over onto newer weights, each segment recording its version', () => {
    const base = policy.model.getWeights();
    const uninterrupted = drain(decodeInSegmentsSteps(policy, requests, options));

    const pauses: RolloutPause[] = [];
    const steps = decodeInSegmentsSteps(policy, requests, options);
    let r = steps.next();
    while (!r.done) {
      const pause = r.value;
      pauses.push(pause);
      // Between stage 1 and stage 2 the trainer's new weights (version 7) arrive.
      if (pause.kind === 'segment' && pause.stage === 1 && pause.segment === 0) policy.adoptWeights(newer, 7);
      r = steps.next();
    }
    const results = r.value;
    policy.adoptWeights(base, 0);

    const segmentPauses = pauses.filter((p) => p.kind === 'segment');
    // Stage k runs at most M segments; fewer sequences are live as they finish.
    const perStage = new Map<number, number>();
    for (const p of segmentPauses) perStage.set(p.stage, (perStage.get(p.stage) ?? 0) + 1);
    for (const n of perStage.values()) expect(n).toBeLessThanOrEqual(M);
    expect(perStage.size).toBeGreaterThan(1);
    const live = segmentPauses.map((p) => p.live);
    expect(live).toEqual([...live].sort((a, b) => b - a));

    const stageTokens = S * M;
    const leftEarly = results.filter((res) => res.responseTokens.length <= stageTokens && res.segments.at(-1)!.finished);
    const carried = results.filter((res) => res.responseTokens.length > stageTokens);
    expect(leftEarly.length).toBeGreaterThan(0);
    expect(carried.length).toBeGreaterThan(0);
    results.forEach((res, i) => {
      // Segments tile the response; only the last is finished.
      let at = 0;
      for (const seg of res.segments) {
        expect(seg.tokenStart).toBe(at);
        at = seg.tokenEnd;
        expect(seg.policyVersion).toBe(seg.tokenStart < stageTokens ? 0 : 7);
      }
      expect(at).toBe(res.responseTokens.length);
      expect(res.segments.map((s) => s.finished)).toEqual(res.segments.map((_, k) => k === res.segments.length - 1));
      // Up to the swap the split decode is the uninterrupted one, token for token.
      const n = Math.min(stageTokens, res.responseTokens.length);
      expect(res.responseTokens.slice(0, n)).toEqual(uninterrupted[i].responseTokens.slice(0, n));
    });
  });

  it('trains on carried-over turns with their stored behaviour log-probabilities: off-policy segments are corrected, not ignored', () => {
    const base = policy.model.getWeights();
    const steps = decodeInSegmentsSteps(policy, requests, options);
    let r = steps.next();
    while (!r.done) {
      if (r.value.kind === 'segment' && r.value.stage === 1 && r.value.segment === 0) policy.adoptWeights(newer, 7);
      r = steps.next();
    }
    const carried = r.value.map((res, i) => ({ res, prompt: requests[i].promptTokens })).filter(({ res }) => res.responseTokens.length > S * M);
    const samples = carried.map(({ res, prompt }) => ({ tokens: [...prompt, ...res.responseTokens], responseStart: prompt.length, behaviourLogProbs: res.behaviourLogProbs, advantage: 1 }));
    // Under the current (newer) weights, the newer segments' tokens are on-policy (ratio 1)
    // and the older segments' are not: the ratio the update uses differs from 1 exactly there.
    const current = responseLogProbs(policy.model, samples, 1, data.tokenizer.padId);
    let offPolicyDrift = 0;
    carried.forEach(({ res }, b) => {
      res.behaviourLogProbs.forEach((behaviour, t) => {
        if (t >= S * M) expect(current[b][t]).toBeCloseTo(behaviour, 4);
        else offPolicyDrift = Math.max(offPolicyDrift, Math.abs(current[b][t] - behaviour));
      });
    });
    expect(offPolicyDrift).toBeGreaterThan(0.01);
    const step = ppoStep(policy.model, policy.optimizer, samples, { clip: 0.2, klCoef: 0, temperature: 1, padId: data.tokenizer.padId });
    expect(step.skipped).toBe(false);
    expect(Math.abs(step.approxKlBehaviour)).toBeGreaterThan(0);
    policy.adoptWeights(base, 0);
  });
});

describe('scoring an agent as soon as it finishes', () => {
  it.each(['agentwise', 'no-std'])('decoupled rewards with %s advantages equal the whole-episode scores', (mode) => {
    const cfg = tinyConfig({ advantage: { mode } });
    const roles = { solver: policy, verifier: policy, corrector: policy };
    const episodes = rolloutEpisodes({ family: data.family, policies: roles, config: cfg }, data.train.slice(0, 4), 9);
    const whole = scoreEpisodes(cfg, episodes);
    const early: ScoredEpisode[] = episodes.map(() => ({ rewards: [], advantages: [] }));
    const agents = [...new Set(episodes.flatMap((e) => e.turns.map((t) => t.agent)))];
    expect(agents.length).toBeGreaterThan(1);
    for (const agent of agents) {
      scoreAgentTurns(cfg, episodes, episodes.flatMap((e, i) => e.turns.filter((t) => t.agent === agent).map((turn) => ({ episode: i, turn }))), early);
    }
    expect(early).toEqual(whole);
  });
});

describe('evaluation in parts', () => {
  it('run in any order (in two processes), the parts give exactly the one-process evaluation', () => {
    const roles = { solver: policy, verifier: policy, corrector: policy };
    const ctx = { family: data.family, policies: roles, config };
    const problems = data.test.slice(0, 4);
    const whole = evaluate(ctx, problems, 77);
    const parts: Partial<Record<EvalPart, EvalChain[]>> = {};
    for (const part of evaluationParts(config).reverse()) parts[part] = evaluatePart(ctx, problems, 77, part);
    expect(evaluationMetrics(config, parts)).toEqual(whole);
    expect(() => evaluationMetrics(config, { greedy: parts.greedy })).toThrow(/part "oracle" is missing/);
  });
});

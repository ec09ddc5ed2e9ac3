import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src-main/engine/store';
import { FIXED_SET_EVENT, trainRun, type TrainOutcome } from '../../src-main/engine/training/trainer';
import { evaluationSet, loadTaskData } from '../../src-main/engine/training/task-data';
import { parseSolution } from '../../src-main/engine/agents';
import { trainedRun } from '../helpers/trained-run';
import { tinyConfig } from './tiny';

// The same end-to-end checks hold for the synchronous baseline and for the pipeline (here with
// its rollout in this process; test/pipeline runs it in its own process).
describe.each(['sync', 'pipeline'] as const)('a tiny MarsRL run, end to end (%s)', (mode) => {
  const tiny = (overrides: Record<string, unknown> = {}) => tinyConfig({ pipeline: { mode, segment_tokens: 16, max_segments: 2 }, ...overrides });
  const trained = trainedRun('tiny', () => tiny());
  let store: Store;
  let runId: number;
  let outcome: TrainOutcome;
  beforeAll(() => ({ store, runId, outcome } = trained));

  interface Row {
    id: number;
    episode_id: number;
    agent: string;
    parent_turn_id: number | null;
    text: string;
    token_count: number;
    parsed: string | null;
    correct: number;
    reward: number;
    advantage: number;
    mu: number;
    sigma: number;
    group_key: string;
  }

  function trainTurns(): Row[] {
    return store.db
      .prepare(
        `SELECT t.id, t.episode_id, t.agent, t.parent_turn_id, t.text, t.token_count, t.parsed, t.correct, r.value AS reward, a.value AS advantage, a.mu, a.sigma, a.group_key
         FROM turns t JOIN episodes e ON e.id = t.episode_id LEFT JOIN rewards r ON r.turn_id = t.id LEFT JOIN advantages a ON a.turn_id = t.id
         WHERE t.run_id = ? AND e.split = 'train' ORDER BY t.id`,
      )
      .all(runId) as Row[];
  }

    it('finishes and keeps every turn with its reward and advantage', () => {
      expect(outcome).toEqual({ status: 'done', step: 2 });
      const turns = trainTurns();
      // 2 steps × 2 problems × 3 Solver samples at least.
      expect(turns.filter((t) => t.agent === 'solver').length).toBe(12);
      for (const t of turns) {
        expect(t.reward, `turn ${t.id}`).not.toBeNull();
        expect(t.advantage, `turn ${t.id}`).not.toBeNull();
      }
      expect(store.integrityCheck()).toEqual(['ok']);
    });

    it('builds the chain: Verifiers judge solutions, Correctors only repair rejections', () => {
      const turns = trainTurns();
      const byId = new Map(turns.map((t) => [t.id, t]));
      for (const t of turns) {
        if (t.agent === 'solver') expect(t.parent_turn_id).toBeNull();
        if (t.agent.startsWith('verifier')) {
          const parent = byId.get(t.parent_turn_id!)!;
          expect(t.agent === 'verifier1' ? parent.agent === 'solver' : parent.agent.startsWith('corrector')).toBe(true);
        }
        if (t.agent.startsWith('corrector')) {
          const report = byId.get(t.parent_turn_id!)!;
          expect(report.agent).toBe(`verifier${t.agent.slice(-1)}`);
          expect(report.parsed).toBe('reject');
        }
      }
    });

    it('stores decoupled rewards: Solver/Corrector by answer, Verifier by verdict truth', () => {
      const turns = trainTurns();
      const byId = new Map(turns.map((t) => [t.id, t]));
      for (const t of turns) {
        expect(t.reward).toBe(t.correct);
        if (t.agent.startsWith('verifier')) {
          const judged = byId.get(t.parent_turn_id!)!;
          const verdictRight = t.parsed !== null && (t.parsed === 'approve') === (judged.correct === 1);
          expect(t.correct).toBe(verdictRight ? 1 : 0);
        }
      }
    });

    it('stores agent-wise advantages that a plain loop over the stored rewards reproduces', () => {
      const turns = trainTurns();
      const groups = new Map<string, Row[]>();
      for (const t of turns) groups.set(`${t.group_key}|${t.agent}`, [...(groups.get(`${t.group_key}|${t.agent}`) ?? []), t]);
      for (const members of groups.values()) {
        const n = members.length;
        let mean = 0;
        for (const m of members) mean += m.reward / n;
        let ss = 0;
        for (const m of members) ss += (m.reward - mean) ** 2;
        const sd = n > 1 ? Math.sqrt(ss / (n - 1)) : 0;
        for (const m of members) {
          const expected = n === 1 ? 0 : (m.reward - mean) / (sd + 1e-6);
          expect(m.advantage).toBeCloseTo(expected, 6);
        }
      }
    });

    it('logs segments covering each response, metrics per agent, evaluations and checkpoints', () => {
      const segs = store.db.prepare('SELECT turn_id, seg_index, token_start, token_end FROM segments WHERE run_id = ? ORDER BY turn_id, seg_index').all(runId) as {
        turn_id: number; seg_index: number; token_start: number; token_end: number;
      }[];
      const byTurn = new Map<number, typeof segs>();
      for (const s of segs) byTurn.set(s.turn_id, [...(byTurn.get(s.turn_id) ?? []), s]);
      for (const t of trainTurns()) {
        const list = byTurn.get(t.id) ?? [];
        let at = 0;
        for (const s of list) {
          expect(s.token_start).toBe(at);
          at = s.token_end;
        }
        expect(at).toBe(t.token_count);
      }
      const keys = store.metrics.keys(runId);
      for (const key of ['solver/reward/mean', 'solver/grad_norm', 'verifier1/advantage/std', 'system/accuracy', 'eval/system/accuracy', 'eval/solver/accuracy', 'eval/system/pass@2', 'eval/control/oracle_verifier/accuracy', 'perf/tokens_per_s']) {
        expect(keys, key).toContain(key);
      }
      expect(store.metrics.series(runId, 'eval/system/accuracy').items.map((p) => p.step)).toEqual([0, 2]);
      expect(store.events.checkpoints(runId).map((c) => c.step)).toEqual([0, 0, 0, 1, 1, 1]);
      expect(store.events.timeline(runId).some((s) => s.kind === 'update')).toBe(true);
    });

    it('judges one fixed set of warm-start Solver answers at every evaluation, kept in the store', () => {
      // tiny: 3 held-out problems × k = 2 sampled answers, taken from the first evaluation.
      const event = store.events.latestOfKind(runId, FIXED_SET_EVENT);
      const solutions = event?.data?.solutions as { problem: number; text: string }[];
      expect(solutions).toHaveLength(6);
      expect(solutions.map((s) => s.problem)).toEqual([0, 0, 1, 1, 2, 2]);
      expect(event?.step).toBe(0);
      // The wrong share logged is what the task's checker says of the stored answers.
      const config = tiny();
      const data = loadTaskData(config);
      const { problems } = evaluationSet(config, data);
      const wrong = solutions.filter((s) => !data.family.checkAnswer(problems[s.problem], parseSolution(s.text).answer)).length;
      expect(store.metrics.series(runId, 'eval/fixed/wrong_share').items.map((p) => p.value)).toEqual([wrong / 6, wrong / 6]);
      for (const key of ['eval/fixed/answers', 'eval/fixed/wrong_share', 'eval/fixed/verifier/verdict_accuracy']) {
        expect(store.metrics.series(runId, key).items.map((p) => p.step), key).toEqual([0, 2]);
      }
      expect(store.metrics.series(runId, 'eval/fixed/answers').items.map((p) => p.value)).toEqual([6, 6]);
      // One set per run: the last evaluation did not make another.
      expect(store.db.prepare('SELECT COUNT(*) AS n FROM events WHERE run_id = ? AND kind = ?').get(runId, FIXED_SET_EVENT)).toEqual({ n: 1 });
      // Who judged it: the first evaluation makes the set after its chains (a span of its own); in
      // the pipeline later ones send it with the rollout's share, so the trainer spends no span on it.
      const evalSpans = (step: number) => store.events.timeline(runId).filter((s) => s.kind === 'eval' && s.step === step);
      const byRollout = (step: number) => evalSpans(step).filter((s) => s.worker.endsWith('/rollout')).length;
      if (mode === 'sync') {
        expect(evalSpans(0)).toHaveLength(2);
        expect(evalSpans(2)).toHaveLength(2);
      } else {
        expect([evalSpans(0).length, byRollout(0)]).toEqual([3, 1]);
        expect([evalSpans(2).length, byRollout(2)]).toEqual([2, 1]);
      }
    });

    it('stops after nan_tolerance skipped updates, logging each with its agent and step', async () => {
      const config = tiny({ optimization: { steps: 3, nan_tolerance: 2, checkpoint_every: 0 } });
      const id = store.runs.create({ name: 'nan', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: 3 });
      const result = await trainRun({ store, runId: id, config, runDir: path.join(trained.dir, 'nan'), injectNanLossFromStep: 1 });
      expect(result.status).toBe('failed');
      expect(result).toMatchObject({ step: 1, reason: expect.stringMatching(/2 updates in a row had a NaN\/Inf loss.*nan_tolerance/) });
      const events = store.events.events(id).items;
      const skipped = events.filter((e) => e.kind === 'non_finite_update');
      expect(skipped).toHaveLength(2);
      expect(skipped[0]).toMatchObject({ step: 1, data: { agent: 'solver' } });
      expect(events.some((e) => e.kind === 'non_finite_stop')).toBe(true);
      // Step 0 trained normally before the fault.
      expect(store.metrics.series(id, 'solver/grad_norm').items.map((p) => p.step)).toEqual([0]);
    });
});

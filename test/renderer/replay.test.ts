/**
 * The Replay dialog's logic without a browser (issue 40): a replay read as an episode tree (one
 * chain, each turn under the one before, ids no stored turn has), the models it offers, the
 * request a form makes (and the field a bad seed or an empty question names), and its JSONL.
 */
import { describe, expect, it } from 'vitest';
import type { ReplayDetail } from '#shared/contract';
import { episodeTreeRows } from '../../src-renderer/src/util/episodeTree';
import { modelChoices, replayEpisode, replayJsonLines, replayRequestOf } from '../../src-renderer/src/util/replayView';

const detail: ReplayDetail = {
  replay: { id: 3, runId: 7, episodeId: 41, problemId: 5, question: 'sort 312', model: 'checkpoint of step 1 of run 7', decoding: 'greedy', seed: 9, status: 'done', error: null, reproducible: true, reproducibleReason: 'greedy', matchesStored: true, finalAnswer: '123', correct: true, turnCount: 3, seconds: 0.5, storedSeconds: null, createdAt: 100 },
  reference: '123',
  turns: [
    { index: 0, agent: 'solver', round: 0, prompt: 'p0', text: 'a: 132', tokenCount: 6, parsed: '132', correct: false, formatValid: true, sameAsStored: true },
    { index: 1, agent: 'verifier1', round: 1, prompt: 'p1', text: 'no', tokenCount: 2, parsed: 'reject', correct: true, formatValid: true, sameAsStored: true },
    { index: 2, agent: 'corrector1', round: 1, prompt: 'p2', text: 'a: 123', tokenCount: 6, parsed: '123', correct: true, formatValid: true, sameAsStored: true },
  ],
};

describe('a replay as an episode tree', () => {
  it('is one chain, each turn one level under the one before, with negative ids', () => {
    const episode = replayEpisode(detail);
    expect(episode.episode).toMatchObject({ question: 'sort 312', reference: '123', finalAnswer: '123', correct: true, rounds: 1, turnCount: 3 });
    expect(episode.turns.every((t) => t.id < 0)).toBe(true);
    const turns = episodeTreeRows(episode.turns).filter((r) => r.kind === 'turn');
    expect(turns.map((r) => [r.kind === 'turn' ? r.turn.agent : '', r.depth])).toEqual([['solver', 0], ['verifier1', 1], ['corrector1', 2]]);
    // Two replays never share a turn id.
    const other = replayEpisode({ ...detail, replay: { ...detail.replay, id: 4 } });
    expect(new Set([...episode.turns, ...other.turns].map((t) => t.id)).size).toBe(6);
  });
});

describe('the Replay form', () => {
  const form = { runId: 7, episodeId: 41, prompt: '', model: '', decoding: 'as-sampled' as const, seed: '' };

  it('offers the episode\'s model, the starting policies, every checkpoint on disk and every endpoint', () => {
    const choices = modelChoices({ checkpoints: [{ runId: 7, runName: 'a', step: 1, path: '/x', family: 'hf', lora: true }], endpoints: ['judge'] }, 7);
    expect(choices.map((c) => c.value)).toEqual(['', 'init:7', 'ckpt:7:1', 'endpoint:judge']);
    expect(choices[2].label).toBe('run 7 (a): step 1 · hf LoRA');
  });

  it('makes the request each choice means', () => {
    expect(replayRequestOf(form)).toEqual({ request: { runId: 7, episodeId: 41 } });
    expect(replayRequestOf({ ...form, model: 'ckpt:2:5', decoding: 'sampled', seed: '12' })).toEqual({ request: { runId: 7, episodeId: 41, checkpoint: { runId: 2, step: 5 }, decoding: 'sampled', seed: 12 } });
    expect(replayRequestOf({ ...form, model: 'init:7' })).toEqual({ request: { runId: 7, episodeId: 41, checkpoint: { runId: 7, step: 'init' } } });
    expect(replayRequestOf({ ...form, model: 'endpoint:a:b' })).toEqual({ request: { runId: 7, episodeId: 41, endpoint: 'a:b' } });
    expect(replayRequestOf({ ...form, episodeId: null, prompt: 'sort 21' })).toEqual({ request: { runId: 7, prompt: 'sort 21' } });
  });

  it('names what to fix', () => {
    expect(replayRequestOf({ ...form, seed: '-3' })).toMatchObject({ field: 'seed' });
    expect(replayRequestOf({ ...form, seed: '99999999999' })).toMatchObject({ field: 'seed' });
    expect(replayRequestOf({ ...form, episodeId: null, prompt: '  ' })).toMatchObject({ field: 'prompt' });
  });

  it('exports the replay as JSON lines: the replay, then each turn', () => {
    const lines = replayJsonLines(detail).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatchObject({ kind: 'replay', id: 3, reference: '123', matchesStored: true });
    expect(lines.slice(1).map((l) => l.text)).toEqual(['a: 132', 'no', 'a: 123']);
  });
});

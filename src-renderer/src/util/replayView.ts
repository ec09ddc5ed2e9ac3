/**
 * A replay (issue 40) as the episode tree reads an episode: its turns one chain, each under the
 * turn before it, with ids of their own (negative: never a stored turn's id); and the choices the
 * Replay dialog offers, as the request they make.
 */
import type { EpisodeDetail, ReplayDetail, ReplayModels, ReplayRequest } from '#shared/contract';

export function replayEpisode(detail: ReplayDetail): EpisodeDetail {
  const r = detail.replay;
  const idOf = (index: number) => -(r.id * 1000 + index + 1);
  const turns = detail.turns.map((t, i) => ({
    id: idOf(t.index), runId: r.runId, episodeId: null, step: 0, agent: t.agent, policyId: 'replay', round: t.round, groupId: i, parentTurnId: i === 0 ? null : idOf(detail.turns[i - 1].index),
    sampleIndex: 0, prompt: t.prompt, text: t.text, tokenCount: t.tokenCount, parsed: t.parsed, correct: t.correct, formatValid: t.formatValid, policyVersionMin: 0, policyVersionMax: 0, createdAt: r.createdAt,
    reward: null, rewardComponents: null, advantage: null, advantageMode: null, advantageWeight: null, attempt: 1, supersededBy: null, segments: [],
  }));
  return {
    episode: { id: r.id, runId: r.runId, step: 0, split: 'test', problemId: r.problemId, question: r.question, reference: detail.reference, finalAnswer: r.finalAnswer, correct: r.correct, rounds: detail.turns.filter((t) => t.agent.startsWith('verifier')).length, turnCount: turns.length, attempt: 1, supersededBy: null },
    turns,
    notation: [],
    matchedTurnIds: [],
  };
}

/** One option of the dialog's model list: its value and its words. */
export interface ModelChoice {
  value: string;
  label: string;
}

/** '' is the model the episode was sampled with; then every checkpoint on disk, then the run's endpoints. */
export function modelChoices(models: ReplayModels | null, runId: number): ModelChoice[] {
  const choices: ModelChoice[] = [{ value: '', label: 'as the episode was sampled' }, { value: `init:${runId}`, label: `run ${runId}: starting policies` }];
  for (const c of models?.checkpoints ?? []) {
    choices.push({ value: `ckpt:${c.runId}:${c.step}`, label: `run ${c.runId} (${c.runName}): step ${c.step} · ${c.family}${c.lora ? ' LoRA' : ''}` });
  }
  for (const e of models?.endpoints ?? []) choices.push({ value: `endpoint:${e}`, label: `endpoint ${e}` });
  return choices;
}

export interface ReplayForm {
  runId: number;
  episodeId: number | null;
  prompt: string;
  model: string;
  decoding: 'as-sampled' | 'greedy' | 'sampled';
  seed: string;
}

/** The request a form makes, or the message naming what to fix. */
export function replayRequestOf(form: ReplayForm): { request: ReplayRequest } | { error: string; field: string } {
  const request: ReplayRequest = { runId: form.runId };
  if (form.episodeId !== null) request.episodeId = form.episodeId;
  else if (form.prompt.trim()) request.prompt = form.prompt;
  else return { error: 'type the question the Solver should answer', field: 'prompt' };
  const [kind, a, b] = form.model.split(':');
  if (kind === 'init') request.checkpoint = { runId: Number(a), step: 'init' };
  else if (kind === 'ckpt') request.checkpoint = { runId: Number(a), step: Number(b) };
  else if (kind === 'endpoint') request.endpoint = form.model.slice('endpoint:'.length);
  if (form.decoding !== 'as-sampled') request.decoding = form.decoding;
  const seed = form.seed.trim();
  if (seed !== '') {
    if (!/^\d+$/.test(seed) || Number(seed) > 0xffffffff) return { error: 'a seed is a whole number from 0 to 4294967295; leave it empty for the run’s', field: 'seed' };
    request.seed = Number(seed);
  }
  return { request };
}

/** The replay as JSON lines (as `marsrl replay --export` writes it): the replay, then each turn. */
export function replayJsonLines(detail: ReplayDetail): string {
  return [JSON.stringify({ kind: 'replay', ...detail.replay, reference: detail.reference }), ...detail.turns.map((t) => JSON.stringify({ kind: 'replay_turn', replayId: detail.replay.id, ...t }))].join('\n') + '\n';
}

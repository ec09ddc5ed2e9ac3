/**
 * The follower's records as the importer's (issue 39), grouped the way live ingestion groups them
 * (engines/ingest.ts): a veRL sample is one episode of one Solver turn; DrMAS turns written with the
 * Studio's hook carry a trajectory id, and the turns of one trajectory at one step are one episode
 * (Solver, then Verifier/Corrector rounds); without it each turn stands alone, agent `unknown`. The
 * padding copies DrMAS adds to each worker group's batch (the hook's `dup`) are left out, as live.
 * A problem is the Solver's prompt with its reference answer (`gts`), keyed by their digest, so the
 * same prompt at two steps is one problem.
 */
import crypto from 'node:crypto';
import type { ImportIssue } from '#shared/contract';
import type { CheckpointRecord, FollowRecord, SourcePos, TurnRecord } from '../../engines/follow/records';
import { judgeMathAnswer } from '../../tasks/math-answer';
import type { ImportCheckpoint, ImportEpisode, ImportMetric, ImportTurn } from '../types';

export interface Converted {
  metrics: ImportMetric[];
  episodes: ImportEpisode[];
  checkpoints: ImportCheckpoint[];
  issues: ImportIssue[];
  /** Padding copies left out. */
  duplicates: number;
}

const digest = (text: string) => crypto.createHash('sha256').update(text).digest('hex').slice(0, 16);

export function positionOf(source: SourcePos | null): string {
  if (source === null) return '';
  if (source.line !== null) return `line ${source.line}`;
  return source.offset !== null ? `byte ${source.offset}` : '';
}

function turnOf(record: TurnRecord): ImportTurn {
  const meta: Record<string, unknown> = { ...record.extras, dumpLine: record.index, file: record.source.file };
  if (record.engineAgentId !== null) meta.engineAgentId = record.engineAgentId;
  if (record.wgId !== null) meta.wgId = record.wgId;
  if (record.trajectory !== null) meta.trajectory = record.trajectory;
  if (record.formatValid !== null) meta.formatValid = record.formatValid;
  if (record.correct !== null) meta.correct = record.correct;
  return {
    agent: record.agent ?? 'unknown',
    role: record.role,
    round: record.round ?? 0,
    prompt: record.prompt,
    text: record.text,
    finishReason: null,
    // veRL dumps decoded text; a reward function may add `response_length`.
    tokens: typeof record.extras.response_length === 'number' ? record.extras.response_length : null,
    reward: record.reward,
    advantage: record.advantage,
    verdict: null,
    meta,
  };
}

/**
 * The episode's outcome: its last Solver or Corrector turn's (MarsRL's chain ends on an answer), as
 * ingest.ts takes it — the reward function's own `acc`/`pred` where it dumped them; else, where the
 * dump has the reference answer (`gts`), the Studio's math checker on the response.
 */
function outcome(turns: readonly TurnRecord[]): { finalAnswer: string | null; correct: boolean | null; judgedBy: 'engine' | 'studio' | null } {
  const answering = turns.filter((t) => t.role === 'solver' || t.role === 'corrector' || t.role === null);
  const last = [...answering].sort((a, b) => (a.round ?? 0) - (b.round ?? 0) || (a.role === 'corrector' ? 1 : 0) - (b.role === 'corrector' ? 1 : 0)).pop();
  if (!last) return { finalAnswer: null, correct: null, judgedBy: null };
  const pred = typeof last.extras.pred === 'string' ? last.extras.pred : null;
  if (last.correct !== null) return { finalAnswer: pred, correct: last.correct, judgedBy: 'engine' };
  if (last.groundTruth === null || last.groundTruth === '') return { finalAnswer: pred, correct: null, judgedBy: null };
  const judged = judgeMathAnswer(last.groundTruth, last.text);
  return { finalAnswer: judged.answer, correct: judged.correct, judgedBy: 'studio' };
}

function episodeOf(turns: TurnRecord[], engine: 'verl' | 'drmas'): ImportEpisode {
  const first = turns[0];
  const asker = turns.find((t) => t.role === 'solver') ?? first;
  const answer = asker.groundTruth ?? '';
  const { judgedBy, ...result } = outcome(turns);
  return {
    split: first.split,
    step: first.step,
    problem: { key: `p-${digest(`${answer}\u0000${asker.prompt}`)}`, question: asker.prompt, answer, meta: { source: `${engine} dump` } },
    turns: turns.map(turnOf),
    ...result,
    group: first.group,
    meta: { engine, trajectory: first.trajectory, group: first.group, file: first.source.file, judgedBy },
  };
}

/** Turns in dump order, a trajectory's turns together (its first turn's place); padding copies dropped. */
function episodesOf(turns: readonly TurnRecord[], engine: 'verl' | 'drmas'): { episodes: ImportEpisode[]; duplicates: number } {
  const groups = new Map<string, TurnRecord[]>();
  let duplicates = 0;
  let alone = 0;
  for (const t of turns) {
    if (t.duplicate === true) {
      duplicates++;
      continue;
    }
    const key = t.trajectory !== null ? `${t.split}/${t.step}/${t.trajectory}` : `#${alone++}`;
    const list = groups.get(key);
    if (list) list.push(t);
    else groups.set(key, [t]);
  }
  return { episodes: [...groups.values()].map((list) => episodeOf(list, engine)), duplicates };
}

function checkpointsOf(record: CheckpointRecord): ImportCheckpoint[] {
  // The policy is the engine's own: `actor` for veRL's one policy, the worker group id for DrMAS (its roles are on the turns).
  return record.policies.map((p) => ({ step: record.step, policyId: p.wgId, path: p.hfDir ?? p.dir }));
}

export function convertRecords(records: readonly FollowRecord[], engine: 'verl' | 'drmas'): Converted {
  const out: Converted = { metrics: [], episodes: [], checkpoints: [], issues: [], duplicates: 0 };
  const turns: TurnRecord[] = [];
  for (const r of records) {
    switch (r.kind) {
      case 'metric':
        // The engine writes no time per metric (the follower's observedAt is when it was read).
        out.metrics.push({ step: r.step, key: r.key, value: r.value, wallTime: null });
        break;
      case 'turn':
        turns.push(r);
        break;
      case 'checkpoint':
        out.checkpoints.push(...checkpointsOf(r));
        break;
      case 'warning':
        out.issues.push({ file: r.source?.file ?? '', position: positionOf(r.source), message: r.message });
        break;
      case 'traceback':
        out.issues.push({ file: r.source.file, position: positionOf(r.source), message: `the run's log ends in a Python traceback${r.actor ? ` (${r.actor})` : ''}: ${r.error}` });
        break;
      default:
        // status, log, checkpoint_removed: a finished folder has no job to follow.
        break;
    }
  }
  const grouped = episodesOf(turns, engine);
  out.episodes = grouped.episodes;
  out.duplicates = grouped.duplicates;
  return out;
}

/**
 * Generation dumps: `{rollout_data_dir|validation_data_dir}/{global_step}.jsonl`, one line per sample
 * (veRL `_dump_generations`, v0.7.1 ray_trainer.py:394-452; DrMAS ray_trainer.py:689-711):
 * `input`, `output`, `gts` (veRL ≥ 0.6), `score`, `step`, then every extra of batch length — the
 * reward function's (`acc`, `pred`…), `reward` first in validation dumps, `uid` in veRL 0.9
 * (`{prompt_uuid4}_{session}_{index}`), the Studio hook's fields in DrMAS. Written by
 * `json.dumps(…, ensure_ascii=False)`: NaN as a bare token.
 *
 * When a step's file is complete (veRL ≥ 0.8 writes dumps line by line in a background thread, so a
 * file exists long before it is whole):
 *   (a) the job's log says `Dumped generations to <that path>` (printed after the file is closed);
 *   (b) a file submitted later exists: any dump of a later step (one writer thread, files written in
 *       submission order), or the same step's other dump that follows it (legacy: rollout/N then
 *       validation/N; V1: validation/N then rollout/N);
 *   (c) the job SUCCEEDED (the writer is drained before the trainer returns).
 * An unproven file is read only once the job ended otherwise (FAILED, STOPPED) or when a finished
 * folder is imported, and then only its newline-terminated lines, with a warning.
 */
import path from 'node:path';
import type { Role } from '#shared/agents';
import { parsePythonJson } from './pyjson';
import type { SourcePos, TurnRecord } from './records';
import { numberedEntries } from '../../util/numbered-entries';
import type { DumpOrder, EngineAgent } from './spec';

export type Split = 'train' | 'test';

/** `rollout/12.jsonl` → 12; other names are not dumps. */
const DUMP_NAME = /^(\d+)\.jsonl$/;

export function dumpStep(name: string): number | null {
  const m = DUMP_NAME.exec(name);
  return m ? Number(m[1]) : null;
}

export function listDumps(dir: string | null): number[] {
  return numberedEntries(dir, DUMP_NAME);
}

/** Whether the dump of `split` at `step` is proven complete by rule (b): a file written after it exists. */
export function provenByLaterFile(order: DumpOrder, split: Split, step: number, train: readonly number[], test: readonly number[]): boolean {
  if (train.some((s) => s > step) || test.some((s) => s > step)) return true;
  if (order === 'legacy' && split === 'train') return test.includes(step);
  if (order === 'v1' && split === 'test') return train.includes(step);
  return false;
}

const BASE = new Set(['input', 'output', 'gts', 'score', 'step', 'uid']);
const HOOK = new Set(['agent_id', 'wg_id', 'traj_uid', 'env_step', 'turn', 'round', 'is_action_valid', 'advantage', 'dup']);

function num(v: unknown): number | null {
  return typeof v === 'number' ? v : null;
}

function text(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** veRL's uid `{uuid4}_{session}_{index}` (v0.9.0 agent_loop_tq.py:178-193): split from the right, the uuid has hyphens only. */
export function parseVerlUid(uid: string): { group: string; session: number; index: number } | null {
  const parts = uid.split('_');
  if (parts.length < 3) return null;
  const index = Number(parts.pop());
  const session = Number(parts.pop());
  if (!Number.isInteger(index) || !Number.isInteger(session)) return null;
  return { group: parts.join('_'), session, index };
}

/** The Studio agent name of a chain turn: solver, verifier{r+1}, corrector{r+1} (agents/formats.ts agentName). */
export function studioAgentName(role: Role, round: number): string {
  return role === 'solver' ? 'solver' : `${role}${round + 1}`;
}

export interface DumpContext {
  split: Split;
  /** Relative name for source positions (`rollout/12.jsonl`). */
  file: string;
  agents: readonly EngineAgent[];
  engine: 'verl' | 'drmas';
}

/** One dumped line as a turn. Throws on a line that is not a JSON object with input and output. */
export function turnOfLine(line: string, index: number, source: SourcePos, ctx: DumpContext): TurnRecord {
  const row = parsePythonJson(line);
  if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new Error('not a JSON object');
  const r = row as Record<string, unknown>;
  if (typeof r.input !== 'string' || typeof r.output !== 'string') throw new Error('no "input" and "output" strings');
  const step = num(r.step);
  if (step === null || !Number.isInteger(step)) throw new Error('no integer "step"');

  let group: string | null = null;
  let sampleIndex: number | null = null;
  let agent: string | null = null;
  let role: Role | null = null;
  let round: number | null = null;
  let engineAgentId: string | null = null;
  let wgId: string | null = null;
  let duplicate: boolean | null;
  let formatValid: boolean | null = typeof r.format_valid === 'number' ? r.format_valid > 0 : null;

  if (ctx.engine === 'verl') {
    // One policy: every turn is the Solver's.
    const only = ctx.agents.length === 1 ? ctx.agents[0] : null;
    role = only?.role ?? null;
    agent = role;
    round = role === null ? null : 0;
    duplicate = false;
    if (typeof r.uid === 'string') {
      const uid = parseVerlUid(r.uid);
      if (uid) {
        group = uid.group;
        sampleIndex = uid.session;
      }
    }
  } else {
    engineAgentId = typeof r.agent_id === 'string' ? r.agent_id : null;
    wgId = typeof r.wg_id === 'string' ? r.wg_id : null;
    group = typeof r.uid === 'string' ? r.uid : null;
    duplicate = typeof r.dup === 'number' ? r.dup > 0 : null;
    if (typeof r.is_action_valid === 'number' || typeof r.is_action_valid === 'boolean') formatValid = Boolean(r.is_action_valid);
    if (engineAgentId !== null) {
      role = ctx.agents.find((a) => a.engineId === engineAgentId)?.role ?? null;
      round = num(r.round);
      agent = role !== null && round !== null ? studioAgentName(role, round) : role;
    }
  }
  const extras: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) if (!BASE.has(k) && !(ctx.engine === 'drmas' && HOOK.has(k))) extras[k] = v;
  const acc = r.acc;
  return {
    kind: 'turn',
    split: ctx.split,
    step,
    index,
    prompt: r.input,
    text: r.output,
    reward: num(r.score),
    correct: typeof acc === 'number' || typeof acc === 'boolean' ? Number(acc) > 0 : null,
    groundTruth: text(r.gts),
    group,
    sampleIndex,
    trajectory: ctx.engine === 'drmas' && typeof r.traj_uid === 'string' ? r.traj_uid : null,
    agent,
    role,
    round,
    engineAgentId,
    wgId,
    advantage: ctx.engine === 'drmas' ? num(r.advantage) : null,
    duplicate,
    formatValid,
    extras,
    source,
  };
}

export function dumpFileName(dir: string, step: number): string {
  return path.join(dir, `${step}.jsonl`);
}

/**
 * A test-only import format for the importer's tests (issue 39): a folder of `*.lines` files, each
 * one source run; a line is one JSON record (`m`: a metric, `e`: an episode of turns, `c`: a
 * checkpoint). A line that is not such a record is an issue naming the file and its line. The
 * cursor is the byte offset and line number after the last complete line, so a grown file yields
 * only its new lines and a partial last line waits for the next import.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ImportFormatId, ImportIssue } from '../../src-shared/contract';
import type { ImportBatch, ImportEpisode, ImportFormat, ImportMetric, ScannedRun } from '../../src-main/engine/imports/types';

type LineRecord =
  | { m: string; step: number; value: number; t?: number }
  | { e: number; q: string; a: string; turns: { agent: string; text: string; reward?: number }[]; final: string; ok: boolean }
  | { c: number; dir: string };

interface Cursor {
  offset: number;
  line: number;
}

const files = (root: string) => fs.readdirSync(root).filter((f) => f.endsWith('.lines')).sort();

function parse(text: string): LineRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (value === null || typeof value !== 'object') return 'not a record';
  const r = value as Record<string, unknown>;
  if (typeof r.m === 'string' && typeof r.step === 'number' && typeof r.value === 'number') return r as LineRecord;
  if (typeof r.e === 'number' && Array.isArray(r.turns)) return r as LineRecord;
  if (typeof r.c === 'number' && typeof r.dir === 'string') return r as LineRecord;
  return 'neither a metric, an episode nor a checkpoint';
}

function episodeOf(r: Extract<LineRecord, { e: number }>): ImportEpisode {
  return {
    split: 'train',
    step: r.e,
    problem: { key: r.q, question: r.q, answer: r.a, meta: null },
    turns: r.turns.map((t, i) => ({ agent: t.agent, role: t.agent === 'solver' ? 'solver' : t.agent.startsWith('verifier') ? 'verifier' : 'corrector', round: i === 0 ? 0 : Math.ceil(i / 2), prompt: r.q, text: t.text, finishReason: 'stop', tokens: t.text.length, reward: t.reward ?? null, advantage: null, verdict: t.agent.startsWith('verifier') ? t.text === 'yes' : null, meta: { line: true } })),
    finalAnswer: r.final,
    correct: r.ok,
    group: `g${r.e}`,
    meta: null,
  };
}

/** Complete lines of `file` after `cursor`, one batch of `size` records at a time. */
async function* batches(file: string, rel: string, cursor: Cursor, size: number, signal?: AbortSignal): AsyncGenerator<ImportBatch> {
  const text = fs.readFileSync(file).subarray(cursor.offset).toString('utf8');
  const end = text.lastIndexOf('\n') + 1;
  let offset = cursor.offset;
  let line = cursor.line;
  let batch: ImportBatch = { metrics: [], episodes: [], checkpoints: [], issues: [], cursor, bytesDone: offset };
  let count = 0;
  for (const raw of text.slice(0, end).split('\n').slice(0, -1)) {
    signal?.throwIfAborted();
    line++;
    offset += Buffer.byteLength(raw) + 1;
    const r = parse(raw);
    if (typeof r === 'string') batch.issues.push({ file: rel, position: `line ${line}`, message: r });
    else if ('m' in r) batch.metrics.push({ step: r.step, key: r.m, value: r.value, wallTime: r.t ?? null } satisfies ImportMetric);
    else if ('e' in r) batch.episodes.push(episodeOf(r));
    else batch.checkpoints.push({ step: r.c, policyId: 'solver', path: r.dir });
    batch.cursor = { offset, line };
    batch.bytesDone = offset;
    if (++count === size) {
      yield batch;
      batch = { metrics: [], episodes: [], checkpoints: [], issues: [], cursor: { offset, line }, bytesDone: offset };
      count = 0;
    }
  }
  if (count > 0) yield batch;
}

export function lineFormat(id: ImportFormatId = 'trackio'): ImportFormat & { reads: number } {
  const format = {
    id,
    label: 'test lines',
    reads: 0,
    detect: (root: string) => fs.statSync(root).isDirectory() && files(root).length > 0,
    async scan(root: string) {
      const runs: ScannedRun[] = [];
      const issues: ImportIssue[] = [];
      let bytes = 0;
      for (const f of files(root)) {
        const text = fs.readFileSync(path.join(root, f), 'utf8');
        bytes += Buffer.byteLength(text);
        const steps = new Set<number>();
        const keys = new Set<string>();
        let points = 0;
        let episodes = 0;
        text.split('\n').forEach((raw, i) => {
          if (raw === '') return;
          const r = parse(raw);
          if (typeof r === 'string') issues.push({ file: f, position: `line ${i + 1}`, message: r });
          else if ('m' in r) {
            points++;
            keys.add(r.m);
            steps.add(r.step);
          } else if ('e' in r) {
            episodes++;
            steps.add(r.e);
          }
        });
        const sorted = [...steps].sort((a, b) => a - b);
        runs.push({ key: f, name: f.replace(/\.lines$/, ''), steps: steps.size, firstStep: sorted[0] ?? null, lastStep: sorted.at(-1) ?? null, metricKeys: [...keys].sort(), metricPoints: points, generations: episodes * 2, episodes, agents: ['solver', 'verifier1'], config: { file: f, lr: 0.5 }, tags: ['from-test'], startedAt: null, endedAt: null });
      }
      return { runs, issues, files: files(root).length, bytes };
    },
    read(root: string, key: string, cursor: unknown, options: { batchSize: number; signal?: AbortSignal }) {
      format.reads++;
      return batches(path.join(root, key), key, (cursor as Cursor | null) ?? { offset: 0, line: 0 }, options.batchSize, options.signal);
    },
  };
  return format;
}

export const metricLine = (m: string, step: number, value: number, t?: number) => JSON.stringify({ m, step, value, ...(t === undefined ? {} : { t }) });
export const episodeLine = (e: number, q: string, ok: boolean) =>
  JSON.stringify({ e, q, a: '42', final: ok ? '42' : '41', ok, turns: [{ agent: 'solver', text: ok ? '42' : '41', reward: ok ? 1 : 0 }, { agent: 'verifier1', text: ok ? 'yes' : 'no' }] });

/**
 * A MarsRL output folder: the call files and the input rows beside them.
 *
 * vc_reasoning_system.py (process_all) runs input row `idx` (its 0-based line in the test file)
 * into `{out}/{idx}.json`, and Agent.init opens `{output_file}.{worker_id}` — so calls live in
 * `<idx>.json.<worker>`; the logs (`<idx>_log.json.<worker>`) are not calls. extract_solution.py
 * later writes `init_answer.jsonl`, `eval_accepted.jsonl` and `eval_overall.jsonl` into the same
 * folder: the input rows (`query`, `ans_box`, `qid`, `data_source`, `source`) with solutions added.
 * Any `*.jsonl` there whose rows have a `query` (those, or the test file copied in) gives rows.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ImportIssue } from '#shared/contract';
import { parseCall, statementOf, type MarsCall } from './calls';
import { completeLines, firstLine } from './lines';

export const CALL_FILE = /^(\d+)\.json\.(\d+)$/;

export interface CallFile {
  /** The file name (relative to the folder). */
  name: string;
  path: string;
  idx: number;
  worker: number;
  size: number;
}

export interface InputRow {
  query: string;
  ansBox: string;
  qid: string | number | null;
  dataSource: string | null;
  source: string | null;
}

/** The call files, by idx then worker. */
export function callFiles(folder: string): CallFile[] {
  const files: CallFile[] = [];
  for (const name of fs.readdirSync(folder)) {
    const match = CALL_FILE.exec(name);
    if (!match) continue;
    const file = path.join(folder, name);
    const stat = fs.statSync(file);
    if (stat.isFile()) files.push({ name, path: file, idx: Number(match[1]), worker: Number(match[2]), size: stat.size });
  }
  return files.sort((a, b) => a.idx - b.idx || a.worker - b.worker);
}

/** Whether a call file's first line is a MarsRL call record (a cheap look: one line). */
export function looksLikeCallFile(file: string): boolean {
  try {
    return typeof parseCall(firstLine(file), 1) === 'object';
  } catch {
    return false;
  }
}

function inputRow(value: unknown): InputRow | null {
  if (typeof value !== 'object' || value === null) return null;
  const row = value as Record<string, unknown>;
  if (typeof row.query !== 'string') return null;
  const text = (field: unknown): string | null => (typeof field === 'string' || typeof field === 'number' ? String(field) : null);
  const qid = typeof row.qid === 'string' || typeof row.qid === 'number' ? row.qid : null;
  return { query: row.query, ansBox: text(row.ans_box) ?? '', qid, dataSource: text(row.data_source), source: text(row.source) };
}

function rowOfLine(text: string): InputRow | null {
  try {
    return inputRow(JSON.parse(text));
  } catch {
    return null;
  }
}

/** Input rows by problem statement, from the row files of the folder (first seen wins); read line by line. */
export async function inputRows(folder: string): Promise<Map<string, InputRow>> {
  const rows = new Map<string, InputRow>();
  for (const name of fs.readdirSync(folder).sort()) {
    const file = path.join(folder, name);
    if (!name.endsWith('.jsonl') || !fs.statSync(file).isFile()) continue;
    for await (const line of completeLines(file, 0, 1)) {
      const row = rowOfLine(line.text);
      if (row === null) break; // not a row file (or a damaged one: the rows are optional context)
      if (!rows.has(row.query)) rows.set(row.query, row);
    }
  }
  return rows;
}

/** The row of a chain: the one whose query is the statement its Solver was given. */
export function rowOf(calls: readonly MarsCall[], rows: Map<string, InputRow>): InputRow | null {
  const step1 = calls.find((call) => call.callReason === 'step1');
  const statement = step1 ? statementOf(step1) : null;
  return statement === null ? null : (rows.get(statement) ?? null);
}

export interface ChainRead {
  calls: MarsCall[];
  issues: ImportIssue[];
  /** Byte offset after the last complete line read, and the number the next line will have. */
  end: { offset: number; line: number };
}

/** The complete lines of a call file from `offset`; a line that is not a call is an issue naming the file and line. */
export async function readCalls(file: CallFile, offset: number, firstNumber: number): Promise<ChainRead> {
  const read: ChainRead = { calls: [], issues: [], end: { offset, line: firstNumber } };
  for await (const line of completeLines(file.path, offset, firstNumber)) {
    read.end = { offset: line.end, line: line.number + 1 };
    if (line.text.trim() === '') continue;
    const call = parseCall(line.text, line.number);
    if (typeof call === 'string') read.issues.push({ file: file.name, position: `line ${line.number}`, message: call });
    else read.calls.push(call);
  }
  return read;
}

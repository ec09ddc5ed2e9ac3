/**
 * The Studio's task as the engine's dataset parquet (issue 38): the same columns as the veRL
 * export (export/formats.ts VERL_COLUMNS, written by the export's ParquetSink), built from the
 * generated problems rather than from a run's stored ones, since an engine run has not made any
 * yet. veRL's rows carry the Solver's chat prompt (the run's `prompts.solver` templates);
 * DrMAS's math environment reads only `env_kwargs` (`agent_system/environments/env_package/math/
 * envs.py`) and builds its agents' prompts itself, so its rows carry the bare question, as its
 * `examples/data_preprocess/drmas_math.py` writes them.
 *
 * The dataset belongs to the run, not the attempt: a resumed dataloader state refers to its row
 * order. Its digest is recorded beside it, and a later attempt whose config would write other rows
 * is refused rather than silently training on a different dataset.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import { VERL_COLUMNS } from '../export/formats';
import { str, struct, type ColumnSpec } from '../export/schema';
import { ParquetSink, publish, removeQuietly, tempPathFor } from '../export/sinks';
import { textFormatOf } from '../agents/prompts';
import { getTaskFamily } from '../tasks/registry';
import type { Problem } from '../tasks/types';

export const DRMAS_COLUMNS: ColumnSpec[] = [
  ...VERL_COLUMNS,
  struct(
    'env_kwargs',
    [
      str('ground_truth', false, 'reference answer the math environment judges against'),
      str('question', false, 'the problem statement the agents read'),
      str('data_source', false, 'groups validation metrics'),
    ],
    'What DrMAS\'s math environment reads (env_package/math/envs.py).',
  ),
];

/** The data source of the Studio's math task: the shipped reward function scores it. */
export const STUDIO_DATA_SOURCE = 'marsrl/math';

export interface DatasetRowsSpec {
  format: 'verl' | 'drmas';
  split: 'train' | 'test';
  rows: number;
  /** The Studio run the rows belong to (extra_info.run_id, passed to the reward function). */
  runId: number;
}

function familyOf(config: RunConfig) {
  return getTaskFamily(config.task.family, {
    path: config.task.jsonl_path,
    checker: config.task.checker,
    mathPath: config.task.math_path,
    generator: config.task.math_generator,
    prompts: config.prompts,
  });
}

/** The rows of one split, in file order (deterministic in the config's task, seed and prompts). */
export function datasetRows(config: RunConfig, spec: DatasetRowsSpec): Record<string, unknown>[] {
  const family = familyOf(config);
  const chat = textFormatOf(family).chat;
  const count = spec.split === 'train' ? config.task.train_size : config.task.test_size;
  const problems: Problem[] = family.generate({ seed: config.seed, difficulty: config.task.difficulty, count, split: spec.split }).slice(0, spec.rows);
  return problems.map((problem, index) => {
    const prompt = spec.format === 'verl' && chat ? chat.solver(problem) : [{ role: 'user', content: problem.question }];
    const row: Record<string, unknown> = {
      data_source: STUDIO_DATA_SOURCE,
      prompt,
      ability: 'math',
      reward_model: { style: 'rule', ground_truth: problem.answer },
      extra_info: { split: problem.split, index, run_id: spec.runId, problem_id: index, problem_key: problem.key, family: problem.family, question: problem.question },
    };
    if (spec.format === 'drmas') row.env_kwargs = { ground_truth: problem.answer, question: problem.question, data_source: STUDIO_DATA_SOURCE };
    return row;
  });
}

function digestOf(rows: readonly Record<string, unknown>[]): string {
  const hash = crypto.createHash('sha256');
  for (const row of rows) hash.update(JSON.stringify(row)).update('\n');
  return hash.digest('hex');
}

interface DatasetRecord {
  format: 'marsrl-engine-dataset';
  files: Record<string, { rows: number; digest: string }>;
}

/**
 * Writes one split's parquet at `file` (this machine's path), or keeps the one an earlier attempt
 * wrote when its digest matches; a different digest is refused (the checkpoints were trained on
 * the other rows).
 */
export function writeDataset(config: RunConfig, spec: DatasetRowsSpec, file: string): { rows: number; digest: string; reused: boolean } {
  const rows = datasetRows(config, spec);
  const digest = digestOf(rows);
  const recordFile = path.join(path.dirname(file), 'dataset.json');
  const record = readRecord(recordFile);
  const name = path.basename(file);
  const known = record.files[name];
  if (known && fs.existsSync(file)) {
    if (known.digest === digest) return { rows: rows.length, digest, reused: true };
    throw new Error(
      `${file} was written for an earlier attempt from other problems (digest ${known.digest.slice(0, 12)}, now ${digest.slice(0, 12)}); a resumed run must train on the rows its checkpoints saw. Keep the task settings (task.*, seed, prompts.solver) of the first attempt, or start a new run.`,
    );
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temp = tempPathFor(file);
  const sink = new ParquetSink(temp, spec.format === 'drmas' ? DRMAS_COLUMNS : VERL_COLUMNS, 10_000, 16 << 20, [
    { key: 'marsrl.format', value: `engine-${spec.format}` },
    { key: 'marsrl.split', value: spec.split },
  ]);
  try {
    for (const row of rows) sink.write(row, JSON.stringify(row).length);
    sink.finish();
    publish(temp, file, true);
  } catch (error) {
    sink.abandon();
    removeQuietly(temp);
    throw error;
  }
  record.files[name] = { rows: rows.length, digest };
  const tmpRecord = `${recordFile}.${process.pid}.tmp`;
  fs.writeFileSync(tmpRecord, `${JSON.stringify(record, null, 2)}\n`);
  fs.renameSync(tmpRecord, recordFile);
  return { rows: rows.length, digest, reused: false };
}

function readRecord(file: string): DatasetRecord {
  try {
    const json = JSON.parse(fs.readFileSync(file, 'utf8')) as DatasetRecord;
    if (json.format === 'marsrl-engine-dataset' && json.files && typeof json.files === 'object') return json;
  } catch {
    // Absent or unreadable: no earlier dataset is known.
  }
  return { format: 'marsrl-engine-dataset', files: {} };
}

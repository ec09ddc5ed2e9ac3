/**
 * The one entry point for StudioApi calls that cross a trust boundary (IPC from the renderer,
 * HTTP from a browser). The method name and every argument are validated here before any
 * handler runs; a bad payload gets an `invalid_request` naming the field and what is allowed.
 */
import { z } from 'zod';
import { IMPORT_FORMATS, STUDIO_METHODS, type ImportFormatId, type StudioApi, type StudioMethod } from '#shared/contract';
import { RUN_STATUSES } from '../engine/store/types';
import { StudioError } from '#shared/errors';

const runId = z.number().int().positive();

const ListRunsQuerySchema = z.strictObject({
  beforeId: z.number().int().positive().optional(),
  limit: z.number().int().min(1).max(500).optional(),
  status: z.enum(RUN_STATUSES as unknown as [string, ...string[]]).optional(),
  search: z.string().max(200).optional(),
  configPaths: z.array(z.string().regex(/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/, 'a dotted config path such as rollout.solver_group')).max(32).optional(),
});

const optionalCursor = z.number().int().nonnegative().optional();
// The new-run form's document: only an object here; the run-config schema inside the handler checks it, as validateConfig does.
const runConfigDocument = z.record(z.string(), z.unknown(), "a run configuration object (the new-run form's document)");
const agentName = z.string().regex(/^[a-z]+\d*$/, 'an agent name such as solver, verifier1 or corrector2');

const RunUpdateSchema = z.strictObject({
  name: z.string().trim().min(1, 'a run name cannot be empty').max(200).optional(),
  notes: z.string().max(100_000).optional(),
  tags: z.array(z.string().max(50)).max(50).optional(),
});

const StartRunSchema = z.strictObject({
  config: z.record(z.string(), z.unknown()).optional(),
  preset: z.string().min(1).max(100).optional(),
  name: z.string().trim().min(1).max(200).optional(),
});

const SeriesQuerySchema = z.strictObject({
  runId,
  keys: z.array(z.string().min(1).max(200)).min(1, 'ask for at least one metric key').max(64),
  maxPoints: z.number().int().min(10).max(20_000).optional(),
  xAxis: z.enum(['step', 'wall']).optional(),
  downsample: z.enum(['lttb', 'minmax', 'none']).optional(),
});

const TurnQuerySchema = z.strictObject({
  runId,
  afterId: optionalCursor,
  limit: z.number().int().min(1).max(1000).optional(),
  agent: agentName.optional(),
  step: z.number().int().nonnegative().optional(),
  episodeId: z.number().int().positive().optional(),
  correct: z.boolean().optional(),
  minReward: z.number().finite().optional(),
  maxReward: z.number().finite().optional(),
  includeSuperseded: z.boolean().optional(),
});

const EpisodeQuerySchema = z.strictObject({
  runId,
  step: z.number().int().nonnegative().optional(),
  split: z.enum(['train', 'test']).optional(),
  afterId: optionalCursor,
  limit: z.number().int().min(1).max(1000).optional(),
  includeSuperseded: z.boolean().optional(),
  stepFrom: z.number().int().nonnegative().optional(),
  stepTo: z.number().int().nonnegative().optional(),
  outcome: z.enum(['solved', 'unsolved']).optional(),
  verifier: z.enum(['false_approve', 'false_reject']).optional(),
  corrector: z.enum(['fixed', 'broke', 'unchanged']).optional(),
  search: z.string().max(500).optional(),
  latestStep: z.boolean().optional(),
});

const importPath = z.string().min(1, 'give the folder or file to import').max(4096, 'a path of at most 4096 characters');
const importFormat = z.enum(IMPORT_FORMATS as unknown as [ImportFormatId, ...ImportFormatId[]], { error: `one of ${IMPORT_FORMATS.join(', ')}, or leave it out to detect the format` });
const ImportPreviewSchema = z.strictObject({ path: importPath, format: importFormat.optional() });
const ImportRequestSchema = z.strictObject({
  path: importPath,
  format: importFormat.optional(),
  runs: z.array(z.string().min(1).max(1024)).max(10_000).optional(),
  name: z.string().min(1, 'a name cannot be empty; leave it out to keep the source\'s').max(200).optional(),
  tags: z.array(z.string().min(1).max(100)).max(50).optional(),
});

const ExportRequestSchema = z.strictObject({
  runs: z.array(z.number().int().positive()).min(1, 'choose at least one run').max(1000),
  format: z.enum(['trajectories', 'verl', 'sft', 'pairs', 'tensorboard']),
  container: z.enum(['jsonl', 'parquet']).optional(),
  out: z.string().min(1, 'give the output file path (an existing folder for the tensorboard format)').max(4096),
  force: z.boolean().optional(),
  dedupe: z.boolean().optional(),
  counterfactual: z.boolean('counterfactual is true or false (trajectories only: add each turn\'s reward under every scheme and advantage under every mode)').optional(),
  filters: z
    .strictObject({
      agents: z.array(agentName).max(64).optional(),
      stepFrom: z.number().int().nonnegative().optional(),
      stepTo: z.number().int().nonnegative().optional(),
      split: z.enum(['train', 'test']).optional(),
      correct: z.union([z.boolean(), z.literal('any')]).optional(),
      formatValid: z.union([z.boolean(), z.literal('any')]).optional(),
      minReward: z.number().finite().optional(),
      maxReward: z.number().finite().optional(),
      includeSuperseded: z.boolean().optional(),
    })
    .optional(),
});

const ModelExportSchema = z.strictObject({
  runId,
  policy: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'a policy id of the run, such as solver').optional(),
  format: z.enum(['peft', 'hf']),
  out: z.string().trim().min(1, 'give the output folder').max(4096).refine((p) => !p.includes('\0'), 'a path cannot contain a NUL character'),
  step: z.number().int().nonnegative().optional(),
  dtype: z.enum(['f32', 'f16', 'bf16']).optional(),
  force: z.boolean().optional(),
});

const runIdList = z.array(runId).min(1, 'choose at least one run').max(200, 'compare at most 200 runs at once');
const configPath = z.string().regex(/^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/, 'a config path such as reward.scheme, or sharing');

const CompareRequestSchema = z.strictObject({
  runIds: runIdList,
  groupBy: z.array(configPath).max(8).optional(),
  baselineRunId: runId.optional(),
  baselineGroup: z.string().max(500).optional(),
  spikeThreshold: z.number().gt(1, 'a multiple of the median above 1, e.g. 3').max(1000).optional(),
});

const CompareSeriesSchema = z.strictObject({
  runIds: runIdList,
  key: z.string().min(1).max(200),
  xAxis: z.enum(['step', 'wall', 'samples']).optional(),
  groupBy: z.array(configPath).max(8).optional(),
  band: z.enum(['minmax', 'std', 'ci95']).optional(),
  maxPoints: z.number().int().min(10).max(20_000).optional(),
});

// The matrix itself is checked field by field by the study parser, which names each bad field.
const StartStudySchema = z.strictObject({
  matrix: z.record(z.string(), z.unknown()),
  concurrency: z.number().int().min(1).max(32).optional(),
});

// One problem, many episodes (issue 40): the runs to match it across, and which problem.
const problemRunIds = z.array(runId).min(1, 'choose at least one run').max(20, 'show at most 20 runs side by side');
const ProblemOutcomeQuerySchema = z.strictObject({
  runIds: problemRunIds,
  differs: z.boolean().optional(),
  split: z.enum(['train', 'test'], { error: "'test' (the held-out set) or 'train'" }).optional(),
  search: z.string().max(500).optional(),
  cursor: z.number().int().nonnegative().optional(),
  limit: z.number().int().min(1).max(1000).optional(),
});
const ProblemEpisodesQuerySchema = z
  .strictObject({
    runIds: problemRunIds,
    problemId: z.number().int().positive().optional(),
    turnId: z.number().int().positive().optional(),
    steps: z.array(z.number().int().nonnegative()).min(1, 'give at least one step, or leave steps out for a spread of them').max(64).optional(),
  })
  .refine((q) => (q.problemId === undefined) !== (q.turnId === undefined), { message: 'give exactly one of problemId (a problem of one of the runs) or turnId (any turn of theirs)', path: ['problemId'] });
// Issue 40: what to replay (exactly one of episode, problem, prompt) and with what (the handler names a field it cannot use).
const ReplayRequestSchema = z
  .strictObject({
    runId,
    episodeId: z.number().int().positive().optional(),
    problemId: z.number().int().positive().optional(),
    prompt: z.string().min(1, 'type the question the Solver should answer').max(20_000).optional(),
    checkpoint: z
      .strictObject({
        runId: runId.optional(),
        step: z.union([z.number().int().nonnegative(), z.literal('init')], { error: "a checkpoint step (0 or more) or 'init' for the starting policies" }).optional(),
        path: z.string().min(1).max(4096).refine((p) => !p.includes('\0'), 'a path cannot contain a NUL character').optional(),
      })
      .refine((c) => (c.step === undefined) !== (c.path === undefined), 'give the checkpoint a step or a path, one of them')
      .optional(),
    endpoint: z.string().min(1).max(200).optional(),
    decoding: z.enum(['greedy', 'sampled']).optional(),
    seed: z.number().int().nonnegative().max(0xffffffff).optional(),
  })
  .refine((r) => [r.episodeId, r.problemId, r.prompt].filter((v) => v !== undefined).length === 1, { message: 'give exactly one of episodeId, problemId or prompt', path: ['episodeId'] })
  .refine((r) => !(r.checkpoint && r.endpoint), { message: 'give a checkpoint or an endpoint, not both', path: ['endpoint'] });

/** Argument tuples per method; a method missing here fails typecheck. */
const ARGUMENTS: { [M in StudioMethod]: z.ZodType } = {
  appInfo: z.tuple([]),
  listRuns: z.tuple([ListRunsQuerySchema.optional()]),
  getRun: z.tuple([runId]),
  updateRun: z.tuple([runId, RunUpdateSchema]),
  deleteRun: z.tuple([runId]),
  listPresets: z.tuple([]),
  getPreset: z.tuple([z.string().min(1).max(100)]),
  // The config itself is checked by the run-config schema inside the handler, which reports
  // field-level issues as data rather than as a request error.
  validateConfig: z.tuple([z.unknown()]),
  configSchema: z.tuple([]),
  inspectModel: z.tuple([
    z
      .string()
      .min(1, 'give the path of a Hugging Face model folder')
      .max(4096)
      .refine((p) => !p.includes('\0'), 'a path cannot contain a NUL character'),
  ]),
  checkEndpoints: z.tuple([runConfigDocument]),
  startRun: z.tuple([StartRunSchema]),
  stopRun: z.tuple([runId]),
  resumeRun: z.tuple([runId]),
  runAgain: z.tuple([runId]),
  explainAdvantage: z.tuple([z.number().int().positive()]),
  listMetricKeys: z.tuple([runId]),
  getSeries: z.tuple([SeriesQuerySchema]),
  listTurns: z.tuple([TurnQuerySchema]),
  listEpisodes: z.tuple([EpisodeQuerySchema]),
  getEpisode: z.tuple([
    z.number().int().positive(),
    z.strictObject({ verifier: z.enum(['false_approve', 'false_reject']).optional(), corrector: z.enum(['fixed', 'broke', 'unchanged']).optional() }).optional(),
  ]),
  listEvents: z.tuple([runId, optionalCursor]),
  getTimeline: z.tuple([runId]),
  getEngineJobs: z.tuple([runId, z.number().int().min(0).max(10_000).optional()]),
  previewEngineRun: z.tuple([runConfigDocument]),
  startExport: z.tuple([ExportRequestSchema]),
  cancelExport: z.tuple([z.string().regex(/^export-\d+$/, 'an export id returned by startExport')]),
  exportModel: z.tuple([ModelExportSchema]),
  previewImport: z.tuple([ImportPreviewSchema]),
  startImport: z.tuple([ImportRequestSchema]),
  cancelImport: z.tuple([z.string().regex(/^import-\d+$/, 'an import id returned by startImport')]),
  compareRuns: z.tuple([CompareRequestSchema]),
  compareSeries: z.tuple([CompareSeriesSchema]),
  listStudies: z.tuple([]),
  getStudy: z.tuple([z.number().int().positive()]),
  startStudy: z.tuple([StartStudySchema]),
  exportStudyReport: z.tuple([z.number().int().positive(), z.string().min(1, 'give the output folder').max(4096)]),
  getCounterfactualCredit: z.tuple([z.number('a turn id (a positive integer)').int('a turn id is a whole number').positive('a turn id is positive')]),
  getCreditDivergence: z.tuple([runId]),
  listProblemOutcomes: z.tuple([ProblemOutcomeQuerySchema]),
  getProblemEpisodes: z.tuple([ProblemEpisodesQuerySchema]),
  startReplay: z.tuple([ReplayRequestSchema]),
  listReplays: z.tuple([runId]),
  getReplay: z.tuple([z.number().int().positive()]),
  replayModels: z.tuple([runId]),
};

export function isStudioMethod(name: unknown): name is StudioMethod {
  return typeof name === 'string' && (STUDIO_METHODS as readonly string[]).includes(name);
}

export async function callStudio(service: StudioApi, method: unknown, args: unknown): Promise<unknown> {
  if (!isStudioMethod(method)) {
    throw new StudioError('invalid_request', `unknown method ${JSON.stringify(method)}; known methods: ${STUDIO_METHODS.join(', ')}`);
  }
  const list = args === undefined ? [] : args;
  if (!Array.isArray(list)) throw new StudioError('invalid_request', `arguments of ${method} must be an array`);
  // Trailing undefined (an optional argument left out) must not fail the tuple length check.
  while (list.length > 0 && list[list.length - 1] === undefined) list.pop();
  const parsed = ARGUMENTS[method].safeParse(list);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: [method, ...issue.path.map(String)].join('.'),
      message: issue.message,
    }));
    throw new StudioError('invalid_request', `invalid arguments for ${method}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
  const handler = service[method] as (...a: unknown[]) => Promise<unknown>;
  return handler.apply(service, parsed.data as unknown[]);
}

/**
 * The StudioApi implemented once, on the engine and store. Electron's IPC handlers, the HTTP
 * bridge of `marsrl serve` and the CLI all call these functions, so every surface shows the same
 * data. Arguments arrive here already validated (dispatch.ts).
 */
import type {
  AppInfo,
  EpisodeQuery,
  EpisodeSummary,
  ListRunsQuery,
  ModelInspection,
  SeriesQuery,
  StudioApi,
  TurnQuery,
} from '#shared/contract';
import fs from 'node:fs';
import path from 'node:path';
import { PROMPT_VARIABLES } from '../engine/agents/prompts';
import { configSchemaInfo, endpointFields } from '../engine/config/fields';
import { ConfigError, listPresets, presetDocument } from '../engine/config/load';
import { resolveConfig } from '../engine/preflight';
import { lttb, minMax, type Point } from '../engine/metrics/downsample';
import { poolFromConfig, probeIssues } from '../engine/served/config';
import type { EpisodeListItem, Store } from '../engine/store';
import { exportsDir } from '../engine/paths';
import { familyNotation } from '../engine/tasks/registry';
import { packageVersion } from '../engine/version';
import { createCompareStudyApi } from './compare-study';
import { StudioError } from '#shared/errors';
import type { EventHub } from './hub';
import type { RunController } from '../runner/manager';
import { toRunDetail, toRunSummary } from './views';
import { OffThread, OffThreadError } from './off-thread';
import type { endpointPrechecksOp } from './off-thread-ops';
import { confinedOutput, writableRoots } from './write-paths';
import { explainAdvantage } from '../engine/rl/explain';
import { DEFAULT_ADVANTAGE_OPTIONS, type AdvantageOptions } from '../engine/rl/advantages';
import { runAgainRequest } from '../engine/training/advice';

/** The std convention, ε and one-sample rule a run normalised its advantages with (the defaults for a config that no longer resolves). */
function advantageOptionsOf(config: Record<string, unknown>): AdvantageOptions {
  try {
    const { advantage } = resolveConfig(config);
    return { std: advantage.std, singleSample: advantage.single_sample, eps: advantage.eps };
  } catch {
    return DEFAULT_ADVANTAGE_OPTIONS;
  }
}

export interface StudioServiceOptions {
  store: Store;
  databasePath: string;
  transport: AppInfo['transport'];
  runs?: RunController;
  hub?: EventHub;
  /**
   * Where model folders are inspected and configs checked against this machine (issue #36): a
   * worker thread by default, so a hostile folder or task file never holds the caller's thread.
   */
  offThread?: OffThread;
}

const MAX_SERIES_POINTS = 20_000;

function toEpisodeSummary(e: EpisodeListItem): EpisodeSummary {
  return {
    id: e.id,
    runId: e.runId,
    step: e.step,
    split: e.split,
    problemId: e.problemId,
    question: e.question,
    reference: e.reference,
    finalAnswer: e.finalAnswer,
    correct: e.correct,
    rounds: e.rounds,
    turnCount: e.turnCount,
    attempt: e.attempt,
    supersededBy: e.supersededBy,
  };
}

/**
 * The export engine words its errors for the CLI (`pass --force`); the app's callers fill in a
 * form, so the same advice names the form's controls (issue 18).
 */
export function inFormWords(message: string): string {
  return message
    .replace(/pass --force \(force: true\) to replace it/g, 'press "Replace it (force)" to overwrite it')
    .replace(/ \(e\.g\. --out ([^)]+)\)/g, ' (e.g. $1)')
    .replace(/--correct any/g, 'Correctness: any')
    .replace(/--format-valid any/g, 'Format: any')
    .replace(/list runs with `marsrl runs` or in the runs table/g, 'choose runs in the runs table');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
/** `over` laid on `base`, object by object (arrays and values replace). */
function layered(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = isPlainObject(value) && isPlainObject(out[key]) ? layered(out[key] as Record<string, unknown>, value) : value;
  return out;
}
/**
 * A preset document whose Hugging Face policies have no folder yet, over the defaults: its own
 * policies (each over the default optimizer; the form fills the model block's defaults by kind).
 */
function presetAwaitingFolder(document: Record<string, unknown>): Record<string, unknown> {
  const defaults = resolveConfig({}) as unknown as Record<string, unknown>;
  const defaultPolicy = Object.values(defaults.policies as Record<string, Record<string, unknown>>)[0];
  const { policies, ...rest } = document;
  const out = layered({ ...defaults, policies: {} }, rest);
  out.policies = Object.fromEntries(Object.entries(isPlainObject(policies) ? policies : {}).map(([id, p]) => [id, layered({ optimizer: defaultPolicy.optimizer }, isPlainObject(p) ? p : {})]));
  return out;
}

/** A model folder that could not be inspected at all (its inspection was stopped). */
function failedInspection(folder: string, message: string): ModelInspection {
  return { path: path.resolve(folder), supported: false, problems: [message], architecture: null, modelType: null, parameters: null, context: null, shape: null, weights: null, tokenizer: null, linearModules: [] };
}

export function createStudioService({ store, databasePath, transport, runs, hub, offThread }: StudioServiceOptions): StudioApi {
  const exports = new Map<string, AbortController>();
  let ownThread: OffThread | null = null;
  const thread = (): OffThread => offThread ?? (ownThread ??= new OffThread());
  // Over the HTTP API (anyone holding the token) writes stay inside the Studio's folders; the
  // desktop app's dialog and the CLI write where their user says (issue #36).
  const writeRoots = transport === 'http' ? writableRoots(databasePath) : null;
  const outputPath = (given: string, field: string) => confinedOutput(given, field, writeRoots);
  let exportCounter = 0;
  const requireRun = (runId: number) => {
    const run = store.runs.get(runId);
    if (!run) throw new StudioError('not_found', `run ${runId} does not exist`);
    return run;
  };
  const controller = (): RunController => {
    if (!runs) throw new StudioError('conflict', 'this surface cannot launch runs (no run manager); use `marsrl run` or the desktop app');
    return runs;
  };

  const service: Omit<StudioApi, keyof ReturnType<typeof createCompareStudyApi>> = {
    async appInfo() {
      return { version: packageVersion(), databasePath, schemaVersion: store.schemaVersion, transport, exportsDir: exportsDir() };
    },

    async listRuns(query: ListRunsQuery = {}) {
      const page = store.runs.list(query);
      const items = page.items.map((run) => toRunSummary(store, run, query.configPaths));
      // A stale run is stored `running` but reads as interrupted (issue #17): a status filter keeps
      // only the runs that read as the status asked for (the page may then be short).
      return { items: query.status === undefined ? items : items.filter((r) => r.status === query.status), nextCursor: page.nextCursor };
    },

    async getRun(runId) {
      return toRunDetail(store, requireRun(runId));
    },

    async updateRun(runId, update) {
      requireRun(runId);
      store.db.transaction(() => {
        if (update.name !== undefined) store.db.prepare('UPDATE runs SET name = ? WHERE id = ?').run(update.name, runId);
        if (update.notes !== undefined) store.runs.setNotes(runId, update.notes);
        if (update.tags !== undefined) store.runs.setTags(runId, [...new Set(update.tags.map((t) => t.trim()).filter(Boolean))]);
      })();
      hub?.publish({ type: 'run-updated', runId });
      return toRunSummary(store, requireRun(runId));
    },

    async deleteRun(runId) {
      const run = requireRun(runId);
      if (run.status === 'running' || runs?.isActive(runId)) {
        throw new StudioError('conflict', `run ${runId} is still running; stop it before deleting it`);
      }
      store.runs.delete(runId);
      hub?.publish({ type: 'run-deleted', runId });
    },

    async listPresets() {
      return listPresets().map(({ name, description }) => ({ name, description }));
    },

    async getPreset(name) {
      const known = listPresets().map((p) => p.name);
      if (!known.includes(name)) throw new StudioError('not_found', `unknown preset "${name}"; known presets: ${known.join(', ')}`);
      const document = presetDocument(name);
      try {
        return resolveConfig(document, `preset ${name}`) as unknown as Record<string, unknown>;
      } catch (error) {
        // A preset for the user's own downloaded model (qwen-lora, issue #14) names no folder, so
        // it cannot resolve; the form opens it with the folder empty (and asks for it), every
        // other value as the preset and the defaults give it.
        if (!(error instanceof ConfigError) || !error.issues.every((i) => /^policies\.[^.]+\.model\.path$/.test(i.path))) throw error;
        return presetAwaitingFolder(document);
      }
    },

    async validateConfig(config) {
      // The form hears about a missing task file, or an API key variable this process does not
      // have or may not send (`marsrl config validate` refuses these too), before it offers to
      // start the run. Checked off this thread: the config names files to read.
      try {
        return await thread().run('validateConfig', config);
      } catch (error) {
        if (error instanceof OffThreadError) return { ok: false, issues: [{ path: '', message: error.message }] };
        throw error;
      }
    },

    async checkEndpoints(config) {
      let checked: ReturnType<typeof endpointPrechecksOp>;
      try {
        checked = await thread().run('endpointPrechecks', config);
      } catch (error) {
        if (error instanceof OffThreadError) return { ok: false, issues: [{ path: '', message: error.message }], endpoints: [] };
        throw error;
      }
      if ('invalid' in checked) return { ok: false, issues: checked.invalid, endpoints: [] };
      const { config: resolved, issues } = checked;
      if (!resolved.endpoints) return { ok: issues.length === 0, issues, endpoints: [] };
      // Unlike the CLI, which stops at the first kind of problem, every endpoint is probed even
      // when another's key variable is missing, so the form can place every finding at once. An
      // endpoint without its key is reported once, at api_key_env (its probe stops at the key and
      // reads as unreachable, which probeIssues would place at base_url).
      const keyless = new Set(issues.filter((i) => i.path.startsWith('endpoints.')).map((i) => i.path.split('.')[1]));
      const pool = poolFromConfig(resolved);
      try {
        const reports = await pool.probe();
        issues.push(...probeIssues(reports.filter((r) => !keyless.has(r.endpoint))));
        return {
          ok: issues.length === 0,
          issues,
          endpoints: reports.map((r) => ({ endpoint: r.endpoint, reachable: r.reachable, models: [...r.models], modelServed: r.modelServed, missing: [...r.missing], notes: [...r.notes], error: r.error })),
        };
      } finally {
        pool.close();
      }
    },

    async configSchema() {
      return { ...configSchemaInfo(), endpointFields: endpointFields(), promptVariables: Object.fromEntries(Object.entries(PROMPT_VARIABLES).map(([role, names]) => [role, [...names]])) };
    },

    async inspectModel(folder) {
      // Off this thread, under a time and memory limit: the folder's files and chat template are
      // whatever its author wrote (a template that allocated without end killed `marsrl serve`).
      try {
        return await thread().run('inspectModel', folder);
      } catch (error) {
        if (error instanceof OffThreadError) return failedInspection(folder, error.message);
        throw error;
      }
    },

    async startRun(request) {
      return controller().start(request);
    },

    async stopRun(runId) {
      requireRun(runId);
      return controller().stop(runId);
    },

    async resumeRun(runId) {
      requireRun(runId);
      return controller().resume(runId);
    },

    async runAgain(runId) {
      return controller().start(runAgainRequest(requireRun(runId)));
    },

    async explainAdvantage(turnId) {
      const group = store.diagnostics.advantageGroup(turnId);
      if (!group) throw new StudioError('not_found', `turn ${turnId} does not exist or has no advantage (a held-out turn is not trained on)`);
      const run = requireRun(store.trajectories.getTurn(turnId)!.runId);
      return explainAdvantage(group, advantageOptionsOf(run.config));
    },

    async listMetricKeys(runId) {
      requireRun(runId);
      return store.metrics.keys(runId);
    },

    async getSeries(query: SeriesQuery) {
      requireRun(query.runId);
      const maxPoints = Math.min(query.maxPoints ?? 1000, MAX_SERIES_POINTS);
      const method = query.downsample ?? 'lttb';
      return query.keys.map((key) => {
        const page = store.metrics.series(query.runId, key, -Infinity, 1_000_000);
        const full: Point[] = page.items.map((p) => [query.xAxis === 'wall' ? p.wallTime : p.step, p.value]);
        const points = method === 'none' || full.length <= maxPoints ? full : method === 'minmax' ? minMax(full, maxPoints) : lttb(full, maxPoints);
        return { key, points, totalPoints: full.length };
      });
    },

    async listTurns(query: TurnQuery) {
      requireRun(query.runId);
      return store.trajectories.pageTurns(query);
    },

    async listEpisodes(query: EpisodeQuery) {
      requireRun(query.runId);
      const page = store.trajectories.pageEpisodes(query);
      return { items: page.items.map(toEpisodeSummary), nextCursor: page.nextCursor };
    },

    async getEpisode(episodeId, match) {
      const episode = store.trajectories.getEpisode(episodeId);
      if (!episode) throw new StudioError('not_found', `episode ${episodeId} does not exist`);
      const problem = episode.problemId === null ? null : store.trajectories.getProblem(episode.problemId);
      const turns = store.trajectories.episodeTurns(episodeId).map((turn) => ({
        ...turn,
        segments: store.trajectories.segments(turn.id).map(({ id: _id, turnId: _turn, runId: _run, ...segment }) => segment),
      }));
      return {
        episode: toEpisodeSummary({ ...episode, question: problem?.question ?? null, reference: problem?.answer ?? null, turnCount: turns.length }),
        turns,
        notation: familyNotation(problem?.family ?? '').map((n) => ({ ...n, roles: [...n.roles] })),
        matchedTurnIds: match ? store.diagnostics.matchingTurns(episodeId, match) : [],
      };
    },

    async listEvents(runId, afterId = 0) {
      requireRun(runId);
      return store.events.events(runId, afterId, 500);
    },

    async getTimeline(runId) {
      requireRun(runId);
      return store.events.timeline(runId).map(({ id: _id, runId: _run, ...span }) => span);
    },

    async startExport(request) {
      // Loaded on first use: the Parquet writer is not needed to browse runs.
      const { runExport, ExportError } = await import('../engine/export');
      for (const id of request.runs) requireRun(id);
      // A relative path means the exports folder, never this process's working directory; the
      // folder itself is the app's and is made on first use (a folder the user names must exist).
      const out = outputPath(request.out, 'out');
      if (out !== request.out) fs.mkdirSync(exportsDir(), { recursive: true });
      request = { ...request, out };
      const exportId = `export-${++exportCounter}`;
      const controller = new AbortController();
      exports.set(exportId, controller);
      let lastPush = 0;
      const running = runExport(store, { ...request, runs: request.runs }, {
        signal: controller.signal,
        onProgress: (done, total) => {
          // Progress is pushed at most ten times a second; the last one always goes out.
          if (Date.now() - lastPush > 100 || done === total) {
            lastPush = Date.now();
            hub?.publish({ type: 'export-progress', exportId, done, total });
          }
        },
      });
      // Usage errors (unknown agent, existing file, empty result) are answered to the caller at
      // once when they are found before any row is written.
      const early = await Promise.race([running.then(() => null, (error: unknown) => error), new Promise((resolve) => setTimeout(() => resolve(null), 50))]);
      if (early instanceof ExportError) {
        exports.delete(exportId);
        const message = inFormWords(early.message);
        throw new StudioError('invalid_request', message, early.field ? [{ path: early.field, message }] : undefined);
      }
      running.then(
        (result) => hub?.publish({ type: 'export-finished', exportId, status: 'done', error: null, result: { out: result.out, card: result.card, rows: result.rows, bytes: result.bytes, seconds: result.seconds, duplicatesDropped: result.duplicatesDropped } }),
        (error: unknown) =>
          hub?.publish({ type: 'export-finished', exportId, status: controller.signal.aborted ? 'cancelled' : 'failed', result: null, error: inFormWords(error instanceof Error ? error.message : String(error)) }),
      ).finally(() => exports.delete(exportId));
      return { exportId, out: path.resolve(out) };
    },

    async exportModel(request) {
      // Loaded on first use, like the dataset export: the model writers are not needed to browse.
      const { exportPolicyModel, PolicyExportError } = await import('../engine/hf/run-export');
      const { OutputExistsError } = await import('../engine/hf/export');
      requireRun(request.runId);
      // A relative folder is under the exports folder, as a dataset export's file is.
      const out = outputPath(request.out, 'out');
      if (out !== request.out) fs.mkdirSync(exportsDir(), { recursive: true });
      const started = Date.now();
      try {
        const result = await exportPolicyModel({
          source: { runId: request.runId, store },
          format: request.format,
          out,
          ...(request.policy !== undefined ? { policy: request.policy } : {}),
          ...(request.step !== undefined ? { step: request.step } : {}),
          ...(request.dtype !== undefined ? { dtype: request.dtype } : {}),
          force: request.force === true,
        });
        return { format: result.format, out: result.out, written: [...result.written], checkpoint: result.checkpoint, policy: result.policy, step: result.step, lora: result.lora, seconds: (Date.now() - started) / 1000 };
      } catch (error) {
        // What the engine refuses (peft of full weights, a pruned step, an existing folder) goes
        // back on the dialog's field, in the form's words.
        const field = error instanceof PolicyExportError ? (error.field === 'source' ? 'runId' : error.field) : error instanceof OutputExistsError ? 'out' : null;
        if (field === null) throw error;
        const message = inFormWords((error as Error).message).replace(/ with --policy ID/g, ' in Policy').replace(/--step N?/g, 'Step').replace(/choose another --out or pass --force to replace it/g, 'choose another folder or tick "Replace an existing folder"');
        throw new StudioError('invalid_request', message, [{ path: field, message }]);
      }
    },

    async cancelExport(exportId) {
      const controller = exports.get(exportId);
      if (!controller) throw new StudioError('not_found', `no export ${exportId} is running`);
      controller.abort('cancelled by the user');
    },

  };
  const studies = createCompareStudyApi({ store, runs, hub });
  return {
    ...service,
    ...studies,
    async exportStudyReport(studyId, out) {
      // The same rule as the other exports: a relative folder is under the exports folder, and
      // over HTTP the folder must be inside the Studio's folders.
      return studies.exportStudyReport(studyId, outputPath(out, 'out'));
    },
  };
}

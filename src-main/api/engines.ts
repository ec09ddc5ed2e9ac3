/**
 * The StudioApi's engine area (issue 38): the Ray jobs of a run that veRL or DrMAS trains, with
 * the end of each job's log and its traceback, for the run page; and the command an engine run
 * config would submit, for the new-run form, with every setting the engine would refuse placed
 * on its field.
 *
 * The preview runs nothing: it plans against `engine.version` when given, or else against the
 * newest engine release the Studio knows, and says so. The launch itself asks the engine's
 * interpreter what it has (engine-run.ts), so a version mismatch is caught there, by field.
 */
import path from 'node:path';
import type { EngineJobInfo, EnginePreview, StudioApi } from '#shared/contract';
import { checkRunConfig } from '../engine/config/load';
import { rayEngineOf } from '../engine/engines/run-config';
import { storeTagOf } from '../engine/engines/attempt';
import { jobLogFile, readLogTail } from '../engine/engines/job-log';
import { EnginePlanError, type EngineProbe } from '../engine/engines/types';
import { runDir } from '../engine/paths';
import type { EngineJobRow } from '../engine/store';
import type { ServiceContext } from './context';

type EnginesApi = Pick<StudioApi, 'getEngineJobs' | 'previewEngineRun'>;

/** The newest veRL release whose configuration keys the Studio checks overrides against (resources/engines/verl). */
const NEWEST_KNOWN_VERL = '0.9.0';
const DEFAULT_LOG_LINES = 200;
/** Where the preview's DrMAS command `cd`s when engine.working_dir is not given: the launch puts the checkout it finds there. */
const DRMAS_CHECKOUT_PLACEHOLDER = '/DRMAS-CHECKOUT-OF-ENGINE-PYTHON';

/**
 * Loaded on first use: the engines' planners bring the Ray client (WebSocket) and the Parquet
 * writer of their datasets, which listing runs and reading job logs do not need.
 */
async function planners() {
  const [{ DRMAS_VERSION }, { getEngine }] = await Promise.all([import('../engine/engines/drmas/plan'), import('../engine/engines/registry')]);
  return { DRMAS_VERSION, getEngine };
}

export function createEnginesApi({ store, databasePath, requireRun }: ServiceContext): EnginesApi {
  return {
    async getEngineJobs(runId, logLines = DEFAULT_LOG_LINES) {
      requireRun(runId);
      const traceback = store.engineJobs.lastTraceback(runId)?.text ?? null;
      const jobs = store.engineJobs.list(runId);
      return jobs.map((job, i) => jobInfo(job, logLines, i === jobs.length - 1 ? traceback : null));
    },

    async previewEngineRun(doc) {
      const { DRMAS_VERSION, getEngine } = await planners();
      const checked = checkRunConfig(doc);
      if (!checked.ok) return { ok: false, issues: checked.issues };
      const engine = rayEngineOf(checked.config);
      if (!engine) return { ok: false, issues: [{ path: 'engine.kind', message: 'set engine.kind to verl or drmas to train on Ray; the Studio\'s own trainer submits no command' }] };
      const versionFrom: 'engine.version' | 'assumed' = engine.version !== undefined ? 'engine.version' : 'assumed';
      const version = engine.version ?? (engine.kind === 'drmas' ? DRMAS_VERSION : NEWEST_KNOWN_VERL);
      const nextRun = store.runs.list({ limit: 1 }).items[0]?.id ?? 0;
      try {
        const plan = getEngine(engine.kind).plan(checked.config, engine, {
          runId: nextRun + 1,
          runName: checked.config.name ?? `run ${nextRun + 1}`,
          attempt: 1,
          storeTag: storeTagOf(databasePath),
          defaultRunRoot: path.dirname(runDir(databasePath, nextRun + 1)),
          // DrMAS's checkout is what engine.python has installed (editable), found by the launch's probe; named so in the preview.
          probe: assumedProbe(engine.python, engine.kind, version, engine.working_dir ?? (engine.kind === 'drmas' ? DRMAS_CHECKOUT_PLACEHOLDER : null), engine.tensorboard ?? engine.kind === 'drmas'),
        });
        const preview: EnginePreview = { ok: true, engine: plan.kind, engineVersion: plan.engineVersion, versionFrom, entrypoint: plan.entrypoint, overrides: plan.overrides, env: plan.runtimeEnv.env_vars, warnings: plan.warnings };
        return preview;
      } catch (error) {
        if (error instanceof EnginePlanError) return { ok: false, issues: error.issues };
        throw error;
      }
    },
  };
}

/** What the preview assumes the engine's interpreter has (the launch asks it for real). */
function assumedProbe(python: string, kind: string, version: string, drmasRoot: string | null, tensorboard: boolean): EngineProbe {
  return { python, verl: version, drmas: kind === 'drmas', drmasRoot, ray: null, torch: null, vllm: null, sglang: null, tensorboard: tensorboard ? 'assumed' : null };
}

function jobInfo(job: EngineJobRow, logLines: number, traceback: string | null): EngineJobInfo {
  return {
    attempt: job.attempt,
    engine: job.engine,
    submissionId: job.submissionId,
    address: job.address,
    status: job.status,
    message: job.message,
    entrypoint: job.entrypoint,
    runDir: job.localRunDir,
    submittedAt: job.submittedAt,
    updatedAt: job.updatedAt,
    logTail: logLines === 0 ? '' : readLogTail(jobLogFile(job.localRunDir, job.attempt), logLines).text,
    traceback,
  };
}

/**
 * The StudioApi's model area: a model folder inspected before a run uses it (off this thread), and
 * a run's trained policy exported as a model folder (issue #14).
 */
import type { ModelInspection, StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import path from 'node:path';
import type { ServiceContext } from './context';
import { exportOutput, inFormWords } from './exports';
import { OffThreadError } from './off-thread';

type ModelsApi = Pick<StudioApi, 'inspectModel' | 'exportModel'>;

export function createModelsApi(context: ServiceContext): ModelsApi {
  const { store, thread, requireRun } = context;
  return {
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

    async exportModel(request) {
      // Loaded on first use, like the dataset export: the model writers are not needed to browse.
      const { exportPolicyModel, PolicyExportError } = await import('../engine/checkpoint/run-export');
      const { OutputExistsError } = await import('../engine/hf/export');
      requireRun(request.runId);
      // A relative folder is under the exports folder, as a dataset export's file is.
      const out = exportOutput(context, request.out);
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
  };
}

/** A model folder that could not be inspected at all (its inspection was stopped). */
function failedInspection(folder: string, message: string): ModelInspection {
  return { path: path.resolve(folder), supported: false, problems: [message], architecture: null, modelType: null, parameters: null, context: null, shape: null, weights: null, tokenizer: null, linearModules: [] };
}

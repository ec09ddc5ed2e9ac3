/**
 * The StudioApi's configuration area: what the Studio is (appInfo), the presets, the config
 * schema the form is drawn from, and checking a config before a run starts.
 */
import type { StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { PROMPT_VARIABLES } from '../engine/agents/prompts';
import { configSchemaInfo, endpointFields } from '../engine/config/fields';
import { ConfigError, listPresets, presetDocument } from '../engine/config/load';
import { resolveConfig } from '../engine/preflight';
import { exportsDir } from '../engine/paths';
import { packageVersion } from '../engine/version';
import type { ServiceContext } from './context';
import { OffThreadError } from './off-thread';

type ConfigsApi = Pick<StudioApi, 'appInfo' | 'listPresets' | 'getPreset' | 'validateConfig' | 'configSchema'>;

export function createConfigsApi({ store, databasePath, transport, thread }: ServiceContext): ConfigsApi {
  return {
    async appInfo() {
      return { version: packageVersion(), databasePath, schemaVersion: store.schemaVersion, transport, exportsDir: exportsDir() };
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

    async configSchema() {
      return { ...configSchemaInfo(), endpointFields: endpointFields(), promptVariables: Object.fromEntries(Object.entries(PROMPT_VARIABLES).map(([role, names]) => [role, [...names]])) };
    },
  };
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

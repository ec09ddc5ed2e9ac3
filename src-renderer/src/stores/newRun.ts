/**
 * The new-run form: a configuration document started from a preset (or another run's settings),
 * edited field by field, validated as it changes by the same schema the CLI uses, and launched.
 *
 * Read top to bottom: the pure pieces (drafts dropped, a model block fitted to its kind, a new
 * endpoint), the form's state, then each concern over it (validation, adding a named entry,
 * loading, field edits, policies, endpoints, launching) and the store composing them.
 */
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';
import type { ConfigField, ConfigFormInfo, ConfigIssue, EndpointCheckResult, EnginePreview, PresetInfo } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { changedPaths, getPath, policyDefaults, setPath, textOfValue, valueFromText, type ConfigDoc } from '../util/configDoc';
import { isRayEngine, mergedIssues, type EngineKind } from '../util/engineForm';
import { messagesByPath } from './common/issues';

const VALIDATE_DEBOUNCE_MS = 150;

/** A plain copy of the (reactive) document: configs are JSON by definition, and IPC needs plain objects. */
function plain(doc: unknown): ConfigDoc {
  return JSON.parse(JSON.stringify(doc)) as ConfigDoc;
}
export const DEFAULT_PRESET = 'quick';

/** The drafts typed under `prefix` dropped, except those `keep` says still have a field. */
function draftsWithout(drafts: Record<string, string>, prefix: string, keep: (rest: string) => boolean = () => false): Record<string, string> {
  return Object.fromEntries(Object.entries(drafts).filter(([path]) => !path.startsWith(prefix) || keep(path.slice(prefix.length))));
}

const MODEL_FIELD = 'policies.*.model.';

/**
 * A policy's model block fitted to its kind (issue #13): the keys that kind has kept, the other
 * kind's dropped (a GPT's sizes are unknown keys in a Hugging Face block and the reverse), the
 * kind's defaults filled; with the top-level keys allowed, for the drafts to keep.
 */
function fittedModel(model: Record<string, unknown>, fields: readonly ConfigField[], kind: string): { next: Record<string, unknown>; allowed: Set<string> } {
  const ofKind = fields.filter((f) => f.path.startsWith(MODEL_FIELD) && (f.whenKind === undefined || f.whenKind === kind));
  // Keys of the block itself: a nested block (an hf model's `lora`) is kept whole.
  const allowed = new Set(ofKind.map((f) => f.path.slice(MODEL_FIELD.length).split('.')[0]));
  const next: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(model)) if (allowed.has(key)) next[key] = value;
  for (const f of ofKind) {
    const key = f.path.slice(MODEL_FIELD.length);
    if (!key.includes('.') && next[key] === undefined && f.default !== undefined && key !== 'kind') next[key] = structuredClone(f.default);
  }
  // A GPT block may leave `kind` out (it is the default); an hf block must say it.
  if (kind !== 'gpt' || model.kind !== undefined) next.kind = kind;
  return { next, allowed };
}

/** Served endpoints (issue #16): a new one starts at vLLM's default address, its model to fill in. */
function newEndpoint(endpointFields: readonly ConfigField[]): ConfigDoc {
  const endpoint: ConfigDoc = { base_url: 'http://127.0.0.1:8000/v1', model: '' };
  // The schema's defaults shown as values (concurrency 8, timeout 120 s, 3 retries), as a preset's are.
  for (const field of endpointFields) {
    const key = field.path.slice('endpoints.*.'.length);
    if (!key.includes('.') && field.default !== undefined) endpoint[key] = structuredClone(field.default);
  }
  return endpoint;
}

function newRunState() {
  return {
    schema: shallowRef<ConfigFormInfo | null>(null),
    presets: shallowRef<readonly PresetInfo[]>([]),
    preset: ref<string | null>(null),
    /** Where the document came from, for the header (a preset, or "run 12"). */
    origin: ref<string>(''),
    base: shallowRef<ConfigDoc>({}),
    doc: ref<ConfigDoc>({}),
    /** What the user typed, per path, while it is not a number yet. */
    drafts: ref<Record<string, string>>({}),
    issues: shallowRef<readonly ConfigIssue[]>([]),
    validated: ref(false),
    loading: ref(false),
    launching: ref(false),
    error: ref<string | null>(null),
    /** The last "Check endpoints" answer; any edit makes it stale, so it is cleared. */
    endpointCheck: shallowRef<EndpointCheckResult | null>(null),
    checkingEndpoints: ref(false),
    /**
     * What a veRL or DrMAS document would submit to Ray (issue 38), read with each validation;
     * null for the Studio's own trainer. Its refusals are among `issues`, each at its field.
     */
    enginePreview: shallowRef<EnginePreview | null>(null),
    /** Why the preview could not be read (the form still validates without it). */
    previewError: ref<string | null>(null),
  };
}
type NewRunState = ReturnType<typeof newRunState>;

/** The command an engine document would submit, or why it could not be read (never thrown: the form validates regardless). */
async function previewOf(doc: ConfigDoc): Promise<{ preview: EnginePreview | null; error: string | null }> {
  if (!isRayEngine(doc)) return { preview: null, error: null };
  try {
    return { preview: await studioClient().previewEngineRun(doc), error: null };
  } catch (caught) {
    return { preview: null, error: errorMessage(caught) };
  }
}

/**
 * The schema's judgement of the document, and for a veRL or DrMAS run the engine's too (the
 * command it would submit, or each setting it refuses, by field): soon after each edit, now
 * before a launch.
 */
function validation(s: NewRunState) {
  let generation = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;

  async function validateNow(): Promise<boolean> {
    const mine = ++generation;
    const doc = plain(s.doc.value);
    const [result, engine] = await Promise.all([studioClient().validateConfig(doc), previewOf(doc)]);
    if (mine !== generation) return s.issues.value.length === 0;
    s.enginePreview.value = engine.preview;
    s.previewError.value = engine.error;
    s.issues.value = mergedIssues(result.ok ? [] : result.issues, engine.preview);
    s.validated.value = true;
    return s.issues.value.length === 0;
  }

  function validateSoon(): void {
    s.endpointCheck.value = null;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void validateNow().catch((caught) => (s.error.value = errorMessage(caught)));
    }, VALIDATE_DEBOUNCE_MS);
  }

  /** Drops a validation waiting to start and the answer of one still out (a check or a launch judges the document now). */
  function hold(): void {
    if (timer) clearTimeout(timer);
    timer = null;
    ++generation;
  }

  return { validateNow, validateSoon, hold };
}
type Validation = ReturnType<typeof validation>;

/** A block of named entries in the document, as its messages name them. */
interface NamedBlock {
  block: 'policies' | 'endpoints';
  /** "policy ids", "endpoint names" */
  names: string;
  /** "policy", "endpoint" */
  noun: string;
}

/** Adds the entry `name` to a block (a policy, an endpoint) with `value()`, or says why the name cannot name one. */
function addNamed(s: NewRunState, v: Validation, at: NamedBlock, name: string, value: () => unknown): string | null {
  const trimmed = name.trim();
  if (!/^[a-z][a-z0-9_-]*$/.test(trimmed)) return `${at.names} are lower-case words (letters, digits, - and _)`;
  if (Object.keys((s.doc.value[at.block] as Record<string, unknown> | undefined) ?? {}).includes(trimmed)) return `${at.noun} "${trimmed}" already exists`;
  setPath(s.doc.value, `${at.block}.${trimmed}`, value());
  v.validateSoon();
  return null;
}

/** Where the document starts: a preset (the default one unless asked), or another run's settings. */
function documentSource(s: NewRunState, v: Validation) {
  async function ensureSchema(): Promise<void> {
    if (s.schema.value) return;
    const [info, list] = await Promise.all([studioClient().configSchema(), studioClient().listPresets()]);
    s.schema.value = info;
    s.presets.value = list;
  }

  function reset(next: ConfigDoc): void {
    s.endpointCheck.value = null;
    s.enginePreview.value = null;
    s.previewError.value = null;
    s.base.value = plain(next);
    s.doc.value = plain(next);
    s.drafts.value = {};
    s.issues.value = [];
    s.validated.value = false;
    void v.validateNow();
  }

  async function load(from: { preset: string | null; runId: number | null }): Promise<void> {
    s.loading.value = true;
    s.error.value = null;
    try {
      await ensureSchema();
      if (from.runId !== null) {
        const run = await studioClient().getRun(from.runId);
        const config = plain(run.config);
        delete config.name;
        s.preset.value = run.preset;
        s.origin.value = `run ${run.id} (${run.name})`;
        reset(config);
      } else {
        const name = from.preset ?? DEFAULT_PRESET;
        const known = s.presets.value.some((p) => p.name === name) ? name : (s.presets.value[0]?.name ?? name);
        const config = (await studioClient().getPreset(known)) as ConfigDoc;
        s.preset.value = known;
        s.origin.value = `preset ${known}`;
        reset(config);
      }
    } catch (caught) {
      s.error.value = errorMessage(caught);
    } finally {
      s.loading.value = false;
    }
  }

  return { load };
}

/**
 * Blocks the schema takes whole or not at all (their fields are required inside an optional
 * block): emptied field by field, the block itself is left out.
 */
const WHOLE_BLOCKS = ['engine.dataset'];

function pruneEmptied(doc: ConfigDoc, path: string): void {
  for (const block of WHOLE_BLOCKS) {
    if (!path.startsWith(`${block}.`)) continue;
    const value = getPath(doc, block);
    if (value !== null && typeof value === 'object' && Object.values(value).every((v) => v === undefined || v === '')) setPath(doc, block, undefined);
  }
}

/** Field by field: what a field shows (the draft typed, else the value) and what an edit writes. */
function fieldEdits(s: NewRunState, v: Validation) {
  function valueAt(path: string): unknown {
    return getPath(s.doc.value, path);
  }
  function textAt(path: string): string {
    return s.drafts.value[path] ?? textOfValue(getPath(s.doc.value, path));
  }

  function setText(field: ConfigField, path: string, text: string): void {
    const value = valueFromText(field, text);
    if (typeof value === 'number' || value === undefined) {
      const next = { ...s.drafts.value };
      delete next[path];
      s.drafts.value = next;
    } else {
      s.drafts.value = { ...s.drafts.value, [path]: text };
    }
    setPath(s.doc.value, path, value);
    pruneEmptied(s.doc.value, path);
    v.validateSoon();
  }

  /** A list of strings typed one per line (the text is kept as typed while it is edited). */
  function setList(field: ConfigField, path: string, text: string): void {
    s.drafts.value = { ...s.drafts.value, [path]: text };
    const items = text.split('\n').map((line) => line.trim()).filter(Boolean);
    setPath(s.doc.value, path, items.length === 0 && field.optional ? undefined : items);
    v.validateSoon();
  }

  function setValue(path: string, value: unknown): void {
    setPath(s.doc.value, path, value);
    v.validateSoon();
  }

  /**
   * Who trains the run (issue 38): the Studio's own trainer leaves the engine block out (its
   * absence means the Studio); veRL drops what only DrMAS reads (its checkout, its orchestra).
   */
  function setEngineKind(kind: EngineKind): void {
    if (kind === 'studio') {
      delete s.doc.value.engine;
      s.drafts.value = draftsWithout(s.drafts.value, 'engine.');
    } else {
      setPath(s.doc.value, 'engine.kind', kind);
      if (kind === 'verl') {
        setPath(s.doc.value, 'engine.working_dir', undefined);
        setPath(s.doc.value, 'engine.drmas', undefined);
        s.drafts.value = draftsWithout(s.drafts.value, 'engine.working_dir');
      }
    }
    v.validateSoon();
  }

  return { valueAt, textAt, setText, setList, setValue, setEngineKind };
}

/** The policies block: adding one with the schema's defaults, fitting its model to a kind, removing it. */
function policyEdits(s: NewRunState, v: Validation) {
  const policyIds = computed(() => Object.keys((s.doc.value.policies as Record<string, unknown> | undefined) ?? {}));
  const policyFields = computed(() => s.schema.value?.fields.filter((f) => f.path.startsWith('policies.*.')) ?? []);

  function addPolicy(id: string): string | null {
    return addNamed(s, v, { block: 'policies', names: 'policy ids', noun: 'policy' }, id, () => policyDefaults(s.schema.value?.fields ?? []));
  }

  /** Make a policy's model block fit its kind; a block that already fits is not touched (no validation, no "changed"). */
  function fitModelToKind(id: string, kind: string): void {
    const at = `policies.${id}.model`;
    const current = getPath(s.doc.value, at);
    if (current !== undefined && (current === null || typeof current !== 'object' || Array.isArray(current))) return;
    const model = { ...((current as Record<string, unknown> | undefined) ?? {}) };
    const { next, allowed } = fittedModel(model, s.schema.value?.fields ?? [], kind);
    if (JSON.stringify(next) === JSON.stringify(model)) return;
    setPath(s.doc.value, at, next);
    s.drafts.value = draftsWithout(s.drafts.value, `${at}.`, (rest) => allowed.has(rest.split('.')[0]));
    v.validateSoon();
  }

  function removePolicy(id: string): void {
    const policies = { ...((s.doc.value.policies as Record<string, unknown>) ?? {}) };
    delete policies[id];
    s.doc.value.policies = policies;
    s.drafts.value = draftsWithout(s.drafts.value, `policies.${id}.`);
    v.validateSoon();
  }

  return { policyIds, policyFields, addPolicy, fitModelToKind, removePolicy };
}

/** The served endpoints block (issue #16), and asking each endpoint what it serves. */
function endpointEdits(s: NewRunState, v: Validation) {
  const endpointIds = computed(() => Object.keys((s.doc.value.endpoints as Record<string, unknown> | undefined) ?? {}));

  function addEndpoint(name: string): string | null {
    return addNamed(s, v, { block: 'endpoints', names: 'endpoint names', noun: 'endpoint' }, name, () => newEndpoint(s.schema.value?.endpointFields ?? []));
  }

  /** Removes an endpoint, and the whole block with the last one (an empty block says nothing). */
  function removeEndpoint(name: string): void {
    const endpoints = { ...((s.doc.value.endpoints as Record<string, unknown>) ?? {}) };
    delete endpoints[name];
    if (Object.keys(endpoints).length) s.doc.value.endpoints = endpoints;
    else delete s.doc.value.endpoints;
    s.drafts.value = draftsWithout(s.drafts.value, `endpoints.${name}.`);
    v.validateSoon();
  }

  /**
   * Runs `marsrl config validate --probe`'s checks (validation, API key variables, each endpoint
   * asked what it serves); the findings become the form's issues, each at its field, until the
   * next edit revalidates.
   */
  async function checkEndpoints(): Promise<EndpointCheckResult | null> {
    s.checkingEndpoints.value = true;
    s.error.value = null;
    try {
      v.hold();
      const result = await studioClient().checkEndpoints(plain(s.doc.value));
      s.issues.value = result.issues;
      s.validated.value = true;
      s.endpointCheck.value = result;
      return result;
    } catch (caught) {
      s.error.value = errorMessage(caught);
      return null;
    } finally {
      s.checkingEndpoints.value = false;
    }
  }

  return { endpointIds, addEndpoint, removeEndpoint, checkEndpoints };
}

/** The launch request for the document: a custom configuration unless it layers exactly over its preset. */
function startRequest(s: NewRunState, policyIds: readonly string[]) {
  const config = plain(s.doc.value);
  // The manager layers the document over the preset; a policy removed here would come back
  // from the preset, so such a document launches as a custom configuration.
  const basePolicies = Object.keys((s.base.value.policies as Record<string, unknown> | undefined) ?? {});
  const layersExactly = s.preset.value !== null && basePolicies.every((id) => policyIds.includes(id));
  const name = typeof config.name === 'string' && config.name.trim() ? config.name.trim() : undefined;
  return { config, ...(layersExactly ? { preset: s.preset.value as string } : {}), ...(name ? { name } : {}) };
}

/** Validates, then launches; returns the new run's id, or null when the form has problems. */
function launcher(s: NewRunState, v: Validation, policyIds: () => readonly string[]) {
  async function launch(): Promise<number | null> {
    s.launching.value = true;
    s.error.value = null;
    try {
      v.hold();
      if (!(await v.validateNow())) return null;
      const { runId } = await studioClient().startRun(startRequest(s, policyIds()));
      return runId;
    } catch (caught) {
      const withIssues = caught as { issues?: ConfigIssue[] };
      if (Array.isArray(withIssues.issues) && withIssues.issues.length) s.issues.value = withIssues.issues;
      s.error.value = errorMessage(caught);
      return null;
    } finally {
      s.launching.value = false;
    }
  }

  return { launch };
}

export const useNewRunStore = defineStore('newRun', () => {
  const s = newRunState();
  const v = validation(s);
  const source = documentSource(s, v);
  const fields = fieldEdits(s, v);
  const policies = policyEdits(s, v);
  const endpoints = endpointEdits(s, v);
  const { launch } = launcher(s, v, () => policies.policyIds.value);

  const issuesByPath = computed(() => messagesByPath(s.issues.value));
  const changed = computed(() => changedPaths(s.base.value, s.doc.value));

  return {
    schema: s.schema,
    presets: s.presets,
    preset: s.preset,
    origin: s.origin,
    doc: s.doc,
    drafts: s.drafts,
    issues: s.issues,
    issuesByPath,
    validated: s.validated,
    changed,
    policyIds: policies.policyIds,
    policyFields: policies.policyFields,
    endpointIds: endpoints.endpointIds,
    endpointCheck: s.endpointCheck,
    checkingEndpoints: s.checkingEndpoints,
    enginePreview: s.enginePreview,
    previewError: s.previewError,
    loading: s.loading,
    launching: s.launching,
    error: s.error,
    load: source.load,
    valueAt: fields.valueAt,
    textAt: fields.textAt,
    setText: fields.setText,
    setList: fields.setList,
    setValue: fields.setValue,
    setEngineKind: fields.setEngineKind,
    addPolicy: policies.addPolicy,
    fitModelToKind: policies.fitModelToKind,
    removePolicy: policies.removePolicy,
    addEndpoint: endpoints.addEndpoint,
    removeEndpoint: endpoints.removeEndpoint,
    checkEndpoints: endpoints.checkEndpoints,
    validateNow: v.validateNow,
    launch,
  };
});

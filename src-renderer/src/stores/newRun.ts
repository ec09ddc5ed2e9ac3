/**
 * The new-run form: a configuration document started from a preset (or another run's settings),
 * edited field by field, validated as it changes by the same schema the CLI uses, and launched.
 */
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';
import type { ConfigField, ConfigFormInfo, ConfigIssue, EndpointCheckResult, PresetInfo } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { changedPaths, getPath, policyDefaults, setPath, textOfValue, valueFromText, type ConfigDoc } from '../util/configDoc';

const VALIDATE_DEBOUNCE_MS = 150;

/** A plain copy of the (reactive) document: configs are JSON by definition, and IPC needs plain objects. */
function plain(doc: unknown): ConfigDoc {
  return JSON.parse(JSON.stringify(doc)) as ConfigDoc;
}
export const DEFAULT_PRESET = 'quick';

export const useNewRunStore = defineStore('newRun', () => {
  const schema = shallowRef<ConfigFormInfo | null>(null);
  const presets = shallowRef<readonly PresetInfo[]>([]);
  const preset = ref<string | null>(null);
  /** Where the document came from, for the header (a preset, or "run 12"). */
  const origin = ref<string>('');
  const base = shallowRef<ConfigDoc>({});
  const doc = ref<ConfigDoc>({});
  /** What the user typed, per path, while it is not a number yet. */
  const drafts = ref<Record<string, string>>({});
  const issues = shallowRef<readonly ConfigIssue[]>([]);
  const validated = ref(false);
  const loading = ref(false);
  const launching = ref(false);
  const error = ref<string | null>(null);

  const issuesByPath = computed(() => {
    const map = new Map<string, string[]>();
    for (const issue of issues.value) map.set(issue.path, [...(map.get(issue.path) ?? []), issue.message]);
    return map;
  });
  const changed = computed(() => changedPaths(base.value, doc.value));
  const policyIds = computed(() => Object.keys((doc.value.policies as Record<string, unknown> | undefined) ?? {}));
  const policyFields = computed(() => schema.value?.fields.filter((f) => f.path.startsWith('policies.*.')) ?? []);
  const endpointIds = computed(() => Object.keys((doc.value.endpoints as Record<string, unknown> | undefined) ?? {}));
  /** The last "Check endpoints" answer; any edit makes it stale, so it is cleared. */
  const endpointCheck = shallowRef<EndpointCheckResult | null>(null);
  const checkingEndpoints = ref(false);

  async function ensureSchema(): Promise<void> {
    if (schema.value) return;
    const [info, list] = await Promise.all([studioClient().configSchema(), studioClient().listPresets()]);
    schema.value = info;
    presets.value = list;
  }

  function reset(next: ConfigDoc): void {
    endpointCheck.value = null;
    base.value = plain(next);
    doc.value = plain(next);
    drafts.value = {};
    issues.value = [];
    validated.value = false;
    void validateNow();
  }

  async function load(from: { preset: string | null; runId: number | null }): Promise<void> {
    loading.value = true;
    error.value = null;
    try {
      await ensureSchema();
      if (from.runId !== null) {
        const run = await studioClient().getRun(from.runId);
        const config = plain(run.config);
        delete config.name;
        preset.value = run.preset;
        origin.value = `run ${run.id} (${run.name})`;
        reset(config);
      } else {
        const name = from.preset ?? DEFAULT_PRESET;
        const known = presets.value.some((p) => p.name === name) ? name : (presets.value[0]?.name ?? name);
        const config = (await studioClient().getPreset(known)) as ConfigDoc;
        preset.value = known;
        origin.value = `preset ${known}`;
        reset(config);
      }
    } catch (caught) {
      error.value = errorMessage(caught);
    } finally {
      loading.value = false;
    }
  }

  let validation = 0;
  async function validateNow(): Promise<boolean> {
    const mine = ++validation;
    const result = await studioClient().validateConfig(plain(doc.value));
    if (mine !== validation) return issues.value.length === 0;
    issues.value = result.ok ? [] : result.issues;
    validated.value = true;
    return result.ok;
  }
  let timer: ReturnType<typeof setTimeout> | null = null;
  function validateSoon(): void {
    endpointCheck.value = null;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void validateNow().catch((caught) => (error.value = errorMessage(caught)));
    }, VALIDATE_DEBOUNCE_MS);
  }

  function valueAt(path: string): unknown {
    return getPath(doc.value, path);
  }
  function textAt(path: string): string {
    return drafts.value[path] ?? textOfValue(getPath(doc.value, path));
  }

  function setText(field: ConfigField, path: string, text: string): void {
    const value = valueFromText(field, text);
    if (typeof value === 'number' || value === undefined) {
      const next = { ...drafts.value };
      delete next[path];
      drafts.value = next;
    } else {
      drafts.value = { ...drafts.value, [path]: text };
    }
    setPath(doc.value, path, value);
    validateSoon();
  }

  /** A list of strings typed one per line (the text is kept as typed while it is edited). */
  function setList(field: ConfigField, path: string, text: string): void {
    drafts.value = { ...drafts.value, [path]: text };
    const items = text.split('\n').map((line) => line.trim()).filter(Boolean);
    setPath(doc.value, path, items.length === 0 && field.optional ? undefined : items);
    validateSoon();
  }

  function setValue(path: string, value: unknown): void {
    setPath(doc.value, path, value);
    validateSoon();
  }

  function addPolicy(id: string): string | null {
    const trimmed = id.trim();
    if (!/^[a-z][a-z0-9_-]*$/.test(trimmed)) return 'policy ids are lower-case words (letters, digits, - and _)';
    if (policyIds.value.includes(trimmed)) return `policy "${trimmed}" already exists`;
    setPath(doc.value, `policies.${trimmed}`, policyDefaults(schema.value?.fields ?? []));
    validateSoon();
    return null;
  }

  /**
   * Make a policy's model block fit its kind (issue #13): keep the keys that kind has, drop the
   * other kind's (a GPT's sizes are unknown keys in a Hugging Face block and the reverse), and fill
   * the kind's defaults. A block that already fits is not touched (no validation, no "changed").
   */
  function fitModelToKind(id: string, kind: string): void {
    const at = `policies.${id}.model`;
    const current = getPath(doc.value, at);
    if (current !== undefined && (current === null || typeof current !== 'object' || Array.isArray(current))) return;
    const model = { ...((current as Record<string, unknown> | undefined) ?? {}) };
    const fields = (schema.value?.fields ?? []).filter((f) => f.path.startsWith('policies.*.model.') && (f.whenKind === undefined || f.whenKind === kind));
    // Keys of the block itself: a nested block (an hf model's `lora`) is kept whole.
    const allowed = new Set(fields.map((f) => f.path.slice('policies.*.model.'.length).split('.')[0]));
    const next: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(model)) if (allowed.has(key)) next[key] = value;
    for (const f of fields) {
      const key = f.path.slice('policies.*.model.'.length);
      if (!key.includes('.') && next[key] === undefined && f.default !== undefined && key !== 'kind') next[key] = structuredClone(f.default);
    }
    // A GPT block may leave `kind` out (it is the default); an hf block must say it.
    if (kind !== 'gpt' || model.kind !== undefined) next.kind = kind;
    if (JSON.stringify(next) === JSON.stringify(model)) return;
    setPath(doc.value, at, next);
    drafts.value = Object.fromEntries(Object.entries(drafts.value).filter(([path]) => !path.startsWith(`${at}.`) || allowed.has(path.slice(at.length + 1).split('.')[0])));
    validateSoon();
  }

  function removePolicy(id: string): void {
    const policies = { ...((doc.value.policies as Record<string, unknown>) ?? {}) };
    delete policies[id];
    doc.value.policies = policies;
    drafts.value = Object.fromEntries(Object.entries(drafts.value).filter(([path]) => !path.startsWith(`policies.${id}.`)));
    validateSoon();
  }

  /** Served endpoints (issue #16): a new one starts at vLLM's default address, its model to fill in. */
  function addEndpoint(name: string): string | null {
    const trimmed = name.trim();
    if (!/^[a-z][a-z0-9_-]*$/.test(trimmed)) return 'endpoint names are lower-case words (letters, digits, - and _)';
    if (endpointIds.value.includes(trimmed)) return `endpoint "${trimmed}" already exists`;
    const endpoint: ConfigDoc = { base_url: 'http://127.0.0.1:8000/v1', model: '' };
    // The schema's defaults shown as values (concurrency 8, timeout 120 s, 3 retries), as a preset's are.
    for (const field of schema.value?.endpointFields ?? []) {
      const key = field.path.slice('endpoints.*.'.length);
      if (!key.includes('.') && field.default !== undefined) endpoint[key] = structuredClone(field.default);
    }
    setPath(doc.value, `endpoints.${trimmed}`, endpoint);
    validateSoon();
    return null;
  }

  /** Removes an endpoint, and the whole block with the last one (an empty block says nothing). */
  function removeEndpoint(name: string): void {
    const endpoints = { ...((doc.value.endpoints as Record<string, unknown>) ?? {}) };
    delete endpoints[name];
    if (Object.keys(endpoints).length) doc.value.endpoints = endpoints;
    else delete doc.value.endpoints;
    drafts.value = Object.fromEntries(Object.entries(drafts.value).filter(([path]) => !path.startsWith(`endpoints.${name}.`)));
    validateSoon();
  }

  /**
   * Runs `marsrl config validate --probe`'s checks (validation, API key variables, each endpoint
   * asked what it serves); the findings become the form's issues, each at its field, until the
   * next edit revalidates.
   */
  async function checkEndpoints(): Promise<EndpointCheckResult | null> {
    checkingEndpoints.value = true;
    error.value = null;
    try {
      if (timer) clearTimeout(timer);
      timer = null;
      ++validation;
      const result = await studioClient().checkEndpoints(plain(doc.value));
      issues.value = result.issues;
      validated.value = true;
      endpointCheck.value = result;
      return result;
    } catch (caught) {
      error.value = errorMessage(caught);
      return null;
    } finally {
      checkingEndpoints.value = false;
    }
  }

  /** Validates, then launches; returns the new run's id, or null when the form has problems. */
  async function launch(): Promise<number | null> {
    launching.value = true;
    error.value = null;
    try {
      if (timer) clearTimeout(timer);
      timer = null;
      if (!(await validateNow())) return null;
      const config = plain(doc.value);
      // The manager layers the document over the preset; a policy removed here would come back
      // from the preset, so such a document launches as a custom configuration.
      const basePolicies = Object.keys((base.value.policies as Record<string, unknown> | undefined) ?? {});
      const layersExactly = preset.value !== null && basePolicies.every((id) => policyIds.value.includes(id));
      const name = typeof config.name === 'string' && config.name.trim() ? config.name.trim() : undefined;
      const { runId } = await studioClient().startRun({ config, ...(layersExactly ? { preset: preset.value as string } : {}), ...(name ? { name } : {}) });
      return runId;
    } catch (caught) {
      const withIssues = caught as { issues?: ConfigIssue[] };
      if (Array.isArray(withIssues.issues) && withIssues.issues.length) issues.value = withIssues.issues;
      error.value = errorMessage(caught);
      return null;
    } finally {
      launching.value = false;
    }
  }

  return {
    schema,
    presets,
    preset,
    origin,
    doc,
    drafts,
    issues,
    issuesByPath,
    validated,
    changed,
    policyIds,
    policyFields,
    endpointIds,
    endpointCheck,
    checkingEndpoints,
    loading,
    launching,
    error,
    load,
    valueAt,
    textAt,
    setText,
    setList,
    setValue,
    addPolicy,
    fitModelToKind,
    removePolicy,
    addEndpoint,
    removeEndpoint,
    checkEndpoints,
    validateNow,
    launch,
  };
});

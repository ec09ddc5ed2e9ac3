/**
 * The model export dialog (issue #14, "Adapters out"): a run's Hugging Face policy written out as
 * PEFT LoRA adapters or a merged Hugging Face folder, by `exportModel` (the engine's
 * exportPolicyModel, which `marsrl model export RUN` also calls). Opened from the run page and
 * from the dataset export dialog; one dialog for the window.
 */
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';
import type { ConfigIssue, ModelExportResult, RunDetail } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';

export type ModelExportFormat = 'peft' | 'hf';

/** A run's policies that are Hugging Face models (the ones with something to export), and whether each trains LoRA. */
export function hfPoliciesOf(config: Record<string, unknown>): { id: string; lora: boolean }[] {
  const policies = (config.policies as Record<string, { model?: { kind?: unknown; lora?: unknown }; endpoint?: unknown }> | undefined) ?? {};
  return Object.entries(policies)
    .filter(([, p]) => p?.model?.kind === 'hf' && p.endpoint === undefined)
    .map(([id, p]) => ({ id, lora: p.model?.lora !== undefined && p.model?.lora !== null }));
}

export const useModelExportStore = defineStore('modelExport', () => {
  const isOpen = ref(false);
  const run = shallowRef<{ id: number; name: string; policies: { id: string; lora: boolean }[] } | null>(null);
  const policy = ref('');
  const format = ref<ModelExportFormat>('peft');
  const out = ref('');
  /** Typed by the user (then a policy or format change no longer renames it). */
  const outEdited = ref(false);
  const step = ref('');
  const force = ref(false);
  const busy = ref(false);
  const issues = shallowRef<readonly ConfigIssue[]>([]);
  const error = ref<string | null>(null);
  const result = shallowRef<ModelExportResult | null>(null);

  function suggestOut(): void {
    if (!outEdited.value && run.value) out.value = `run-${run.value.id}-${policy.value}-${format.value === 'peft' ? 'adapters' : 'merged'}`;
  }

  /** Opens the dialog for a run; its LoRA policy and PEFT adapters are the default choice. */
  function open(detail: Pick<RunDetail, 'id' | 'name' | 'config'>): void {
    const policies = hfPoliciesOf(detail.config);
    run.value = { id: detail.id, name: detail.name, policies };
    const first = policies.find((p) => p.lora) ?? policies[0];
    policy.value = first?.id ?? '';
    format.value = first?.lora === false ? 'hf' : 'peft';
    outEdited.value = false;
    step.value = '';
    force.value = false;
    issues.value = [];
    error.value = null;
    result.value = null;
    suggestOut();
    isOpen.value = true;
  }
  function close(): void {
    isOpen.value = false;
  }
  function setPolicy(id: string): void {
    policy.value = id;
    // A full fine-tune has no adapters: only the merged folder applies.
    if (run.value?.policies.find((p) => p.id === id)?.lora === false) format.value = 'hf';
    suggestOut();
  }
  function setFormat(next: ModelExportFormat): void {
    format.value = next;
    suggestOut();
  }
  function setOut(text: string): void {
    out.value = text;
    outEdited.value = true;
  }

  async function start(): Promise<void> {
    if (!run.value || busy.value) return;
    busy.value = true;
    issues.value = [];
    error.value = null;
    result.value = null;
    try {
      const stepText = step.value.trim();
      if (stepText !== '' && !/^\d+$/.test(stepText)) {
        issues.value = [{ path: 'step', message: `the step is a whole number from 0, or empty for the newest checkpoint (got ${JSON.stringify(stepText)})` }];
        return;
      }
      result.value = await studioClient().exportModel({
        runId: run.value.id,
        format: format.value,
        out: out.value,
        ...(policy.value ? { policy: policy.value } : {}),
        ...(stepText !== '' ? { step: Number(stepText) } : {}),
        ...(force.value ? { force: true } : {}),
      });
    } catch (caught) {
      const withIssues = caught as { issues?: ConfigIssue[] };
      if (Array.isArray(withIssues.issues) && withIssues.issues.length) issues.value = withIssues.issues.map((i) => ({ ...i, path: i.path.replace(/^exportModel\.0\./, '') }));
      else error.value = errorMessage(caught);
    } finally {
      busy.value = false;
    }
  }

  return { isOpen, run, policy, format, out, outEdited, step, force, busy, issues, error, result, open, close, setPolicy, setFormat, setOut, start };
});

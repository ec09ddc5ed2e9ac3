/**
 * The run-config schema flattened into form fields, so the new-run form is generated from the
 * same schema the CLI validates with: labels, help text, defaults, bounds and choices never
 * drift from what validation enforces.
 */
import { z } from 'zod';
import type { ConfigField, ConfigSchemaInfo } from '#shared/contract';
import { EndpointSchema, RunConfigSchema } from './schema';

const GROUPS: { id: string; title: string; sections: string[] }[] = [
  { id: 'general', title: 'Run', sections: ['name', 'seed', 'runtime'] },
  { id: 'task', title: 'Task', sections: ['task'] },
  { id: 'agents', title: 'Agents and policies', sections: ['agents', 'policies'] },
  { id: 'rollouts', title: 'Rollouts', sections: ['rollout'] },
  { id: 'rewards', title: 'Rewards and advantages', sections: ['reward', 'advantage'] },
  { id: 'optimization', title: 'Optimization', sections: ['optimization', 'pretrain'] },
  { id: 'pipeline', title: 'Pipeline', sections: ['pipeline'] },
  { id: 'evaluation', title: 'Evaluation', sections: ['eval'] },
  { id: 'prompts', title: 'Prompts', sections: ['prompts'] },
];

interface JsonSchema {
  type?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  required?: string[];
  anyOf?: JsonSchema[];
  const?: unknown;
}

function groupOf(path: string): string {
  const top = path.split('.')[0];
  return GROUPS.find((g) => g.sections.includes(top))?.id ?? 'general';
}

function walk(schema: JsonSchema, path: string, required: boolean, out: ConfigField[]): void {
  // Served endpoints (issue #16) are records of records the generic form cannot lay out; the
  // new-run form has its own endpoints section, generated from endpointFields().
  if (path === 'endpoints') return;
  if (schema.anyOf && schema.anyOf.every((o) => o.type === 'object' && o.properties?.kind?.const !== undefined)) {
    walkKinds(schema.anyOf, path, out);
    return;
  }
  if (schema.type === 'object' && schema.properties) {
    for (const [key, child] of Object.entries(schema.properties)) {
      walk(child, path ? `${path}.${key}` : key, (schema.required ?? []).includes(key), out);
    }
    return;
  }
  if (schema.type === 'object' && typeof schema.additionalProperties === 'object') {
    // A record (policies by id): describe the record itself, then one policy's fields under `*`.
    out.push({ path, group: groupOf(path), kind: 'record', description: schema.description ?? '', default: schema.default });
    walk(schema.additionalProperties, `${path}.*`, true, out);
    return;
  }
  const field: ConfigField = {
    path,
    group: groupOf(path),
    kind: schema.enum ? 'enum' : schema.type === 'integer' ? 'integer' : schema.type === 'number' ? 'number' : schema.type === 'boolean' ? 'boolean' : 'string',
    description: schema.description ?? '',
  };
  if (schema.default !== undefined) field.default = schema.default;
  if (schema.enum) field.options = schema.enum.map(String);
  if (schema.minimum !== undefined) field.min = schema.minimum;
  if (schema.exclusiveMinimum !== undefined) {
    field.min = schema.exclusiveMinimum;
    field.minExclusive = true;
  }
  if (schema.maximum !== undefined) field.max = schema.maximum;
  if (schema.exclusiveMaximum !== undefined) {
    field.max = schema.exclusiveMaximum;
    field.maxExclusive = true;
  }
  if (!required && schema.default === undefined) field.optional = true;
  out.push(field);
}

/**
 * A union told apart by `kind` (a policy's model: gpt or hf): one `kind` choice (the first
 * branch's kind is the default), then each branch's own fields, marked with the kind they need.
 */
function walkKinds(branches: JsonSchema[], path: string, out: ConfigField[]): void {
  const kinds = branches.map((b) => String(b.properties!.kind.const));
  const kindPath = `${path}.kind`;
  out.push({ path: kindPath, group: groupOf(path), kind: 'enum', options: kinds, default: kinds[0], description: branches[0].properties!.kind.description ?? '' });
  branches.forEach((branch, i) => {
    const own: ConfigField[] = [];
    const { kind: _kind, ...rest } = branch.properties!;
    walk({ ...branch, properties: rest }, path, true, own);
    for (const field of own) out.push({ ...field, whenKind: kinds[i] });
  });
}

let cached: ConfigSchemaInfo | null = null;

export function configSchemaInfo(): ConfigSchemaInfo {
  if (cached) return cached;
  const json = z.toJSONSchema(RunConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const fields: ConfigField[] = [];
  walk(json, '', true, fields);
  cached = { fields, groups: GROUPS.map(({ id, title }) => ({ id, title })) };
  return cached;
}

/**
 * One served endpoint's fields (issue #16) under `endpoints.*.`, for the new-run form's own
 * endpoints section: the same labels, defaults and bounds the schema validates with.
 */
export function endpointFields(): ConfigField[] {
  const json = z.toJSONSchema(EndpointSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const fields: ConfigField[] = [];
  walk(json, 'endpoints.*', true, fields);
  return fields.map((f) => ({ ...f, group: 'endpoints' }));
}

/**
 * Column specifications: one list per format drives the Parquet schema, the JSONL field order and
 * the schema table of the dataset card, so the three cannot drift apart.
 *
 * Nested columns use the standard Parquet layouts that pyarrow, pandas, DuckDB, Spark and Hugging
 * Face `datasets` all read natively: chat messages are a 3-level LIST of STRUCT(role, content),
 * reward components a MAP(string → double), veRL's reward_model and extra_info are STRUCTs.
 */
import type { ParquetWriter } from 'hyparquet-writer';

export type SchemaElement = ConstructorParameters<typeof ParquetWriter>[0]['schema'][number];

export interface ColumnSpec {
  name: string;
  /** The column's Parquet schema elements: the column first, then its nested children in pre-order. */
  parquet: SchemaElement[];
  /** The type as the card shows it, in Arrow-like notation. */
  type: string;
  nullable: boolean;
  description: string;
  /** Values are JS numbers that Parquet stores as INT64 (converted to bigint when written). */
  int64?: boolean;
  /** For a struct: its fields stored as INT64, converted the same way. */
  int64Fields?: string[];
  /**
   * Min/max statistics in the Parquet footer (default on). Off for long free text: comparing every
   * prompt to find a 16-byte-truncated min/max costs a quarter of the encode time and lets no
   * reader skip anything.
   */
  statistics?: boolean;
}

const rep = (nullable: boolean) => (nullable ? 'OPTIONAL' : 'REQUIRED') as 'OPTIONAL' | 'REQUIRED';

export function str(name: string, nullable: boolean, description: string): ColumnSpec {
  return { name, parquet: [{ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: rep(nullable) }], type: 'string', nullable, description };
}

/** A string column of free text (prompts, responses): no footer statistics. */
export function text(name: string, nullable: boolean, description: string): ColumnSpec {
  return { ...str(name, nullable, description), statistics: false };
}

export function i64(name: string, nullable: boolean, description: string): ColumnSpec {
  return { name, parquet: [{ name, type: 'INT64', repetition_type: rep(nullable) }], type: 'int64', nullable, description, int64: true };
}

export function i32(name: string, nullable: boolean, description: string): ColumnSpec {
  return { name, parquet: [{ name, type: 'INT32', repetition_type: rep(nullable) }], type: 'int32', nullable, description };
}

export function f64(name: string, nullable: boolean, description: string): ColumnSpec {
  return { name, parquet: [{ name, type: 'DOUBLE', repetition_type: rep(nullable) }], type: 'double', nullable, description };
}

export function bool(name: string, nullable: boolean, description: string): ColumnSpec {
  return { name, parquet: [{ name, type: 'BOOLEAN', repetition_type: rep(nullable) }], type: 'bool', nullable, description };
}

/** Chat messages `[{role, content}]`, the shape TRL, veRL and chat templates take. */
export function messages(name: string, description: string): ColumnSpec {
  return {
    name,
    parquet: [
      { name, repetition_type: 'REQUIRED', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', repetition_type: 'REQUIRED', num_children: 2 },
      { name: 'role', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
      { name: 'content', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
    ],
    type: 'list<struct<role: string, content: string>>',
    nullable: false,
    description,
    statistics: false,
  };
}

/** Named numbers whose keys vary by reward scheme (correctness, format_penalty, …). */
export function numberMap(name: string, nullable: boolean, description: string): ColumnSpec {
  return {
    name,
    parquet: [
      { name, repetition_type: rep(nullable), converted_type: 'MAP', num_children: 1 },
      { name: 'key_value', repetition_type: 'REPEATED', num_children: 2 },
      { name: 'key', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
      { name: 'value', type: 'DOUBLE', repetition_type: 'OPTIONAL' },
    ],
    type: 'map<string, double>',
    nullable,
    description,
  };
}

/** A struct of flat fields. */
export function struct(name: string, fields: ColumnSpec[], description: string): ColumnSpec {
  for (const f of fields) {
    if (f.parquet.length !== 1) throw new Error(`struct ${name}: field ${f.name} must be flat`);
  }
  return {
    name,
    parquet: [{ name, repetition_type: 'REQUIRED', num_children: fields.length }, ...fields.map((f) => f.parquet[0])],
    type: `struct<${fields.map((f) => `${f.name}: ${f.type}`).join(', ')}>`,
    nullable: false,
    int64Fields: fields.filter((f) => f.int64).map((f) => f.name),
    description: `${description} Fields: ${fields.map((f) => `\`${f.name}\` (${f.type}${f.nullable ? ', nullable' : ''}): ${f.description}`).join('; ')}`,
  };
}

export function parquetSchema(columns: ColumnSpec[]): SchemaElement[] {
  return [{ name: 'root', num_children: columns.length }, ...columns.flatMap((c) => c.parquet)];
}

/**
 * An independent TensorBoard event-file reader and writer for tests: protobufjs with the messages
 * written here from TensorBoard's own .proto files, and @aws-crypto/crc32c for the framing. It
 * shares no code with src-main/engine/tfevents, so a round trip through both checks each against
 * the format rather than against itself.
 *
 * Sources (tensorflow/tensorboard):
 * - tensorboard/compat/proto/event.proto: Event { double wall_time = 1; int64 step = 2;
 *   oneof what { string file_version = 3; … Summary summary = 5; … } }
 * - tensorboard/compat/proto/summary.proto: Summary { repeated Value value = 1 }, Value { tag = 1,
 *   simple_value = 2, tensor = 8, metadata = 9 }, SummaryMetadata { PluginData plugin_data = 1
 *   { plugin_name = 1; content = 2 }, display_name = 2, summary_description = 3, data_class = 4 }
 * - tensorboard/compat/proto/tensor.proto: TensorProto { dtype = 1, tensor_shape = 2,
 *   tensor_content = 4, float_val = 5, double_val = 6, int_val = 7, int64_val = 10, half_val = 13 }
 * - tensorboard/compat/proto/tensor_shape.proto: TensorShapeProto { repeated Dim dim = 2 { int64 size = 1 } }
 * - tensorboard/compat/proto/types.proto: DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3, DT_INT64 = 9, DT_HALF = 19
 * - tensorboard/summary/writer/record_writer.py: `<Q` length, masked CRC of it, data, masked CRC of data
 * - tensorboard/compat/tensorflow_stub/pywrap_tensorflow.py masked_crc32c: ((crc >> 15) | (crc << 17)) + 0xa282ead8
 */
import fs from 'node:fs';
import { crc32c } from '@aws-crypto/crc32c';
import protobuf from 'protobufjs';

const PROTO = `
syntax = "proto3";
package tensorboard;
enum DataType { DT_INVALID = 0; DT_FLOAT = 1; DT_DOUBLE = 2; DT_INT32 = 3; DT_INT64 = 9; DT_HALF = 19; }
message TensorShapeProto { message Dim { int64 size = 1; string name = 2; } repeated Dim dim = 2; bool unknown_rank = 3; }
message TensorProto {
  DataType dtype = 1;
  TensorShapeProto tensor_shape = 2;
  int32 version_number = 3;
  bytes tensor_content = 4;
  repeated int32 half_val = 13 [packed = true];
  repeated float float_val = 5 [packed = true];
  repeated double double_val = 6 [packed = true];
  repeated int32 int_val = 7 [packed = true];
  repeated int64 int64_val = 10 [packed = true];
}
message SummaryMetadata {
  message PluginData { string plugin_name = 1; bytes content = 2; }
  PluginData plugin_data = 1;
  string display_name = 2;
  string summary_description = 3;
  int32 data_class = 4;
}
message Summary {
  message Value {
    string node_name = 7;
    string tag = 1;
    SummaryMetadata metadata = 9;
    oneof value { float simple_value = 2; TensorProto tensor = 8; }
  }
  repeated Value value = 1;
}
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what { string file_version = 3; bytes graph_def = 4; Summary summary = 5; }
}
`;

const root = protobuf.parse(PROTO, { keepCase: true }).root;
export const EventType = root.lookupType('tensorboard.Event');

export function masked(data: Uint8Array): number {
  const crc = crc32c(data);
  return Number(((((BigInt(crc) >> 15n) | (BigInt(crc) << 17n)) & 0xffffffffn) + 0xa282ead8n) & 0xffffffffn);
}

export function frame(data: Uint8Array): Buffer {
  const header = Buffer.alloc(8);
  header.writeBigUInt64LE(BigInt(data.length));
  const crcs = Buffer.alloc(8);
  crcs.writeUInt32LE(masked(header), 0);
  crcs.writeUInt32LE(masked(data), 4);
  return Buffer.concat([header, crcs.subarray(0, 4), Buffer.from(data), crcs.subarray(4)]);
}

/** What a test writes: a scalar torch-style (simple_value) or TF2-style (a rank-0 tensor). */
export type FixtureEvent =
  | { fileVersion: string; wallTime: number }
  | { tag: string; step: number; value: number; wallTime: number; style: 'simple' }
  | { tag: string; step: number; value: number; wallTime: number; style: 'tensor-float' | 'tensor-content' | 'tensor-double' | 'tensor-int64' }
  | { graph: true; wallTime: number };

function tensorOf(style: string, value: number): Record<string, unknown> {
  if (style === 'tensor-float') return { dtype: 1, tensor_shape: {}, float_val: [value] };
  if (style === 'tensor-double') return { dtype: 2, tensor_shape: {}, double_val: [value] };
  if (style === 'tensor-int64') return { dtype: 9, tensor_shape: {}, int64_val: [value] };
  const content = Buffer.alloc(4);
  content.writeFloatLE(value);
  return { dtype: 1, tensor_shape: {}, tensor_content: content };
}

export function encodeFixtureEvent(e: FixtureEvent): Uint8Array {
  if ('fileVersion' in e) return EventType.encode(EventType.fromObject({ wall_time: e.wallTime, file_version: e.fileVersion })).finish();
  if ('graph' in e) return EventType.encode(EventType.fromObject({ wall_time: e.wallTime, graph_def: Buffer.from('not a graph') })).finish();
  const value: Record<string, unknown> = { tag: e.tag };
  if (e.style === 'simple') value.simple_value = e.value;
  else {
    value.tensor = tensorOf(e.style, e.value);
    value.metadata = { plugin_data: { plugin_name: 'scalars' }, data_class: 1 };
  }
  return EventType.encode(EventType.fromObject({ wall_time: e.wallTime, step: e.step, summary: { value: [value] } })).finish();
}

/** Writes an event file of these events, framed; returns the byte offset of each record. */
export function writeFixtureFile(file: string, events: FixtureEvent[]): number[] {
  const frames = events.map((e) => frame(encodeFixtureEvent(e)));
  const offsets: number[] = [];
  let at = 0;
  for (const f of frames) {
    offsets.push(at);
    at += f.length;
  }
  fs.writeFileSync(file, Buffer.concat(frames));
  return offsets;
}

export interface ReadScalar {
  tag: string;
  step: number;
  value: number;
  wallTime: number;
  pluginName: string | null;
}

export interface ReadFile {
  fileVersion: string | null;
  firstWallTime: number;
  scalars: ReadScalar[];
}

/** Reads a whole event file, checking every CRC; throws on any framing error. */
export function readEventFile(file: string): ReadFile {
  const bytes = fs.readFileSync(file);
  const out: ReadFile = { fileVersion: null, firstWallTime: NaN, scalars: [] };
  let at = 0;
  let index = 0;
  while (at < bytes.length) {
    const header = bytes.subarray(at, at + 8);
    if (masked(header) !== bytes.readUInt32LE(at + 8)) throw new Error(`record ${index}: length CRC mismatch`);
    const length = Number(header.readBigUInt64LE(0));
    const data = bytes.subarray(at + 12, at + 12 + length);
    if (masked(data) !== bytes.readUInt32LE(at + 12 + length)) throw new Error(`record ${index}: data CRC mismatch`);
    const event = EventType.toObject(EventType.decode(data), { longs: Number, defaults: false }) as {
      wall_time?: number;
      step?: number;
      file_version?: string;
      summary?: { value?: { tag: string; simple_value?: number; tensor?: { float_val?: number[] }; metadata?: { plugin_data?: { plugin_name?: string } } }[] };
    };
    if (index === 0) {
      out.fileVersion = event.file_version ?? null;
      out.firstWallTime = event.wall_time ?? 0;
    }
    for (const v of event.summary?.value ?? []) {
      const value = v.simple_value ?? v.tensor?.float_val?.[0];
      if (value === undefined) continue;
      out.scalars.push({ tag: v.tag, step: event.step ?? 0, value, wallTime: event.wall_time ?? 0, pluginName: v.metadata?.plugin_data?.plugin_name ?? null });
    }
    at += 12 + length + 4;
    index++;
  }
  return out;
}

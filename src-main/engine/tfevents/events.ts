/**
 * Event and Summary messages, decoded only as far as scalars need (TensorBoard's
 * compat/proto/event.proto, summary.proto, tensor.proto):
 *
 *   Event: wall_time double = 1, step int64 = 2, file_version string = 3, summary Summary = 5
 *   Summary: repeated Value value = 1
 *   Value: tag = 1, simple_value float = 2, tensor TensorProto = 8, metadata SummaryMetadata = 9
 *   SummaryMetadata: plugin_data = 1 (PluginData: plugin_name = 1), data_class = 4
 *   TensorProto: dtype = 1, tensor_shape = 2, tensor_content = 4, float_val = 5, double_val = 6,
 *                int_val = 7, int64_val = 10, bool_val = 11, half_val = 13, uint32_val = 16, uint64_val = 17
 *
 * Writers differ: torch's SummaryWriter.add_scalar (and TF1 `tf.summary.scalar`) sets
 * `simple_value`; TF2 `tf.summary.scalar` writes a rank-0 `tensor` (its 4 bytes in
 * tensor_content; TensorBoard's own `scalar_pb` uses float_val) tagged with the `scalars` plugin.
 * Both are scalars here.
 */
import { WIRE_FIXED32, WIRE_FIXED64, WIRE_LENGTH, WireReader, WireWriter } from './wire';

/** types.proto DataType values the scalar decoding understands. */
export const DT = { FLOAT: 1, DOUBLE: 2, INT32: 3, UINT8: 4, INT16: 5, INT8: 6, INT64: 9, BOOL: 10, BFLOAT16: 14, UINT16: 17, HALF: 19, UINT32: 22, UINT64: 23 } as const;

export interface SummaryValue {
  tag: string;
  /** The plugin the metadata names (`scalars`, `histograms`, …), when this value carries metadata. */
  pluginName: string | null;
  /** The value as a number when it is a scalar (simple_value, or a one-element numeric tensor); else null. */
  scalar: number | null;
}

export interface TfEvent {
  wallTime: number;
  step: number;
  fileVersion: string | null;
  /** Summary values; empty for events without a summary (file_version, graph_def, session_log). */
  values: SummaryValue[];
}

export function decodeEvent(bytes: Uint8Array): TfEvent {
  const r = new WireReader(bytes);
  const event: TfEvent = { wallTime: 0, step: 0, fileVersion: null, values: [] };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === WIRE_FIXED64) event.wallTime = r.double();
    else if (field === 2 && wire === 0) event.step = r.varint();
    else if (field === 3 && wire === WIRE_LENGTH) event.fileVersion = r.string();
    else if (field === 5 && wire === WIRE_LENGTH) decodeSummary(r.sub(r.delimited()), event.values);
    else r.skip(wire);
  }
  return event;
}

function decodeSummary(r: WireReader, values: SummaryValue[]): void {
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === WIRE_LENGTH) values.push(decodeValue(r.sub(r.delimited())));
    else r.skip(wire);
  }
}

function decodeValue(r: WireReader): SummaryValue {
  const bytes = r.bytes;
  const value: SummaryValue = { tag: '', pluginName: null, scalar: null };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === WIRE_LENGTH) value.tag = r.string();
    else if (field === 2 && wire === WIRE_FIXED32) value.scalar = r.float();
    else if (field === 8 && wire === WIRE_LENGTH) value.scalar = tensorScalar(bytes, r.delimited());
    else if (field === 9 && wire === WIRE_LENGTH) value.pluginName = pluginName(bytes, r.delimited());
    else r.skip(wire);
  }
  return value;
}

function pluginName(bytes: Uint8Array, at: { start: number; end: number }): string | null {
  const r = new WireReader(bytes, at.start, at.end);
  let name: string | null = null;
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === WIRE_LENGTH) {
      const inner = new WireReader(bytes, ...spread(r.delimited()));
      while (!inner.done) {
        const t = inner.tag();
        if (t.field === 1 && t.wire === WIRE_LENGTH) name = inner.string();
        else inner.skip(t.wire);
      }
    } else r.skip(wire);
  }
  return name;
}

const spread = (at: { start: number; end: number }): [number, number] => [at.start, at.end];

/** The numbers a TensorProto holds (repeated fields arrive packed, or one per key from old writers). */
interface TensorParts {
  dtype: number;
  content: Uint8Array | null;
  values: number[];
}

/** A tensor's value when it holds exactly one number; null for anything else (strings, histograms, images). */
function tensorScalar(bytes: Uint8Array, at: { start: number; end: number }): number | null {
  const parts = tensorParts(bytes, at);
  if (parts.content !== null && parts.content.length > 0) return contentScalar(parts.dtype, parts.content);
  if (parts.values.length !== 1) return null;
  const v = parts.values[0];
  if (parts.dtype === DT.HALF) return halfToNumber(v);
  if (parts.dtype === DT.BFLOAT16) return bfloat16ToNumber(v);
  return v;
}

/** Field number → how each element is encoded (tensor.proto's typed value fields). */
const ELEMENT: Record<number, 'float' | 'double' | 'varint'> = { 5: 'float', 6: 'double', 7: 'varint', 10: 'varint', 11: 'varint', 13: 'varint', 16: 'varint', 17: 'varint' };

function tensorParts(bytes: Uint8Array, at: { start: number; end: number }): TensorParts {
  const r = new WireReader(bytes, at.start, at.end);
  const parts: TensorParts = { dtype: 0, content: null, values: [] };
  while (!r.done) {
    const { field, wire } = r.tag();
    const element = ELEMENT[field];
    if (field === 1 && wire === 0) parts.dtype = r.varint();
    else if (field === 4 && wire === WIRE_LENGTH) {
      const { start, end } = r.delimited();
      parts.content = bytes.subarray(start, end);
    } else if (element && wire === WIRE_LENGTH) {
      const packed = new WireReader(bytes, ...spread(r.delimited()));
      while (!packed.done) parts.values.push(readElement(packed, element));
    } else if (element) parts.values.push(readElement(r, element));
    else r.skip(wire);
  }
  return parts;
}

function readElement(r: WireReader, element: 'float' | 'double' | 'varint'): number {
  if (element === 'float') return r.float();
  if (element === 'double') return r.double();
  return r.varint();
}

/** tensor_content: the raw little-endian bytes of the tensor (one element for a scalar). */
function contentScalar(dtype: number, content: Uint8Array): number | null {
  const view = new DataView(content.buffer, content.byteOffset, content.byteLength);
  const one = (size: number) => content.length === size;
  if (dtype === DT.FLOAT && one(4)) return view.getFloat32(0, true);
  if (dtype === DT.DOUBLE && one(8)) return view.getFloat64(0, true);
  if (dtype === DT.INT32 && one(4)) return view.getInt32(0, true);
  if (dtype === DT.UINT32 && one(4)) return view.getUint32(0, true);
  if (dtype === DT.INT64 && one(8)) return Number(view.getBigInt64(0, true));
  if (dtype === DT.UINT64 && one(8)) return Number(view.getBigUint64(0, true));
  if (dtype === DT.INT16 && one(2)) return view.getInt16(0, true);
  if (dtype === DT.UINT16 && one(2)) return view.getUint16(0, true);
  if (dtype === DT.INT8 && one(1)) return view.getInt8(0);
  if ((dtype === DT.UINT8 || dtype === DT.BOOL) && one(1)) return view.getUint8(0);
  if (dtype === DT.HALF && one(2)) return halfToNumber(view.getUint16(0, true));
  if (dtype === DT.BFLOAT16 && one(2)) return bfloat16ToNumber(view.getUint16(0, true));
  return null;
}

/** IEEE 754 binary16 bits (tensor.proto keeps them in half_val's int32s). */
function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

/** bfloat16 bits: the upper half of a float32. */
function bfloat16ToNumber(bits: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint32(0, (bits & 0xffff) << 16, false);
  return view.getFloat32(0, false);
}

/** The first event of every file TensorBoard's writers open (event_file_writer.py): its version. */
export function encodeFileVersionEvent(wallTime: number): Uint8Array {
  return new WireWriter().doubleField(1, wallTime).stringField(3, 'brain.Event:2').finish();
}

/**
 * A scalar as TensorBoard's own summary API writes it (plugins/scalar/summary_v2.py `scalar_pb`,
 * through tensor_util.make_tensor_proto, which puts a one-element tensor in float_val): a rank-0
 * DT_FLOAT tensor with the `scalars` plugin's metadata (data_class DATA_CLASS_SCALAR = 1) on the
 * tag's first value only, as summary.proto says writers keep it. TF2's summary ops put the same
 * 4 bytes in tensor_content instead; readers take either. Values are float32 in TensorBoard.
 */
export function encodeScalarEvent(wallTime: number, step: number, tag: string, value: number, withMetadata: boolean): Uint8Array {
  // float_val is packed: one length-delimited field holding the element's 4 bytes; the shape is empty (rank 0).
  const floatVal = Buffer.alloc(4);
  floatVal.writeFloatLE(value);
  const tensor = new WireWriter().varintField(1, DT.FLOAT).bytesField(2, new Uint8Array(0)).bytesField(5, floatVal).finish();
  const val = new WireWriter().stringField(1, tag);
  if (withMetadata) {
    const plugin = new WireWriter().stringField(1, 'scalars').finish();
    val.bytesField(9, new WireWriter().bytesField(1, plugin).varintField(4, 1).finish());
  }
  val.bytesField(8, tensor);
  const summary = new WireWriter().bytesField(1, val.finish()).finish();
  return new WireWriter().doubleField(1, wallTime).varintField(2, step).bytesField(5, summary).finish();
}

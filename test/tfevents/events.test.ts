import { describe, expect, it } from 'vitest';
import { decodeEvent, encodeScalarEvent } from '../../src-main/engine/tfevents/events';
import { EventType, encodeFixtureEvent } from '../helpers/tfevents-independent';

describe('Event decoding', () => {
  it('reads the file_version event', () => {
    const event = decodeEvent(encodeFixtureEvent({ fileVersion: 'brain.Event:2', wallTime: 1234.5 }));
    expect(event).toEqual({ wallTime: 1234.5, step: 0, fileVersion: 'brain.Event:2', values: [] });
  });

  it.each([
    ['simple', 0.1],
    ['tensor-float', 0.1],
    ['tensor-content', 0.1],
    ['tensor-double', 0.1],
    ['tensor-int64', 7],
  ] as const)('reads a %s scalar', (style, value) => {
    const event = decodeEvent(encodeFixtureEvent({ tag: 'train/loss', step: 12_345_678_901, value, wallTime: 1.5e9, style }));
    expect(event.step).toBe(12_345_678_901);
    expect(event.wallTime).toBe(1.5e9);
    const expected = style === 'tensor-double' || style === 'tensor-int64' ? value : Math.fround(value);
    expect(event.values).toEqual([{ tag: 'train/loss', scalar: expected, pluginName: style === 'simple' ? null : 'scalars' }]);
  });

  // IEEE 754 binary16 bits, as tensor.proto keeps DT_HALF in half_val: 1, -2, 1/3 rounded, 2^-24 (subnormal), -inf.
  it.each([
    [0x3c00, 1],
    [0xc000, -2],
    [0x3555, 0.333251953125],
    [0x0001, 2 ** -24],
    [0xfc00, -Infinity],
  ])('reads a DT_HALF scalar from half_val bits %i', (bits, expected) => {
    const bytes = EventType.encode(EventType.fromObject({ wall_time: 1, step: 1, summary: { value: [{ tag: 'h', tensor: { dtype: 19, tensor_shape: {}, half_val: [bits] } }] } })).finish();
    expect(decodeEvent(bytes).values[0].scalar).toBe(expected);
  });

  it('reads DT_INT32 int_val and a DT_DOUBLE tensor_content', () => {
    const int = EventType.encode(EventType.fromObject({ wall_time: 1, step: 1, summary: { value: [{ tag: 'i', tensor: { dtype: 3, int_val: [-42] } }] } })).finish();
    expect(decodeEvent(int).values[0].scalar).toBe(-42);
    const content = Buffer.alloc(8);
    content.writeDoubleLE(Math.PI);
    const dbl = EventType.encode(EventType.fromObject({ wall_time: 1, step: 1, summary: { value: [{ tag: 'd', tensor: { dtype: 2, tensor_content: content } }] } })).finish();
    expect(decodeEvent(dbl).values[0].scalar).toBe(Math.PI);
  });

  it('reads a negative int64 step as the writer meant it, and writes one as protobuf does', () => {
    const bytes = EventType.encode(EventType.fromObject({ wall_time: 1, step: -3 })).finish();
    expect(decodeEvent(bytes).step).toBe(-3);
    const written = encodeScalarEvent(1, -3, 't', 1, false);
    expect((EventType.toObject(EventType.decode(written), { longs: Number }) as { step: number }).step).toBe(-3);
    expect(decodeEvent(written).step).toBe(-3);
    expect(decodeEvent(encodeScalarEvent(1, 2 ** 40 + 5, 't', 1, false)).step).toBe(2 ** 40 + 5);
  });

  it('gives no scalar for non-scalar values and skips unknown fields', () => {
    const bytes = EventType.encode(
      EventType.fromObject({ wall_time: 2, step: 1, summary: { value: [{ tag: 'hist', tensor: { dtype: 1, float_val: [1, 2, 3] } }] } }),
    ).finish();
    expect(decodeEvent(bytes).values).toEqual([{ tag: 'hist', scalar: null, pluginName: null }]);
    expect(decodeEvent(encodeFixtureEvent({ graph: true, wallTime: 3 })).values).toEqual([]);
  });

  it('writes a scalar the independent protobuf decoder reads as TF2 writes it', () => {
    const decoded = EventType.toObject(EventType.decode(encodeScalarEvent(10.25, 7, 'x', 0.3, true)), { longs: Number }) as Record<string, never>;
    expect(decoded).toMatchObject({
      wall_time: 10.25,
      step: 7,
      summary: { value: [{ tag: 'x', metadata: { plugin_data: { plugin_name: 'scalars' }, data_class: 1 }, tensor: { dtype: 1, float_val: [Math.fround(0.3)] } }] },
    });
  });

  it('rejects a message cut short', () => {
    const bytes = encodeFixtureEvent({ tag: 't', step: 1, value: 1, wallTime: 1, style: 'simple' });
    expect(() => decodeEvent(bytes.subarray(0, bytes.length - 2))).toThrow(/runs past the end/);
  });
});

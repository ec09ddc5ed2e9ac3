/**
 * The one convention for durations and bytes (src-shared/format.ts, issue 37), pinned on
 * hand-written tables, and the compare cells the CLI, the report and the UI now share.
 */
import { describe, expect, it } from 'vitest';
import { formatBytes, formatDeltaValue, formatDuration, formatMetric } from '#shared/format';

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [0.42, '0.42s'],
    [4.2, '4.2s'],
    [5, '5s'],
    [9.994, '9.99s'],
    [9.996, '10s'],
    [45.4, '45s'],
    [59.6, '1m00s'],
    [125, '2m05s'],
    [3599.4, '59m59s'],
    [3600, '1h00m'],
    [11_220, '3h07m'],
    [-3, '0s'],
  ])('%s s reads %s', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });

  it('reads a missing or non-finite duration as a dash', () => {
    for (const missing of [null, undefined, Number.NaN, Number.POSITIVE_INFINITY]) expect(formatDuration(missing)).toBe('—');
  });
});

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1.0 KiB'],
    [26_419, '25.8 KiB'],
    [600 * 2 ** 20, '600.0 MiB'],
    [1.5 * 2 ** 30, '1.5 GiB'],
    [3 * 2 ** 40, '3.0 TiB'],
    [5000 * 2 ** 40, '5000.0 TiB'],
  ])('%s bytes read %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('compare cells', () => {
  it('writes a wall time as a duration in the terminal, the report and the UI alike (was "125 s" in the CLI)', () => {
    expect(formatMetric(125, 'seconds')).toBe('2m05s');
    expect(formatDeltaValue(-65, 'seconds')).toBe('−1m05s');
    expect(formatDeltaValue(0, 'fraction')).toBe('±0.000');
    expect(formatDeltaValue(null, 'ratio')).toBe('—');
  });
});

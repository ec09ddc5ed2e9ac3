import { crc32c as awsCrc32c } from '@aws-crypto/crc32c';
import { describe, expect, it } from 'vitest';
import { crc32c, maskCrc, maskedCrc32c } from '../../src-main/engine/tfevents/crc32c';
import { masked } from '../helpers/tfevents-independent';

/** A deterministic byte stream (xorshift32), so failures reproduce. */
function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

describe('CRC-32C', () => {
  it('has the published check value of "123456789" (0xE3069283)', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  // RFC 3720 (iSCSI) appendix B.4 CRC examples.
  it.each([
    ['32 zero bytes', new Uint8Array(32), 0x8a9136aa],
    ['32 0xFF bytes', new Uint8Array(32).fill(0xff), 0x62a8ab43],
    ['bytes 0..31', Uint8Array.from({ length: 32 }, (_, i) => i), 0x46dd794e],
    ['bytes 31..0', Uint8Array.from({ length: 32 }, (_, i) => 31 - i), 0x113fdb5c],
  ])('matches RFC 3720 for %s', (_name, data, expected) => {
    expect(crc32c(data)).toBe(expected);
  });

  it('agrees with @aws-crypto/crc32c on random data of many lengths', () => {
    for (let n = 0; n < 300; n += 7) {
      const data = bytes(n, n + 1);
      expect(crc32c(data)).toBe(awsCrc32c(data));
    }
    const big = bytes(1 << 16, 99);
    expect(crc32c(big)).toBe(awsCrc32c(big));
  });

  it('continues across chunks and over a sub-range', () => {
    const data = bytes(1000, 5);
    expect(crc32c(data.subarray(400), crc32c(data.subarray(0, 400)))).toBe(awsCrc32c(data));
    expect(crc32c(data, 0, 100, 600)).toBe(awsCrc32c(data.subarray(100, 600)));
  });

  it("masks as TensorBoard's masked_crc32c does (rotate right 15, add 0xa282ead8)", () => {
    for (let n = 1; n < 200; n += 13) {
      const data = bytes(n, 7 * n);
      expect(maskedCrc32c(data)).toBe(masked(data));
    }
    // Hand-computed: rotr(0, 15) + delta = delta; rotr(1, 15) = 1 << 17.
    expect(maskCrc(0)).toBe(0xa282ead8);
    expect(maskCrc(1)).toBe((0x20000 + 0xa282ead8) >>> 0);
    expect(maskCrc(0xffffffff)).toBe((0xffffffff + 0xa282ead8) % 2 ** 32);
  });
});

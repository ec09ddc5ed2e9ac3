/**
 * CRC-32C (Castagnoli), the checksum of TFRecord framing, and TensorBoard's masking of it.
 *
 * TensorBoard's summary/writer/record_writer.py packs each record as `<Q length>`,
 * `masked_crc32c(header)`, data, `masked_crc32c(data)`; compat/tensorflow_stub/pywrap_tensorflow.py
 * `masked_crc32c` masks a CRC as `((crc >> 15) | (crc << 17)) + 0xa282ead8` (32-bit), so a CRC
 * of bytes that themselves hold CRCs does not collide. The polynomial is 0x1EDC6F41, used here
 * reflected (0x82F63B78), one byte per table lookup.
 */
const POLY_REFLECTED = 0x82f63b78;
const MASK_DELTA = 0xa282ead8;

const TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY_REFLECTED : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C of `bytes[start, end)`, continuing from `crc` (0 for a fresh checksum). */
export function crc32c(bytes: Uint8Array, crc = 0, start = 0, end = bytes.length): number {
  let c = ~crc >>> 0;
  for (let i = start; i < end; i++) c = TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/** TensorBoard's masking (pywrap_tensorflow.py `masked_crc32c`): rotate right by 15, add a constant. */
export function maskCrc(crc: number): number {
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + MASK_DELTA) >>> 0;
}

export function maskedCrc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  return maskCrc(crc32c(bytes, 0, start, end));
}

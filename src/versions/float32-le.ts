/** True when the host stores numbers little-endian (every platform Node supports in practice). */
const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The little-endian IEEE-754 bytes of `values`, bit patterns as they are. On a little-endian host
 * this is a view of `values` (no copy); do not mutate `values` while the bytes are in use.
 */
export function float32ToLeBytes(values: Float32Array): Uint8Array {
  if (HOST_LITTLE_ENDIAN) return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i]!, true);
  return bytes;
}

/** Inverse of {@link float32ToLeBytes}: a fresh Float32Array (never aliases `bytes`). Length must be a multiple of 4. */
export function leBytesToFloat32(bytes: Uint8Array): Float32Array {
  const n = bytes.length >>> 2;
  const values = new Float32Array(n);
  if (HOST_LITTLE_ENDIAN) {
    new Uint8Array(values.buffer).set(bytes.subarray(0, n * 4));
    return values;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < n; i++) values[i] = view.getFloat32(i * 4, true);
  return values;
}

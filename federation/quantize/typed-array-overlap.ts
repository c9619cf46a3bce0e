/**
 * True when the byte ranges of two typed-array views share at least one byte. Views over the
 * same buffer that do not overlap are independent; identical views are reported as overlapping.
 */
export function viewsOverlap(a: ArrayBufferView, b: ArrayBufferView): boolean {
  if (a.buffer !== b.buffer) return false;
  return a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}

/** True when `a` and `b` are views of exactly the same bytes (same buffer, offset and length). */
export function sameView(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return a.buffer === b.buffer && a.byteOffset === b.byteOffset && a.byteLength === b.byteLength;
}

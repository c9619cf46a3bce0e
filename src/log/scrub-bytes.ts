const MAX_DEPTH = 4;

/**
 * Returns a copy of `value` in which every binary view (Uint8Array, Buffer, any typed array,
 * DataView) and ArrayBuffer is replaced by a `[N bytes]` marker, down to a fixed depth.
 * Key material travels as bytes, so this keeps it out of logs even under an unexpected key
 * name. The input is never mutated; values that need no change are returned as they are.
 */
export function scrubBytes(value: unknown, depth = 0): unknown {
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    return `[${value.byteLength} bytes]`;
  }
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object' || value instanceof Error) {
    return value;
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      const s = scrubBytes(v, depth + 1);
      if (s !== v) {
        copy ??= value.slice();
        copy[i] = s;
      }
    }
    return copy ?? value;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value)) {
    const s = scrubBytes(v, depth + 1);
    if (s !== v) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[k] = s;
    }
  }
  return copy ?? value;
}

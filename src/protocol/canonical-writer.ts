import { InvalidArgumentError } from '../errors/index.ts';

const encoder = new TextEncoder();

/**
 * Builds canonical byte strings for signing: fixed-width big-endian integers, length-prefixed
 * strings and bytes. Never a re-serialization of JSON or protobuf, whose encodings are not unique.
 */
export class CanonicalWriter {
  #buf = new Uint8Array(256);
  #view = new DataView(this.#buf.buffer);
  #len = 0;

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n));
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }

  u8(v: number): this {
    this.#reserve(1);
    this.#view.setUint8(this.#len, v);
    this.#len += 1;
    return this;
  }

  u32(v: number): this {
    this.#reserve(4);
    this.#view.setUint32(this.#len, v, false);
    this.#len += 4;
    return this;
  }

  /** Unsigned integer up to 2^53 − 1 written as 8 bytes. */
  u64(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0)
      throw new InvalidArgumentError(`u64 value ${v} is not a safe unsigned integer`);
    this.#reserve(8);
    this.#view.setBigUint64(this.#len, BigInt(v), false);
    this.#len += 8;
    return this;
  }

  f32(v: number): this {
    this.#reserve(4);
    this.#view.setFloat32(this.#len, v, false);
    this.#len += 4;
    return this;
  }

  f64(v: number): this {
    this.#reserve(8);
    this.#view.setFloat64(this.#len, v, false);
    this.#len += 8;
    return this;
  }

  /** Bytes with a u32 length prefix. */
  bytes(b: Uint8Array): this {
    this.u32(b.length);
    this.#reserve(b.length);
    this.#buf.set(b, this.#len);
    this.#len += b.length;
    return this;
  }

  /** UTF-8 string with a u32 length prefix. */
  str(s: string): this {
    return this.bytes(encoder.encode(s));
  }

  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

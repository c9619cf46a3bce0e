/**
 * Reads the canonical byte strings `CanonicalWriter` (src/protocol) builds: big-endian fixed-width
 * integers and u32-length-prefixed byte strings. Every read is bounds-checked and throws the error
 * `fail(message)` makes, so a caller turns truncation into its own catalogue code. Returned byte
 * strings are copies: they never alias the input.
 */
export class CanonicalReader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #fail: (message: string) => Error;
  #offset = 0;

  constructor(bytes: Uint8Array, fail: (message: string) => Error) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#fail = fail;
  }

  /** Bytes consumed so far. */
  get offset(): number {
    return this.#offset;
  }

  #take(n: number, what: string): number {
    if (n > this.#bytes.length - this.#offset) {
      throw this.#fail(
        `${what} needs ${n} bytes at offset ${this.#offset}, only ${this.#bytes.length - this.#offset} remain`,
      );
    }
    const at = this.#offset;
    this.#offset += n;
    return at;
  }

  u8(what: string): number {
    return this.#view.getUint8(this.#take(1, what));
  }

  u32(what: string): number {
    return this.#view.getUint32(this.#take(4, what), false);
  }

  /** An IEEE 754 double (what `CanonicalWriter.f64` writes). */
  f64(what: string): number {
    return this.#view.getFloat64(this.#take(8, what), false);
  }

  /** An 8-byte unsigned integer; refuses values above 2^53 − 1 (what `CanonicalWriter.u64` writes). */
  u64(what: string): number {
    const value = this.#view.getBigUint64(this.#take(8, what), false);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw this.#fail(`${what} ${value} exceeds 2^53 − 1`);
    return Number(value);
  }

  /** A u32-length-prefixed byte string of exactly `length` bytes when given, else at most `max`. */
  bytes(what: string, limit: { length?: number; max?: number }): Uint8Array {
    const n = this.u32(`${what} length`);
    if (limit.length !== undefined && n !== limit.length) {
      throw this.#fail(`${what} length ${n}, expects ${limit.length}`);
    }
    if (limit.max !== undefined && n > limit.max)
      throw this.#fail(`${what} length ${n} exceeds ${limit.max}`);
    const at = this.#take(n, what);
    return this.#bytes.slice(at, at + n);
  }

  /** A u32-length-prefixed, non-empty, valid UTF-8 string of at most `maxBytes` bytes. */
  str(what: string, maxBytes: number): string {
    const bytes = this.bytes(what, { max: maxBytes });
    if (bytes.length === 0) throw this.#fail(`${what} is empty`);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw this.#fail(`${what} is not valid UTF-8`);
    }
  }

  /** Throws unless every byte was consumed. */
  end(what: string): void {
    const left = this.#bytes.length - this.#offset;
    if (left !== 0) throw this.#fail(`${what} has ${left} trailing bytes`);
  }
}

/**
 * A loaded vector of packed lane slots: a SEAL ciphertext in `he` mode, the plain slot values in
 * `plain` mode. Owned by whoever loaded it, who must {@link LaneVector.delete} it.
 */
export interface LaneVector {
  delete(): void;
}

/**
 * What the wire and the aggregation tree need of the slot cipher, with no secret: the
 * federation's CKKS context in `he` mode ({@link CkksContext}), {@link PlainLaneContext} in `plain`
 * mode. Blocks, sums and their refusals are the same in both modes; only what a block's payload
 * holds differs, and the parameter id keeps the two from ever being added together.
 */
export interface LaneContext {
  /** `he`: CKKS ciphertexts; `plain`: the slot values as unsigned 64-bit integers. */
  readonly mode: 'he' | 'plain';
  /** 32-byte id of the slot format; blocks name it, and one of another id is refused. */
  readonly paramsId: Uint8Array;
  /** Slots per block payload. */
  readonly slots: number;
  /** `exactBits`: slot sums stay exact below 2^exactBits; `scaleBits`: the CKKS scale (informative in plain). */
  readonly params: { readonly exactBits: number; readonly scaleBits: number };
  /** Longest payload this context loads; anything longer is refused before parsing. */
  readonly maxCiphertextBytes: number;
  /** Loads a payload, refusing one this federation cannot add (`CKKS_PARAMS_MISMATCH`). */
  loadCiphertext(bytes: Uint8Array): LaneVector;
  /** Adds `addend` into `accumulator` in place. */
  addInPlace(accumulator: LaneVector, addend: LaneVector): void;
  /** Serializes a loaded vector (a sum) into a fresh buffer. */
  serialize(vector: LaneVector): Uint8Array;
}

/**
 * Where a payload sits: the round attempt it belongs to (`label`) and its block (`index`).
 * Threshold encryption derives the position's common random polynomial from it and encrypts at
 * most once per position; the shared-key cipher ignores it.
 */
export interface LanePosition {
  readonly label: string;
  readonly index: number;
}

/**
 * What a site needs to turn slot vectors into payloads and back: the CKKS keyset (the shared
 * secret key) or the site's threshold secret in `he` mode, {@link PlainLaneKeyset} (no secret) in
 * `plain` mode.
 */
export interface LaneKeyset {
  readonly ctx: LaneContext;
  /** One slot vector (length ≤ slots, integers below 2^exactBits) to a payload at `position`. */
  encrypt(values: Float64Array, position?: LanePosition): Uint8Array;
  /**
   * A payload (one block, or a sum of blocks) back to its slot values; `block` is its index in
   * the update (a threshold decryptor looks up that block's decryption shares).
   */
  decrypt(payload: Uint8Array, block?: number): Float64Array;
  /** Frees what the keyset holds (the secret key in `he` mode). */
  delete(): void;
}

import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { sha256 } from '../digest/index.ts';
import type { LaneContext, LaneKeyset, LaneVector } from '../lanes/lane-cipher.ts';
import { type CkksParams, ckksParamsId, slotCount } from './ckks-params.ts';

/** Domain of {@link plainLanesId}: a plain id can never equal a CKKS parameter id. */
export const PLAIN_LANES_DOMAIN = 'cohort/v1/plain-lanes';

/** The slot values of one plain payload (or of a sum of them). */
export class PlainLaneVector implements LaneVector {
  readonly values: Float64Array;
  constructor(values: Float64Array) {
    this.values = values;
  }
  /** Zeroes the values (an update in `plain` mode is what `he` mode would encrypt). */
  delete(): void {
    this.values.fill(0);
  }
}

/** The id `plain` blocks carry: SHA-256(`PLAIN_LANES_DOMAIN` ‖ the CKKS parameter id). */
export function plainLanesId(params: CkksParams): Uint8Array {
  const domain = new TextEncoder().encode(PLAIN_LANES_DOMAIN);
  const id = ckksParamsId(params);
  const bytes = new Uint8Array(domain.length + id.length);
  bytes.set(domain, 0);
  bytes.set(id, domain.length);
  return sha256(bytes);
}

/**
 * The `plain`-mode slot format: the same packed lanes and block geometry as `he` mode under the
 * same `crypto.ckks` parameters (N/2 slots, sums exact below 2^exactBits), carried as one
 * big-endian u64 per slot, so a block payload is exactly 8 · slots bytes. Nothing is secret: the
 * aggregators and the coordinator read every update (docs/security.md, "plain mode").
 *
 * A site encodes integers below 2^exactBits; a sum saturates at 2^exactBits, which a payload may
 * hold (a saturated partial travels on) and which decodes as `LANE_OVERFLOW`, as an overflowed
 * CKKS sum does. Anything above is refused at load. Float64 sums stay exact (exactBits ≤ 50).
 */
export class PlainLaneContext implements LaneContext {
  readonly mode = 'plain' as const;
  readonly paramsId: Uint8Array;
  readonly slots: number;
  readonly params: { readonly exactBits: number; readonly scaleBits: number };
  readonly maxCiphertextBytes: number;
  readonly #limit: number;

  constructor(params: CkksParams) {
    if (!Number.isInteger(params.exactBits) || params.exactBits < 8 || params.exactBits > 50) {
      throw new InvalidArgumentError(
        `crypto.ckks.exactBits ${params.exactBits} must be an integer in [8, 50]`,
      );
    }
    this.paramsId = plainLanesId(params);
    this.slots = slotCount(params);
    this.params = Object.freeze({ exactBits: params.exactBits, scaleBits: params.scaleBits });
    this.maxCiphertextBytes = 8 * this.slots;
    this.#limit = 2 ** params.exactBits;
  }

  loadCiphertext(bytes: Uint8Array): PlainLaneVector {
    if (!(bytes instanceof Uint8Array) || bytes.length !== this.maxCiphertextBytes) {
      throw new CryptoError(
        'CKKS_PARAMS_MISMATCH',
        `plain payload of ${bytes?.length} bytes, ${this.slots} slots take ${this.maxCiphertextBytes}`,
      );
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const values = new Float64Array(this.slots);
    for (let i = 0; i < this.slots; i++) {
      const hi = view.getUint32(8 * i, false);
      const v = hi * 2 ** 32 + view.getUint32(8 * i + 4, false);
      if (hi >= 2 ** 21 || v > this.#limit) {
        throw new CryptoError(
          'CKKS_PARAMS_MISMATCH',
          `plain payload slot ${i} holds ${hi >= 2 ** 21 ? 'more than 2^53' : v}, above 2^${this.params.exactBits}`,
        );
      }
      values[i] = v;
    }
    return new PlainLaneVector(values);
  }

  addInPlace(accumulator: LaneVector, addend: LaneVector): void {
    const acc = asPlain(accumulator).values;
    const add = asPlain(addend).values;
    for (let i = 0; i < acc.length; i++) acc[i] = Math.min(acc[i]! + add[i]!, this.#limit);
  }

  serialize(vector: LaneVector): Uint8Array {
    return this.#write(asPlain(vector).values);
  }

  #write(values: Float64Array): Uint8Array {
    const out = new Uint8Array(this.maxCiphertextBytes);
    const view = new DataView(out.buffer);
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      view.setUint32(8 * i, Math.floor(v / 2 ** 32), false);
      view.setUint32(8 * i + 4, v % 2 ** 32, false);
    }
    return out;
  }

  /** @internal The payload of `values` (checked integers in [0, 2^exactBits)). */
  encode(values: Float64Array): Uint8Array {
    if (values.length > this.slots) {
      throw new InvalidArgumentError(`slot vector length ${values.length}, a payload holds ${this.slots}`);
    }
    const bad = values.findIndex((v) => !(Number.isInteger(v) && v >= 0 && v < this.#limit));
    if (bad >= 0) {
      throw new InvalidArgumentError(
        `slot ${bad} is ${values[bad]}, plain slots hold integers in [0, 2^${this.params.exactBits})`,
      );
    }
    const full = new Float64Array(this.slots);
    full.set(values);
    return this.#write(full);
  }
}

/** The {@link LaneKeyset} of `plain` mode: payloads are the slot values, so there is no key. */
export class PlainLaneKeyset implements LaneKeyset {
  readonly ctx: PlainLaneContext;
  constructor(ctx: PlainLaneContext) {
    this.ctx = ctx;
  }
  encrypt(values: Float64Array): Uint8Array {
    return this.ctx.encode(values);
  }
  decrypt(payload: Uint8Array): Float64Array {
    return this.ctx.loadCiphertext(payload).values;
  }
  delete(): void {}
}

function asPlain(v: LaneVector): PlainLaneVector {
  if (!(v instanceof PlainLaneVector)) throw new InvalidArgumentError('not a plain lane vector');
  return v;
}

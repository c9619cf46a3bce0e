import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * CKKS parameters of a federation. Every site, aggregator and the coordinator must agree on
 * them; the 32-byte {@link ckksParamsId} travels in every block header.
 */
export interface CkksParams {
  /** Ring degree N; a ciphertext holds N/2 slots. */
  readonly polyModulusDegree: 4096 | 8192 | 16384;
  /** Bit sizes of the coefficient moduli, last one the special prime. */
  readonly coeffModulus: readonly number[];
  /** log2 of the encoding scale at the last level (lane integers are multiplied by 2^scaleBits). */
  readonly scaleBits: number;
  /**
   * Bits of integer per slot that decrypt exactly after summation at the last level. Measured on
   * node-seal 7 with N=8192, [60,40,60], scale 2^16: random 43-bit sums of 16 ciphertexts decode
   * with |error| < 0.05; 44-bit values wrap. 42 leaves a bit of margin for worst-case (all-equal,
   * all-maximal) slot vectors whose coefficients reach the full slot value.
   */
  readonly exactBits: number;
}

/** Default parameters: N = 8192, moduli [60, 40, 60], scale 2^16, 42 exact bits per slot. */
export const DEFAULT_CKKS_PARAMS: CkksParams = Object.freeze({
  polyModulusDegree: 8192,
  coeffModulus: Object.freeze([60, 40, 60]),
  scaleBits: 16,
  exactBits: 42,
});

/** SEAL's 128-bit security limits on the total coefficient modulus bits. */
const MAX_TOTAL_BITS: Readonly<Record<number, number>> = { 4096: 109, 8192: 218, 16384: 438 };

/** Throws `INVALID_ARGUMENT` naming the field when `params` cannot work. */
export function assertCkksParams(params: CkksParams): void {
  const { polyModulusDegree: n, coeffModulus, scaleBits, exactBits } = params;
  const limit = MAX_TOTAL_BITS[n];
  if (limit === undefined) {
    throw new InvalidArgumentError(`ckks.polyModulusDegree ${n} must be 4096, 8192 or 16384`);
  }
  if (coeffModulus.length < 2) {
    throw new InvalidArgumentError(`ckks.coeffModulus has ${coeffModulus.length} moduli, needs at least 2`);
  }
  coeffModulus.forEach((b, i) => {
    if (!Number.isInteger(b) || b < 20 || b > 60) {
      throw new InvalidArgumentError(`ckks.coeffModulus[${i}] is ${b}, must be an integer in [20, 60]`);
    }
  });
  const total = coeffModulus.reduce((a, b) => a + b, 0);
  if (total > limit) {
    throw new InvalidArgumentError(`ckks.coeffModulus totals ${total} bits, N=${n} allows ${limit}`);
  }
  // The last data level keeps only the first modulus: value · scale must stay below q0 / 2.
  const q0 = coeffModulus[0]!;
  if (!Number.isInteger(scaleBits) || scaleBits < 10 || scaleBits > 40) {
    throw new InvalidArgumentError(`ckks.scaleBits ${scaleBits} must be an integer in [10, 40]`);
  }
  if (!Number.isInteger(exactBits) || exactBits < 8 || exactBits + scaleBits > q0 - 1) {
    throw new InvalidArgumentError(
      `ckks.exactBits ${exactBits} + scaleBits ${scaleBits} must be ≤ ${q0 - 1} (first modulus ${q0} bits)`,
    );
  }
}

/** Number of CKKS slots (N/2). */
export function slotCount(params: CkksParams): number {
  return params.polyModulusDegree / 2;
}

/**
 * 32-byte identifier of the parameters: SHA-256 over a domain-separated canonical encoding.
 * Two federations with the same id can add each other's ciphertexts; any other pair cannot.
 */
export function ckksParamsId(params: CkksParams): Uint8Array {
  const canonical = `cohort/v1/ckks-params\0N=${params.polyModulusDegree};q=${params.coeffModulus.join(',')};scale=${params.scaleBits};exact=${params.exactBits}`;
  return new Uint8Array(createHash('sha256').update(canonical).digest());
}

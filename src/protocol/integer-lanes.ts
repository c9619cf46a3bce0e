import { InvalidArgumentError } from '../errors/index.ts';

/**
 * Exact integers carried in lanes: each field is split into `bits`-wide digits, least significant
 * first, one digit per lane. A digit is a level in [0, 2^bits), so the lanes add under CKKS like
 * quantized parameters (the lane headroom holds a sum over `maxContributors`); after decryption the
 * digit sums are carried into each field's total exactly (BigInt). Federated evaluation and
 * federated statistics travel this way: the decrypted sum gives federation-wide totals, never one
 * site's figures.
 */

/** Lanes of one `fieldBits`-bit field at `bits` per lane. */
export function digitsPerField(fieldBits: number, bits: number): number {
  if (![1, 2, 4, 8].includes(bits)) throw new InvalidArgumentError(`bits ${bits} must be 1, 2, 4 or 8`);
  if (!Number.isInteger(fieldBits) || fieldBits < 1 || fieldBits > 256) {
    throw new InvalidArgumentError(`fieldBits ${fieldBits} must be an integer in [1, 256]`);
  }
  return Math.ceil(fieldBits / bits);
}

/**
 * The digit levels of `values`, each in [0, 2^fieldBits).
 *
 * @throws InvalidArgumentError naming the field (`name[i]`) when a value is negative or too wide.
 */
export function splitIntegers(
  values: readonly bigint[],
  fieldBits: number,
  bits: number,
  name = 'value',
): Uint8Array {
  const digits = digitsPerField(fieldBits, bits);
  const limit = 1n << BigInt(fieldBits);
  const mask = (1n << BigInt(bits)) - 1n;
  const out = new Uint8Array(values.length * digits);
  values.forEach((value, f) => {
    if (typeof value !== 'bigint' || value < 0n || value >= limit) {
      throw new InvalidArgumentError(`${name}[${f}] is ${value}, must be an integer in [0, 2^${fieldBits})`);
    }
    let rest = value;
    for (let d = 0; d < digits; d++) {
      out[f * digits + d] = Number(rest & mask);
      rest >>= BigInt(bits);
    }
  });
  return out;
}

/**
 * The totals of `fieldCount` fields from the decrypted digit sums (length fieldCount · digits).
 * Null when a lane sum is not a non-negative safe integer (a decryption that is not a sum of digits).
 *
 * @throws InvalidArgumentError when `laneSums` has another length.
 */
export function carryIntegers(
  laneSums: ArrayLike<number>,
  fieldCount: number,
  fieldBits: number,
  bits: number,
): bigint[] | null {
  const digits = digitsPerField(fieldBits, bits);
  if (laneSums.length !== fieldCount * digits) {
    throw new InvalidArgumentError(
      `${laneSums.length} lanes, ${fieldCount} fields of ${fieldBits} bits at ${bits} bits per lane need ${fieldCount * digits}`,
    );
  }
  const shift = BigInt(bits);
  const totals: bigint[] = [];
  for (let f = 0; f < fieldCount; f++) {
    let total = 0n;
    for (let d = digits - 1; d >= 0; d--) {
      const lane = laneSums[f * digits + d]!;
      if (!Number.isSafeInteger(lane) || lane < 0) return null;
      total = (total << shift) + BigInt(lane);
    }
    totals.push(total);
  }
  return totals;
}

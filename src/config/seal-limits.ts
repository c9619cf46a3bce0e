/**
 * Largest total coefficient-modulus bit count that keeps CKKS at 128-bit classical security,
 * per polynomial modulus degree (SEAL's `CoeffModulus.MaxBitCount(N, sec_level_type.tc128)`,
 * from the HomomorphicEncryption.org standard).
 */
export const SEAL_MAX_COEFF_MODULUS_BITS = Object.freeze({ 4096: 109, 8192: 218, 16384: 438 } as const);

/** Polynomial modulus degrees Cohort accepts. */
export const POLY_MODULUS_DEGREES = [4096, 8192, 16384] as const;

/** One of {@link POLY_MODULUS_DEGREES}. */
export type PolyModulusDegree = (typeof POLY_MODULUS_DEGREES)[number];

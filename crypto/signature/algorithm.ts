import { falcon512 } from '@noble/post-quantum/falcon.js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import { CryptoError } from '../../src/errors/index.ts';

/** Lattice signature algorithms a Cohort key can carry. Falcon-512 is the default. */
export type SignatureAlgorithm = 'falcon-512' | 'ml-dsa-65';

/**
 * One-byte wire ids of {@link SignatureAlgorithm}, used in key encodings, key ids and block
 * headers. Released ids are never reassigned.
 */
export const SIGNATURE_ALGORITHM_IDS: Readonly<Record<SignatureAlgorithm, number>> = Object.freeze({
  'falcon-512': 1,
  'ml-dsa-65': 2,
});

/** Byte lengths and noble implementation behind one algorithm. Internal to this module. */
export interface AlgorithmSpec {
  readonly id: number;
  readonly seedBytes: number;
  readonly publicKeyBytes: number;
  readonly secretKeyBytes: number;
  readonly impl: typeof falcon512 | typeof ml_dsa65;
}

const SPECS: Readonly<Record<SignatureAlgorithm, AlgorithmSpec>> = Object.freeze({
  'falcon-512': Object.freeze({
    id: SIGNATURE_ALGORITHM_IDS['falcon-512'],
    seedBytes: 48,
    publicKeyBytes: 897,
    secretKeyBytes: 1281,
    impl: falcon512,
  }),
  'ml-dsa-65': Object.freeze({
    id: SIGNATURE_ALGORITHM_IDS['ml-dsa-65'],
    seedBytes: 32,
    publicKeyBytes: 1952,
    secretKeyBytes: 4032,
    impl: ml_dsa65,
  }),
});

/**
 * Reverse of {@link SIGNATURE_ALGORITHM_IDS}.
 *
 * @throws CryptoError `SIGNATURE_ALGORITHM_UNKNOWN` for an id no algorithm has.
 */
export function signatureAlgorithmFromId(id: number): SignatureAlgorithm {
  for (const [name, value] of Object.entries(SIGNATURE_ALGORITHM_IDS)) {
    if (value === id) return name as SignatureAlgorithm;
  }
  throw new CryptoError('SIGNATURE_ALGORITHM_UNKNOWN', `signature algorithm id ${String(id)} is unknown`, {
    details: { id: String(id) },
  });
}

/**
 * Lengths and implementation of `algorithm`.
 *
 * @throws CryptoError `SIGNATURE_ALGORITHM_UNKNOWN` for a name outside {@link SignatureAlgorithm}
 *   (possible for values that came from config or the wire).
 */
export function algorithmSpec(algorithm: SignatureAlgorithm): AlgorithmSpec {
  const spec = Object.hasOwn(SPECS, algorithm) ? SPECS[algorithm] : undefined;
  if (spec === undefined) {
    throw new CryptoError(
      'SIGNATURE_ALGORITHM_UNKNOWN',
      `signature algorithm ${String(algorithm)} is unknown`,
      {
        details: { algorithm: String(algorithm) },
      },
    );
  }
  return spec;
}

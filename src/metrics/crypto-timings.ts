import { Histogram, type Registry } from 'prom-client';

/** What a timed signature verification checked. */
export type SignatureKind = 'site-update' | 'partial' | 'control';

/** Every {@link SignatureKind} (label values created at 0). */
export const SIGNATURE_KINDS: readonly SignatureKind[] = Object.freeze(['site-update', 'partial', 'control']);

/** A timed CKKS operation. */
export type CkksOperation = 'encrypt' | 'load' | 'add' | 'decrypt';

/** Every {@link CkksOperation} (label values created at 0). */
export const CKKS_OPERATIONS: readonly CkksOperation[] = Object.freeze(['encrypt', 'load', 'add', 'decrypt']);

/**
 * Where a service reports how long its cryptography took (milliseconds, as the code measures;
 * exported in seconds). `signature` is one lattice verification actually run (a verification
 * answered from a verifier's cache is not reported); `ckks` is one operation on one block.
 */
export interface CryptoTimings {
  signature(kind: SignatureKind, ms: number): void;
  ckks(operation: CkksOperation, ms: number): void;
}

/** Registers `cohort_signature_verify_seconds{kind}` and `cohort_ckks_operation_seconds{operation}` on `registry`. */
export function createCryptoTimings(registry: Registry): CryptoTimings {
  const signature = new Histogram<'kind'>({
    name: 'cohort_signature_verify_seconds',
    help: 'Lattice signature verifications actually run (cache hits excluded), by what was verified.',
    labelNames: ['kind'],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25],
    registers: [registry],
  });
  const ckks = new Histogram<'operation'>({
    name: 'cohort_ckks_operation_seconds',
    help: 'CKKS operations on one block (encrypt, load and validate, add, decrypt).',
    labelNames: ['operation'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers: [registry],
  });
  for (const kind of SIGNATURE_KINDS) signature.zero({ kind });
  for (const operation of CKKS_OPERATIONS) ckks.zero({ operation });
  return {
    signature(kind, ms) {
      if (SIGNATURE_KINDS.includes(kind) && Number.isFinite(ms) && ms >= 0)
        signature.observe({ kind }, ms / 1000);
    },
    ckks(operation, ms) {
      if (CKKS_OPERATIONS.includes(operation) && Number.isFinite(ms) && ms >= 0)
        ckks.observe({ operation }, ms / 1000);
    },
  };
}

import { Histogram, type Registry } from 'prom-client';
import {
  CKKS_OPERATIONS,
  type CkksOperation,
  type CryptoTimingObserver,
  SIGNATURE_KINDS,
  type SignatureKind,
} from '../protocol/index.ts';

// The label sets are the protocol's (where the services report), re-exported for metrics users.
export { CKKS_OPERATIONS, type CkksOperation, SIGNATURE_KINDS, type SignatureKind };

/**
 * Where a service reports how long its cryptography took (milliseconds, as the code measures;
 * exported in seconds). `signature` is one lattice verification actually run (a verification
 * answered from a verifier's cache is not reported); `ckks` is one operation on one block. Pass it
 * as the services' `cryptoTimings` option.
 */
export type CryptoTimings = CryptoTimingObserver;

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

/** What a timed signature verification checked. */
export type SignatureKind = 'site-update' | 'partial' | 'control';

/** Every {@link SignatureKind} (a metrics label set). */
export const SIGNATURE_KINDS: readonly SignatureKind[] = Object.freeze(['site-update', 'partial', 'control']);

/** A timed CKKS operation on one block. */
export type CkksOperation = 'encrypt' | 'load' | 'add' | 'decrypt';

/** Every {@link CkksOperation} (a metrics label set). */
export const CKKS_OPERATIONS: readonly CkksOperation[] = Object.freeze(['encrypt', 'load', 'add', 'decrypt']);

/**
 * Where a service reports how long its cryptography took, in milliseconds (`performance.now()`
 * differences). `signature` is one lattice verification actually run (one answered from a cache is
 * not reported); `ckks` is one operation on one block. Each service takes its own observer (no
 * global state: tests run many members in one process); `src/metrics`' `CryptoTimings` is one.
 * Implementations should not throw; what they throw is ignored.
 */
export interface CryptoTimingObserver {
  signature(kind: SignatureKind, ms: number): void;
  ckks(operation: CkksOperation, ms: number): void;
}

/**
 * The `onSignatureVerified` hook (of `BlockVerifier` or `openControl`) reporting to `observer`
 * under `kind`; undefined without an observer, so nothing is timed then.
 */
export function signatureTimer(
  observer: CryptoTimingObserver | undefined,
  kind: SignatureKind,
): ((ms: number, ok: boolean) => void) | undefined {
  if (observer === undefined) return undefined;
  return (ms) => observer.signature(kind, ms);
}

/** Reports one CKKS operation that started at `started` (`performance.now()`); observer errors are ignored. */
export function reportCkks(
  observer: CryptoTimingObserver | undefined,
  operation: CkksOperation,
  started: number,
): void {
  if (observer === undefined) return;
  const ms = performance.now() - started;
  try {
    observer.ckks(operation, ms);
  } catch {
    // an observer must not change what the CKKS code does
  }
}

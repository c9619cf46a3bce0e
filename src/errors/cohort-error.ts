/**
 * Base of Cohort's typed error catalogue. Every error thrown across a public boundary is a
 * `CohortError` subclass with a stable, machine-readable `code` (never reworded once
 * released) and a human message naming what was wrong. Underlying errors are chained
 * through the standard `cause`.
 */
export class CohortError extends Error {
  /** Stable code, `UPPER_SNAKE`, safe to match on and to use as a metric label. */
  readonly code: string;
  /** Structured context (field path, sizes, ids). Never holds secrets. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: string,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = Object.freeze({ ...(options?.details ?? {}) });
  }
}

/** A caller passed an argument that violates a documented contract (`INVALID_ARGUMENT`). */
export class InvalidArgumentError extends CohortError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('INVALID_ARGUMENT', message, options);
  }
}

/** Configuration failed validation; `details.path` names the field (`CONFIG_INVALID`, `CONFIG_UNREADABLE`). */
export class ConfigError extends CohortError {}

/** A cryptographic operation failed: bad key material, failed decryption or unwrap, parameter mismatch. */
export class CryptoError extends CohortError {}

/** An update could not be encoded (`UPDATE_NON_FINITE`, `UPDATE_SHAPE`). */
export class UpdateError extends CohortError {}

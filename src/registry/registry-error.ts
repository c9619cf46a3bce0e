import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link RegistryError}; never renamed once released. */
export const REGISTRY_ERROR_CODES = [
  /** The registry file cannot be read. */
  'REGISTRY_UNREADABLE',
  /** The registry file's SHA-256 is not the one pinned in the configuration (`members.registry.sha256`). */
  'REGISTRY_PIN_MISMATCH',
  /** The registry or a registry change is not well formed (encoding, ids, roles, keys). */
  'REGISTRY_INVALID',
  /** The officer's signature over the registry or a registry change does not verify. */
  'REGISTRY_SIGNATURE_INVALID',
  /** A registry change breaks the registry's rules (unknown member, revoked, wrong round, …). */
  'REGISTRY_CHANGE_REFUSED',
] as const;

export type RegistryErrorCode = (typeof REGISTRY_ERROR_CODES)[number];

/** The member registry, or a change of it, was refused; `details` name the file or member. */
export class RegistryError extends CohortError {
  declare readonly code: RegistryErrorCode;

  constructor(
    code: RegistryErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}

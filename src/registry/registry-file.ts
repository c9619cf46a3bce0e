import { readFileSync } from 'node:fs';
import { sha256Hex } from '../../crypto/digest/index.ts';
import { writeKeyFile } from '../../crypto/signature/key-file-io.ts';
import { RegistryError } from './registry-error.ts';
import { openRegistry, type VerifiedRegistry } from './registry-sign.ts';

/** Name of the registry file in the shared public key folder (`keys/public/registry.bin`). */
export const REGISTRY_FILE = 'registry.bin';

/** A registry file and the SHA-256 its readers pin (the config's `members.registry`). */
export interface RegistryPin {
  readonly path: string;
  /** 64 lowercase hex characters. */
  readonly sha256: string;
}

/**
 * Loads the registry file at `path`: reads it, refuses it unless its SHA-256 equals `pin` (when
 * given; compared before anything is parsed), then decodes it and verifies the officer's signature.
 *
 * @throws RegistryError `REGISTRY_UNREADABLE`, `REGISTRY_PIN_MISMATCH`, `REGISTRY_INVALID` or
 *   `REGISTRY_SIGNATURE_INVALID`, each naming the file.
 */
export function loadRegistry(path: string, pin?: string): VerifiedRegistry {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (cause) {
    throw new RegistryError('REGISTRY_UNREADABLE', `cannot read the member registry ${path}`, {
      cause,
      details: { path },
    });
  }
  if (pin !== undefined) {
    const actual = sha256Hex(bytes);
    if (actual !== pin.toLowerCase()) {
      throw new RegistryError(
        'REGISTRY_PIN_MISMATCH',
        `member registry ${path} has SHA-256 ${actual}, the configuration pins ${pin.toLowerCase()}: refusing it (replaced or altered file, or a stale pin)`,
        { details: { path, actual, pinned: pin.toLowerCase() } },
      );
    }
  }
  return openRegistry(bytes, path);
}

/** Writes registry file bytes to `path` (public, 0644) and returns its pin. */
export function writeRegistry(path: string, bytes: Uint8Array): RegistryPin {
  writeKeyFile(path, bytes, false);
  return { path, sha256: sha256Hex(bytes) };
}

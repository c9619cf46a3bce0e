import { loadSigningKeyPair } from '../../crypto/signature/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { memberSigningKeyFile } from '../registry/index.ts';
import type { BundleSigner } from './audit-bundle.ts';

/**
 * The signer that seals the bundles `member` exports: its signing key pair from the federation's
 * keys folder (`<keysDir>/<member>/<member>.key`, checked like every secret key file). Wipe the key
 * (`wipeSigningKeyPair`) once the bundle is written.
 *
 * @throws InvalidArgumentError when the configuration has no members section; the key file's
 *   errors (missing, permissions, owner).
 */
export function loadBundleSigner(config: CohortConfig, member: string): BundleSigner {
  const keysDir = config.members?.keysDir;
  if (keysDir === undefined) {
    throw new InvalidArgumentError('sealing a bundle needs the members section (its keys folder)', {
      details: { name: 'config.members' },
    });
  }
  return { member, key: loadSigningKeyPair(memberSigningKeyFile(keysDir, member)) };
}

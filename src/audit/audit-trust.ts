import { bytesEqual, sha256Hex } from '../../crypto/digest/index.ts';
import { loadRegistry, openRegistry, type VerifiedRegistry } from '../registry/index.ts';
import { bytesToHex, type Commit } from '../versions/index.ts';
import type { AuditBundle } from './audit-bundle.ts';
import { AuditError } from './audit-error.ts';
import type { AuditTrust } from './verify-audit.ts';

/** What the auditor names to trust (each optional; see {@link resolveAuditTrust}). */
export interface AuditTrustSources {
  /** The federation the audit is about. */
  readonly federation: string;
  /** A member registry file the auditor names (`--keys`, or the configuration's `members.registry.path`). */
  readonly registryFile?: string;
  /** The SHA-256 (hex) the registry must have (`members.registry.sha256`, or `--registry-sha256`). */
  readonly registryPin?: string;
  /** The genesis commit computed from the auditor's configuration. */
  readonly genesis?: Commit;
  /** The genesis hash (hex) the auditor pins (`--genesis`). */
  readonly genesisPin?: string;
}

/**
 * The keys and genesis an audit trusts, from what the auditor names, never from the evidence alone:
 * - the registry: `registryFile` (checked against `registryPin` when given), else the bundle's copy
 *   if its SHA-256 is `registryPin`; without a file or a pin, nothing is trusted;
 * - the genesis: `genesis` (from the configuration), else the bundle's copy; either must have hash
 *   `genesisPin` when given. (A bundle's genesis without a pin is taken as is: the report names its
 *   hash for the auditor to compare, and the log's first round must be based on it.)
 *
 * @throws AuditError `AUDIT_TRUST_MISSING` (nothing names a registry or a genesis),
 *   `AUDIT_TRUST_MISMATCH` (a copy other than the pin, a registry of another federation);
 *   RegistryError for a file that does not load or match its pin.
 */
export function resolveAuditTrust(sources: AuditTrustSources, bundle?: AuditBundle): AuditTrust {
  const pin = sources.registryPin?.toLowerCase();
  let registry: VerifiedRegistry;
  if (sources.registryFile !== undefined) {
    registry = loadRegistry(sources.registryFile, pin);
  } else if (pin !== undefined && bundle?.registry != null) {
    const actual = sha256Hex(bundle.registry);
    if (actual !== pin) {
      throw new AuditError(
        'AUDIT_TRUST_MISMATCH',
        `the bundle's member registry has SHA-256 ${actual}, the pin is ${pin}`,
        { details: { actual, pinned: pin } },
      );
    }
    registry = openRegistry(bundle.registry, 'the bundle registry');
  } else {
    throw new AuditError(
      'AUDIT_TRUST_MISSING',
      pin === undefined
        ? 'no keys to trust: give a configuration with a pinned registry (members.registry), --keys <registry file>, or --registry-sha256 <hex> for the bundle copy'
        : 'the registry is pinned but neither a registry file nor a bundle holding one was given',
    );
  }
  if (registry.registry.federation !== sources.federation) {
    throw new AuditError(
      'AUDIT_TRUST_MISMATCH',
      `the trusted registry is for federation ${JSON.stringify(registry.registry.federation)}, the log for ${JSON.stringify(sources.federation)}`,
    );
  }
  const genesis = sources.genesis ?? bundle?.genesis ?? undefined;
  if (genesis === undefined) {
    throw new AuditError(
      'AUDIT_TRUST_MISSING',
      'no genesis commit: give the federation configuration, or a bundle that holds one',
    );
  }
  const genesisPin = sources.genesisPin?.toLowerCase();
  if (genesisPin !== undefined && bytesToHex(genesis.hash) !== genesisPin) {
    throw new AuditError(
      'AUDIT_TRUST_MISMATCH',
      `the genesis commit is ${bytesToHex(genesis.hash)}, the pin is ${genesisPin}`,
      { details: { actual: bytesToHex(genesis.hash), pinned: genesisPin } },
    );
  }
  // A bundle's copies must be what is trusted, even when the trust came from elsewhere: a bundle
  // whose registry or genesis was replaced is not the one its exporter wrote.
  if (bundle?.registry != null && sha256Hex(bundle.registry) !== registry.sha256) {
    throw new AuditError(
      'AUDIT_TRUST_MISMATCH',
      `the bundle's member registry has SHA-256 ${sha256Hex(bundle.registry)}, the trusted one ${registry.sha256}`,
    );
  }
  if (bundle?.genesis != null && !bytesEqual(bundle.genesis.hash, genesis.hash)) {
    throw new AuditError(
      'AUDIT_TRUST_MISMATCH',
      `the bundle's genesis commit is ${bytesToHex(bundle.genesis.hash)}, the trusted one ${bytesToHex(genesis.hash)}`,
    );
  }
  return { registry, genesis };
}

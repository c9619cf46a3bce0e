import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CkksContext, CkksKeyset } from '../../crypto/ckks/index.ts';
import {
  generateKemKeyPair,
  loadKemKeyPair,
  saveKemKeyPair,
  saveKemPublicKey,
  unwrapSecret,
  wipeKemKeyPair,
  wrapSecret,
} from '../../crypto/kem/index.ts';
import {
  generateSigningKeyPair,
  type SignatureAlgorithm,
  savePublicKey,
  saveSigningKeyPair,
  wipeSigningKeyPair,
} from '../../crypto/signature/index.ts';
import { CryptoError } from '../errors/index.ts';
import { federationAuthorization } from '../transport/index.ts';

/** Purpose bound into the envelope that carries the CKKS secret key to a site. */
export const CKKS_KEY_PURPOSE = 'ckks-secret-key';

/** What the ceremony is run for. */
export interface CeremonyInput {
  /** Folder the keys are written to (created; secret files 0600). */
  readonly dir: string;
  readonly federation: string;
  readonly coordinator: string;
  readonly aggregators: readonly string[];
  readonly sites: readonly string[];
  readonly algorithm: SignatureAlgorithm;
  readonly ckks: CkksContext;
}

/**
 * A key ceremony for a whole federation on one machine (the demo and tests; in production each
 * member generates its own signing and KEM keys and sends only public keys, and the ceremony runs
 * at one site). Writes per member `<id>.key` + `<id>.pub` (lattice signing), `<id>.nats` (its NATS
 * password); per site `<id>.kem` + `<id>.kem.pub` (ML-KEM-768) and `<id>.ckks.env`: the CKKS
 * secret key wrapped for that site alone. The CKKS secret itself is never written in the clear.
 * Returns the nats-server `authorization` block for these members.
 */
export function runKeyCeremony(input: CeremonyInput): { authorization: string } {
  mkdirSync(input.dir, { recursive: true });
  const password = (id: string) => {
    const pass = randomBytes(18).toString('base64url');
    const path = join(input.dir, `${id}.nats`);
    writeFileSync(path, `${pass}\n`, { mode: 0o600 });
    chmodSync(path, 0o600);
    return pass;
  };
  const credential = (id: string) => {
    const kp = generateSigningKeyPair(input.algorithm);
    saveSigningKeyPair(join(input.dir, `${id}.key`), kp);
    savePublicKey(join(input.dir, `${id}.pub`), kp);
    wipeSigningKeyPair(kp);
    return { id, password: password(id) };
  };
  const coordinator = credential(input.coordinator);
  const aggregators = input.aggregators.map(credential);
  const sites = input.sites.map(credential);

  const keyset = CkksKeyset.create(input.ckks);
  const secret = keyset.exportSecretKey();
  try {
    for (const site of input.sites) {
      const kem = generateKemKeyPair();
      saveKemKeyPair(join(input.dir, `${site}.kem`), kem);
      saveKemPublicKey(join(input.dir, `${site}.kem.pub`), kem.publicKey);
      const envelope = wrapSecret(kem.publicKey, secret, {
        federation: input.federation,
        recipient: site,
        purpose: CKKS_KEY_PURPOSE,
      });
      const path = join(input.dir, `${site}.ckks.env`);
      writeFileSync(path, envelope, { mode: 0o600 });
      chmodSync(path, 0o600);
      wipeKemKeyPair(kem);
    }
  } finally {
    secret.fill(0);
    keyset.delete();
  }
  return {
    authorization: federationAuthorization({ federation: input.federation, coordinator, aggregators, sites }),
  };
}

/**
 * A site's CKKS keyset: unwraps `<dir>/<site>.ckks.env` with `<dir>/<site>.kem` (bound to the
 * federation and the site) and loads it under `ckks`. Errors: `UNWRAP_FAILED` (another site's
 * envelope, tampering), `CKKS_PARAMS_MISMATCH`, `KEY_FILE_UNREADABLE`.
 */
export function loadSiteCkks(ckks: CkksContext, dir: string, site: string, federation: string): CkksKeyset {
  const kem = loadKemKeyPair(join(dir, `${site}.kem`));
  let envelope: Uint8Array;
  try {
    envelope = readFileSync(join(dir, `${site}.ckks.env`));
  } catch (cause) {
    wipeKemKeyPair(kem);
    throw new CryptoError('KEY_FILE_UNREADABLE', `cannot read ${site}.ckks.env in ${dir}`, { cause });
  }
  const secret = unwrapSecret(kem.secretKey, envelope, {
    federation,
    recipient: site,
    purpose: CKKS_KEY_PURPOSE,
  });
  wipeKemKeyPair(kem);
  try {
    return CkksKeyset.import(ckks, secret);
  } finally {
    secret.fill(0);
  }
}

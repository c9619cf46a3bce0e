import type { Command } from 'commander';
import {
  loadKemKeyPair,
  loadKemPublicKey,
  MIN_ENVELOPE_BYTES,
  readSealedEnvelope,
  wipeKemKeyPair,
} from '../../../crypto/kem/index.ts';
import { loadPublicKey, loadSigningKeyPair, wipeSigningKeyPair } from '../../../crypto/signature/index.ts';
import { readKeyFile } from '../../../crypto/signature/key-file-io.ts';
import { CryptoError } from '../../errors/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { ckksKeyParamsId, fileMagic, kemFingerprint, shortParamsId } from './keys-files.ts';

/** What `keys show` prints about one file, in order. Never secret material. */
type Facts = [label: string, value: string][];

/** Reads `file` by its magic. Secret files go through their loaders: owner-only mode and consistency checked. */
function describe(file: string): Facts {
  const head = readKeyFile(file, false);
  const magic = fileMagic(head);
  const size = String(head.length);
  head.fill(0); // may be a secret key: each kind below re-reads through its own checks
  switch (magic) {
    case 'CPK1': {
      const key = loadPublicKey(file);
      return [
        ['kind', 'signing public key'],
        ['algorithm', key.algorithm],
        ['key id', key.keyId],
      ];
    }
    case 'CSK1': {
      const key = loadSigningKeyPair(file);
      wipeSigningKeyPair(key);
      return [
        ['kind', 'signing key pair (secret)'],
        ['algorithm', key.algorithm],
        ['key id', key.keyId],
      ];
    }
    case 'CKP1':
      return [
        ['kind', 'KEM public key'],
        ['algorithm', 'ml-kem-768'],
        ['fingerprint', kemFingerprint(loadKemPublicKey(file))],
      ];
    case 'CKS1': {
      const key = loadKemKeyPair(file);
      wipeKemKeyPair(key);
      return [
        ['kind', 'KEM key pair (secret)'],
        ['algorithm', 'ml-kem-768'],
        ['fingerprint', kemFingerprint(key.publicKey)],
      ];
    }
    case 'CCK1': {
      const bytes = readKeyFile(file, true);
      try {
        return [
          ['kind', 'CKKS secret key (secret)'],
          ['params id', shortParamsId(ckksKeyParamsId(bytes, file))],
          ['bytes', String(bytes.length)],
        ];
      } finally {
        bytes.fill(0);
      }
    }
    case 'CSE1': {
      const bytes = readKeyFile(file, false);
      const { statement: s, inner } = readSealedEnvelope(bytes);
      return [
        ['kind', 'sealed secret envelope (ML-KEM-768 + AES-256-GCM, signed by its maker; not verified here)'],
        ['federation', s.federation],
        ['recipient', s.recipient],
        ['purpose', s.purpose],
        ['made by', `${s.maker} (key id ${s.makerKeyId})`],
        ['fingerprint', s.fingerprint],
        ['bytes', size],
        ['payload bytes', String(Math.max(0, inner.length - MIN_ENVELOPE_BYTES))],
      ];
    }
    case 'CWE1':
      return [
        ['kind', 'bare wrapped secret envelope (ML-KEM-768 + AES-256-GCM; unsigned: sites refuse it)'],
        ['bytes', size],
        ['payload bytes', String(Math.max(0, Number(size) - MIN_ENVELOPE_BYTES))],
      ];
    default:
      throw new CryptoError('KEY_INVALID', `${file} is not a Cohort key file (unknown magic)`, {
        details: { path: file },
      });
  }
}

/**
 * `cohort keys show <file>`: prints what a key file is (kind, algorithm, key id or fingerprint,
 * CKKS params id) without any secret material. Secret files must be owner-only and consistent.
 */
export function registerKeysShowCommand(keys: Command, ctx: CliContext): void {
  keys
    .command('show')
    .description('describe a key, key pair or envelope file (never prints secret material)')
    .argument('<file>', 'key file')
    .action((file: string) => {
      const facts: Facts = [['file', file], ...describe(file)];
      ctx.stdout.write(facts.map(([label, value]) => `${label}: ${value}\n`).join(''));
    });
}

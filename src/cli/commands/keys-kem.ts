import type { Command } from 'commander';
import {
  encodeKemKeyPair,
  encodeKemPublicKey,
  generateKemKeyPair,
  wipeKemKeyPair,
} from '../../../crypto/kem/index.ts';
import { SECRET_KEY_FILE_MODE } from '../../../crypto/signature/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { kemFingerprint, octalMode, writeKeyOutputs } from './keys-files.ts';

interface KemGenerateFlags {
  out: string;
  force?: boolean;
}

/**
 * `cohort keys kem generate --out <prefix> [--force]`: writes a fresh ML-KEM-768 key pair to
 * `<prefix>.kem` (mode 0600) and its encapsulation key to `<prefix>.kem.pub`, and prints the
 * public key's fingerprint (SHA-256 of the `.kem.pub` file).
 */
export function registerKeysKemCommand(keys: Command, ctx: CliContext): void {
  const kem = keys.command('kem').description('ML-KEM-768 keys that CKKS secret keys are wrapped to');
  kem
    .command('generate')
    .description('generate an ML-KEM-768 key pair: <prefix>.kem (secret, 0600) and <prefix>.kem.pub')
    .requiredOption('-o, --out <prefix>', 'output path prefix')
    .option('-f, --force', 'overwrite existing key files')
    .action((flags: KemGenerateFlags) => {
      const secretPath = `${flags.out}.kem`;
      const publicPath = `${flags.out}.kem.pub`;
      const key = generateKemKeyPair();
      let pair: Uint8Array | undefined;
      try {
        pair = encodeKemKeyPair(key);
        writeKeyOutputs(
          [
            { path: secretPath, bytes: pair, secret: true },
            { path: publicPath, bytes: encodeKemPublicKey(key.publicKey), secret: false },
          ],
          flags.force === true,
        );
      } finally {
        pair?.fill(0);
        wipeKemKeyPair(key);
      }
      ctx.stdout.write(
        `algorithm: ml-kem-768\nfingerprint: ${kemFingerprint(key.publicKey)}\n` +
          `secret key: ${secretPath} (${octalMode(SECRET_KEY_FILE_MODE)})\npublic key: ${publicPath}\n`,
      );
    });
}

import type { Command } from 'commander';
import { Option } from 'commander';
import {
  encodePublicKey,
  encodeSigningKeyPair,
  generateSigningKeyPair,
  SECRET_KEY_FILE_MODE,
  type SignatureAlgorithm,
  wipeSigningKeyPair,
} from '../../../crypto/signature/index.ts';
import { SIGNATURE_ALGORITHMS } from '../../config/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { octalMode, writeKeyOutputs } from './keys-files.ts';

interface SigningGenerateFlags {
  out: string;
  alg: SignatureAlgorithm;
  force?: boolean;
}

/**
 * `cohort keys signing generate --out <prefix> [--alg falcon-512|ml-dsa-65] [--force]`: writes a
 * fresh signing key pair to `<prefix>.key` (mode 0600) and its public key to `<prefix>.pub`, and
 * prints the algorithm and key id. Refuses to replace existing files without `--force`.
 */
export function registerKeysSigningCommand(keys: Command, ctx: CliContext): void {
  const signing = keys.command('signing').description('lattice signing keys (Falcon-512, ML-DSA-65)');
  signing
    .command('generate')
    .description('generate a signing key pair: <prefix>.key (secret, 0600) and <prefix>.pub')
    .requiredOption('-o, --out <prefix>', 'output path prefix')
    .addOption(
      new Option('-a, --alg <algorithm>', 'signature algorithm')
        .choices([...SIGNATURE_ALGORITHMS])
        .default('falcon-512'),
    )
    .option('-f, --force', 'overwrite existing key files')
    .action((flags: SigningGenerateFlags) => {
      const secretPath = `${flags.out}.key`;
      const publicPath = `${flags.out}.pub`;
      const key = generateSigningKeyPair(flags.alg);
      let pair: Uint8Array | undefined;
      try {
        pair = encodeSigningKeyPair(key);
        writeKeyOutputs(
          [
            { path: secretPath, bytes: pair, secret: true },
            { path: publicPath, bytes: encodePublicKey(key), secret: false },
          ],
          flags.force === true,
        );
      } finally {
        pair?.fill(0);
        wipeSigningKeyPair(key);
      }
      ctx.stdout.write(
        `algorithm: ${key.algorithm}\nkey id: ${key.keyId}\n` +
          `secret key: ${secretPath} (${octalMode(SECRET_KEY_FILE_MODE)})\npublic key: ${publicPath}\n`,
      );
    });
}

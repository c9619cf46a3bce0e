import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { secretFingerprint } from '../../../crypto/kem/index.ts';
import { SECRET_KEY_FILE_MODE } from '../../../crypto/signature/index.ts';
import { DATA_KEY_PURPOSE } from '../../services/envelope-trust.ts';
import { DATA_KEY_BYTES } from '../../versions/snapshot-cipher.ts';
import type { CliContext } from '../context/cli-context.ts';
import { encodeDataKeyFile } from './keys-data-file.ts';
import { octalMode, writeKeyOutputs } from './keys-files.ts';

interface DataCreateFlags {
  out: string;
  force?: boolean;
}

/**
 * `cohort keys data create --out <file> [--force]`: writes a fresh federation data key (32 random
 * bytes from node:crypto, in a 'CDK1' key file) with mode 0600, refusing to replace an existing
 * file without `--force`. Prints the path and the key's fingerprint (`secretFingerprint`, purpose
 * `federation-data-key`: the value of `members.keyFingerprints.data`), never the key.
 */
export function registerKeysDataCreateCommand(data: Command, ctx: CliContext): void {
  data
    .command('create')
    .description('create a fresh federation data key file (secret, 0600)')
    .requiredOption('-o, --out <file>', 'data key file to write')
    .option('-f, --force', 'overwrite an existing file')
    .action((flags: DataCreateFlags) => {
      const key = randomBytes(DATA_KEY_BYTES);
      const bytes = encodeDataKeyFile(key);
      const fingerprint = secretFingerprint(DATA_KEY_PURPOSE, key);
      try {
        writeKeyOutputs([{ path: flags.out, bytes, secret: true }], flags.force === true);
      } finally {
        key.fill(0);
        bytes.fill(0);
      }
      ctx.stdout.write(
        `federation data key (${DATA_KEY_BYTES} bytes): ${flags.out} (${octalMode(SECRET_KEY_FILE_MODE)})\n` +
          `fingerprint: ${fingerprint} (members.keyFingerprints.data)\n`,
      );
    });
}

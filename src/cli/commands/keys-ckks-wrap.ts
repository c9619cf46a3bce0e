import type { Command } from 'commander';
import { loadKemPublicKey, wrapSecret } from '../../../crypto/kem/index.ts';
import { SECRET_KEY_FILE_MODE } from '../../../crypto/signature/index.ts';
import { readKeyFile } from '../../../crypto/signature/key-file-io.ts';
import type { CliContext } from '../cli-context.ts';
import {
  assertDistinctOutput,
  ckksKeyParamsId,
  kemFingerprint,
  octalMode,
  shortParamsId,
  writeKeyOutputs,
} from './keys-files.ts';

/** `WrapContext.purpose` of a wrapped CKKS secret key. */
export const CKKS_KEY_WRAP_PURPOSE = 'ckks-secret-key';

interface CkksWrapFlags {
  key: string;
  recipient: string;
  kemPub: string;
  federation: string;
  out: string;
  force?: boolean;
}

/**
 * `cohort keys ckks wrap --key <ckks-file> --recipient <site-id> --kem-pub <site.kem.pub>
 * --federation <id> --out <envelope> [--force]`: wraps the CKKS secret key for one site
 * (`wrapSecret`, purpose `ckks-secret-key`, bound to federation and recipient) and writes the
 * envelope with mode 0600. The key file must itself be owner-only.
 */
export function registerKeysCkksWrapCommand(ckks: Command, ctx: CliContext): void {
  ckks
    .command('wrap')
    .description("wrap the CKKS secret key for one site under the site's ML-KEM-768 public key")
    .requiredOption('--key <file>', 'CKKS secret key file (from `keys ckks create`)')
    .requiredOption('--recipient <site-id>', 'recipient site id')
    .requiredOption('--kem-pub <file>', "recipient site's ML-KEM-768 public key (<prefix>.kem.pub)")
    .requiredOption('--federation <id>', 'federation id')
    .requiredOption('-o, --out <file>', 'envelope file to write (0600)')
    .option('-f, --force', 'overwrite an existing file')
    .action((flags: CkksWrapFlags) => {
      assertDistinctOutput(flags.out, { '--key': flags.key, '--kem-pub': flags.kemPub });
      const recipientKey = loadKemPublicKey(flags.kemPub);
      const secret = readKeyFile(flags.key, true);
      let paramsId: Uint8Array;
      let envelope: Uint8Array;
      try {
        paramsId = ckksKeyParamsId(secret, flags.key);
        envelope = wrapSecret(recipientKey, secret, {
          federation: flags.federation,
          recipient: flags.recipient,
          purpose: CKKS_KEY_WRAP_PURPOSE,
        });
      } finally {
        secret.fill(0);
      }
      writeKeyOutputs([{ path: flags.out, bytes: envelope, secret: true }], flags.force === true);
      ctx.stdout.write(
        `wrapped CKKS secret key (params id ${shortParamsId(paramsId)}) for site ${flags.recipient} ` +
          `of federation ${flags.federation}\nrecipient kem key: ${kemFingerprint(recipientKey)}\n` +
          `envelope: ${flags.out} (${envelope.length} bytes, ${octalMode(SECRET_KEY_FILE_MODE)})\n`,
      );
    });
}

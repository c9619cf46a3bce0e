import type { Command } from 'commander';
import { loadKemPublicKey, sealEnvelope, secretFingerprint } from '../../../crypto/kem/index.ts';
import {
  loadSigningKeyPair,
  SECRET_KEY_FILE_MODE,
  wipeSigningKeyPair,
} from '../../../crypto/signature/index.ts';
import { readKeyFile } from '../../../crypto/signature/key-file-io.ts';
import type { CliContext } from '../context/cli-context.ts';
import { assertDistinctOutput, kemFingerprint, octalMode, writeKeyOutputs } from './keys-files.ts';

/** Flags every `keys … wrap` command takes. */
export interface WrapFlags {
  key: string;
  recipient: string;
  kemPub: string;
  federation: string;
  signer: string;
  signingKey: string;
  out: string;
  force?: boolean;
}

/** What differs between the `keys … wrap` commands. */
export interface WrapCommandSpec {
  /** One line for `--help`. */
  readonly description: string;
  readonly keyHelp: string;
  readonly outHelp: string;
  /** `WrapContext.purpose` bound into the envelope. */
  readonly purpose: string;
  /**
   * The secret to wrap from the (owner-only) key file's bytes, and what to say about it
   * ("federation data key", "CKKS secret key (params id …)"). The caller wipes the file bytes;
   * a returned secret that is not the file itself is wiped after wrapping.
   */
  readonly secretFrom: (file: Uint8Array, path: string) => { secret: Uint8Array; what: string };
}

/**
 * Registers `wrap` under `parent`: `--key <file> --recipient <site> --kem-pub <file>
 * --federation <id> --signer <site> --signing-key <file> --out <envelope> [--force]` wraps the
 * secret of the key file for one site and seals it with the signer's registered signing key
 * (`sealEnvelope`: bound to federation, recipient and the spec's purpose, stating the secret's
 * fingerprint), writes the envelope owner-only (0600) and prints the fingerprint. The recipient
 * opens it only when the signer is a registered site of its view. The key files must themselves be
 * owner-only; `--out` may not name an input.
 */
export function registerWrapCommand(parent: Command, ctx: CliContext, spec: WrapCommandSpec): void {
  parent
    .command('wrap')
    .description(spec.description)
    .requiredOption('--key <file>', spec.keyHelp)
    .requiredOption('--recipient <site-id>', 'recipient site id')
    .requiredOption('--kem-pub <file>', "recipient site's ML-KEM-768 public key (<prefix>.kem.pub)")
    .requiredOption('--federation <id>', 'federation id')
    .requiredOption(
      '--signer <site-id>',
      'the site that makes the envelope (its key must be in the registry)',
    )
    .requiredOption('--signing-key <file>', "the signer's signing key pair (<site>.key, 0600)")
    .requiredOption('-o, --out <file>', spec.outHelp)
    .option('-f, --force', 'overwrite an existing file')
    .action((flags: WrapFlags) => {
      assertDistinctOutput(flags.out, {
        '--key': flags.key,
        '--kem-pub': flags.kemPub,
        '--signing-key': flags.signingKey,
      });
      const recipientKey = loadKemPublicKey(flags.kemPub);
      const signing = loadSigningKeyPair(flags.signingKey);
      const file = readKeyFile(flags.key, true);
      let envelope: Uint8Array;
      let what: string;
      let fingerprint: string;
      try {
        const opened = spec.secretFrom(file, flags.key);
        what = opened.what;
        try {
          fingerprint = secretFingerprint(spec.purpose, opened.secret);
          envelope = sealEnvelope({ id: flags.signer, key: signing }, recipientKey, opened.secret, {
            federation: flags.federation,
            recipient: flags.recipient,
            purpose: spec.purpose,
          });
        } finally {
          if (opened.secret !== file) opened.secret.fill(0);
        }
      } finally {
        file.fill(0);
        wipeSigningKeyPair(signing);
      }
      writeKeyOutputs([{ path: flags.out, bytes: envelope, secret: true }], flags.force === true);
      ctx.stdout.write(
        `wrapped ${what} for site ${flags.recipient} of federation ${flags.federation}\n` +
          `sealed by: ${flags.signer} (key id ${signing.keyId})\n` +
          `fingerprint: ${fingerprint}\n` +
          `recipient kem key: ${kemFingerprint(recipientKey)}\n` +
          `envelope: ${flags.out} (${envelope.length} bytes, ${octalMode(SECRET_KEY_FILE_MODE)})\n`,
      );
    });
}

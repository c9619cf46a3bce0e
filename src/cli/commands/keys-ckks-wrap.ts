import type { Command } from 'commander';
import { CKKS_KEY_PURPOSE } from '../../services/key-ceremony.ts';
import type { CliContext } from '../context/cli-context.ts';
import { ckksKeyParamsId, shortParamsId } from './keys-files.ts';
import { registerWrapCommand } from './keys-wrap-command.ts';

/** `WrapContext.purpose` of a wrapped CKKS secret key (the key ceremony's). */
export const CKKS_KEY_WRAP_PURPOSE = CKKS_KEY_PURPOSE;

/**
 * `cohort keys ckks wrap --key <ckks-file> --recipient <site-id> --kem-pub <site.kem.pub>
 * --federation <id> --signer <site-id> --signing-key <site.key> --out <envelope> [--force]`: wraps
 * the CKKS secret key for one site and seals it with the signer's signing key (`sealEnvelope`,
 * purpose `ckks-secret-key`, bound to federation and recipient) and writes the envelope with mode
 * 0600. The key files must themselves be owner-only.
 */
export function registerKeysCkksWrapCommand(ckks: Command, ctx: CliContext): void {
  registerWrapCommand(ckks, ctx, {
    description: "wrap the CKKS secret key for one site under the site's ML-KEM-768 public key",
    keyHelp: 'CKKS secret key file (from `keys ckks create`)',
    outHelp: 'envelope file to write (0600)',
    purpose: CKKS_KEY_WRAP_PURPOSE,
    secretFrom: (file, path) => ({
      secret: file,
      what: `CKKS secret key (params id ${shortParamsId(ckksKeyParamsId(file, path))})`,
    }),
  });
}

import type { Command } from 'commander';
import { DATA_KEY_PURPOSE } from '../../services/key-ceremony.ts';
import type { CliContext } from '../context/cli-context.ts';
import { dataKeyFromFile } from './keys-data-file.ts';
import { registerWrapCommand } from './keys-wrap-command.ts';

/**
 * `cohort keys data wrap --key <data-key-file> --recipient <site-id> --kem-pub <site.kem.pub>
 * --federation <id> --signer <site-id> --signing-key <site.key> --out <envelope> [--force]`: wraps
 * the federation data key for one site and seals it with the signer's signing key
 * (`sealEnvelope`, purpose `federation-data-key`, bound to federation and recipient) and writes the
 * envelope with mode 0600: the `<site>.data.env` that `loadSiteDataKey` opens. The key files must
 * be owner-only.
 */
export function registerKeysDataWrapCommand(data: Command, ctx: CliContext): void {
  registerWrapCommand(data, ctx, {
    description: "wrap the federation data key for one site under the site's ML-KEM-768 public key",
    keyHelp: 'data key file (from `keys data create`)',
    outHelp: 'envelope file to write (0600), e.g. <site>.data.env',
    purpose: DATA_KEY_PURPOSE,
    secretFrom: (file, path) => ({ secret: dataKeyFromFile(file, path), what: 'federation data key' }),
  });
}

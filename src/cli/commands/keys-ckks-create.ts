import type { Command } from 'commander';
import { CkksKeyset, getCkksContext } from '../../../crypto/ckks/index.ts';
import { secretFingerprint } from '../../../crypto/kem/index.ts';
import { SECRET_KEY_FILE_MODE } from '../../../crypto/signature/index.ts';
import { CKKS_KEY_PURPOSE } from '../../services/envelope-trust.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions } from '../context/config-options.ts';
import {
  type CkksConfigFlags,
  ckksParamsFromFlags,
  describeCkksParams,
  octalMode,
  shortParamsId,
  writeKeyOutputs,
} from './keys-files.ts';

interface CkksCreateFlags extends CkksConfigFlags {
  out: string;
  force?: boolean;
}

/**
 * `cohort keys ckks create --out <file> [--config <federation.yaml>] [--force]`: writes a fresh
 * CKKS secret key (mode 0600) for the config's CKKS parameters, or the defaults without a config,
 * and prints the params id (first 16 hex characters) and the key's fingerprint (`secretFingerprint`,
 * purpose `ckks-secret-key`): the value of `members.keyFingerprints.ckks` every site checks.
 */
export function registerKeysCkksCreateCommand(ckks: Command, ctx: CliContext): void {
  addConfigOptions(
    ckks
      .command('create')
      .description('create a fresh CKKS secret key file (secret, 0600)')
      .requiredOption('-o, --out <file>', 'CKKS secret key file to write')
      .option(
        '-c, --config <file>',
        'federation config whose crypto.ckks parameters to use (default: built-in)',
      )
      .option('-f, --force', 'overwrite an existing file'),
  ).action(async (flags: CkksCreateFlags) => {
    const params = ckksParamsFromFlags(flags, ctx);
    const context = await getCkksContext(params);
    const keyset = CkksKeyset.create(context);
    let bytes: Uint8Array | undefined;
    let fingerprint: string;
    try {
      bytes = keyset.exportSecretKey();
      fingerprint = secretFingerprint(CKKS_KEY_PURPOSE, bytes);
      writeKeyOutputs([{ path: flags.out, bytes, secret: true }], flags.force === true);
    } finally {
      bytes?.fill(0);
      keyset.delete();
    }
    ctx.stdout.write(
      `params id: ${shortParamsId(context.paramsId)}\nparams: ${describeCkksParams(context.params)}\n` +
        `fingerprint: ${fingerprint} (members.keyFingerprints.ckks)\n` +
        `secret key: ${flags.out} (${octalMode(SECRET_KEY_FILE_MODE)})\n`,
    );
  });
}

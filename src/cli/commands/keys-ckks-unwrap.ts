import type { Command } from 'commander';
import { CkksKeyset, getCkksContext } from '../../../crypto/ckks/index.ts';
import { loadKemKeyPair, unwrapSecret, wipeKemKeyPair } from '../../../crypto/kem/index.ts';
import { SECRET_KEY_FILE_MODE } from '../../../crypto/signature/index.ts';
import { readKeyFile } from '../../../crypto/signature/key-file-io.ts';
import type { CliContext } from '../cli-context.ts';
import { addConfigOptions } from '../config-options.ts';
import { CKKS_KEY_WRAP_PURPOSE } from './keys-ckks-wrap.ts';
import {
  assertDistinctOutput,
  type CkksConfigFlags,
  ckksParamsFromFlags,
  octalMode,
  shortParamsId,
  writeKeyOutputs,
} from './keys-files.ts';

interface CkksUnwrapFlags extends CkksConfigFlags {
  envelope: string;
  kem: string;
  recipient: string;
  federation: string;
  out: string;
  force?: boolean;
}

/**
 * `cohort keys ckks unwrap --envelope <file> --kem <site.kem> --recipient <site-id>
 * --federation <id> --out <ckks-file> [--config <federation.yaml>] [--force]`: opens an envelope
 * made by `keys ckks wrap`, checks the key loads under the config's CKKS parameters (defaults
 * without a config) and writes it with mode 0600. A wrong key, recipient, federation or a
 * tampered envelope is `UNWRAP_FAILED`; a key for other parameters is `CKKS_PARAMS_MISMATCH`.
 */
export function registerKeysCkksUnwrapCommand(ckks: Command, ctx: CliContext): void {
  addConfigOptions(
    ckks
      .command('unwrap')
      .description("unwrap a site's CKKS secret key envelope with the site's ML-KEM-768 key")
      .requiredOption('--envelope <file>', 'envelope file (from `keys ckks wrap`)')
      .requiredOption('--kem <file>', "this site's ML-KEM-768 key pair (<prefix>.kem)")
      .requiredOption('--recipient <site-id>', "this site's id")
      .requiredOption('--federation <id>', 'federation id')
      .requiredOption('-o, --out <file>', 'CKKS secret key file to write (0600)')
      .option('-c, --config <file>', 'federation config whose crypto.ckks parameters to check against')
      .option('-f, --force', 'overwrite an existing file'),
  ).action(async (flags: CkksUnwrapFlags) => {
    assertDistinctOutput(flags.out, { '--envelope': flags.envelope, '--kem': flags.kem });
    const params = ckksParamsFromFlags(flags, ctx);
    const envelope = readKeyFile(flags.envelope, false);
    const kem = loadKemKeyPair(flags.kem);
    let secret: Uint8Array;
    try {
      secret = unwrapSecret(kem.secretKey, envelope, {
        federation: flags.federation,
        recipient: flags.recipient,
        purpose: CKKS_KEY_WRAP_PURPOSE,
      });
    } finally {
      wipeKemKeyPair(kem);
    }
    let paramsId: Uint8Array;
    try {
      const context = await getCkksContext(params);
      CkksKeyset.import(context, secret).delete();
      paramsId = context.paramsId;
      writeKeyOutputs([{ path: flags.out, bytes: secret, secret: true }], flags.force === true);
    } finally {
      secret.fill(0);
    }
    ctx.stdout.write(
      `unwrapped CKKS secret key (params id ${shortParamsId(paramsId)}) for site ${flags.recipient} ` +
        `of federation ${flags.federation}\nsecret key: ${flags.out} (${octalMode(SECRET_KEY_FILE_MODE)})\n`,
    );
  });
}

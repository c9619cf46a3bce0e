import type { Command } from 'commander';
import { CkksKeyset, getCkksContext } from '../../../crypto/ckks/index.ts';
import {
  type EnvelopeMakerLookup,
  loadKemKeyPair,
  openSealedEnvelope,
  wipeKemKeyPair,
} from '../../../crypto/kem/index.ts';
import { loadPublicKey, SECRET_KEY_FILE_MODE } from '../../../crypto/signature/index.ts';
import { readKeyFile } from '../../../crypto/signature/key-file-io.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { RegistryView } from '../../registry/index.ts';
import { envelopeTrust } from '../../services/envelope-trust.ts';
import { loadPinnedRegistry } from '../../services/member-context.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, loadConfigWithFlags } from '../context/config-options.ts';
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
  signerPub?: string;
  out: string;
  force?: boolean;
}

/**
 * Who may have made the envelope, and the pinned fingerprint: from `--config` (its pinned registry's
 * sites and `members.keyFingerprints`), and/or `--signer-pub` (one public key read out of band).
 */
function unwrapCheck(
  flags: CkksUnwrapFlags,
  ctx: CliContext,
): { makers: EnvelopeMakerLookup; fingerprint: string | undefined } {
  if (flags.config === undefined && flags.signerPub === undefined) {
    throw new InvalidArgumentError(
      'unwrap needs --config <federation.yaml> (its pinned registry names the sites that may make envelopes) or --signer-pub <site.pub>',
      { details: { name: 'config' } },
    );
  }
  const checks: EnvelopeMakerLookup[] = [];
  let fingerprint: string | undefined;
  if (flags.config !== undefined) {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    if (config.federation.id !== flags.federation) {
      throw new InvalidArgumentError(
        `--federation ${flags.federation} is not the federation of ${flags.config} (${config.federation.id})`,
        { details: { name: 'federation' } },
      );
    }
    const signed = loadPinnedRegistry(config);
    if (signed === undefined && flags.signerPub === undefined) {
      throw new InvalidArgumentError(
        `${flags.config} pins no member registry (no members section): give --signer-pub <site.pub>`,
        { details: { name: 'signer-pub' } },
      );
    }
    if (signed !== undefined) {
      const trust = envelopeTrust({ config, registryView: RegistryView.fromRegistry(signed.registry) });
      checks.push(trust.makers);
      fingerprint = trust.fingerprints[CKKS_KEY_WRAP_PURPOSE];
    }
  }
  if (flags.signerPub !== undefined) {
    const key = loadPublicKey(flags.signerPub);
    checks.push((_maker, keyId) =>
      keyId === key.keyId
        ? key
        : `it was signed with key ${keyId}, --signer-pub ${flags.signerPub} is key ${key.keyId}`,
    );
  }
  return {
    makers: (maker, keyId) => {
      let found: ReturnType<EnvelopeMakerLookup> = `no check admits ${maker}`;
      for (const check of checks) {
        found = check(maker, keyId);
        if (typeof found === 'string') return found;
      }
      return found;
    },
    fingerprint,
  };
}

/**
 * `cohort keys ckks unwrap --envelope <file> --kem <site.kem> --recipient <site-id>
 * --federation <id> --out <ckks-file> (--config <federation.yaml> | --signer-pub <site.pub>)
 * [--force]`: opens an envelope made by `keys ckks wrap` once its maker is one the site trusts (a
 * registered site of the config's pinned registry, and/or the key of `--signer-pub`) and its
 * secret has the stated fingerprint (and the config's `members.keyFingerprints.ckks`), checks the
 * key loads under the config's CKKS parameters (defaults without a config) and writes it with mode
 * 0600. Refusals: `ENVELOPE_UNSIGNED`, `ENVELOPE_CONTEXT_MISMATCH`, `ENVELOPE_MAKER_REFUSED`,
 * `ENVELOPE_SIGNATURE_INVALID`, `KEY_FINGERPRINT_MISMATCH`; a wrong KEM key or a tampered envelope
 * is `UNWRAP_FAILED`; a key for other parameters is `CKKS_PARAMS_MISMATCH`.
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
      .option(
        '-c, --config <file>',
        'federation config: its crypto.ckks parameters, its pinned registry (the sites that may make envelopes) and members.keyFingerprints',
      )
      .option(
        '--signer-pub <file>',
        'public signing key of the site that made the envelope (<site>.pub), checked out of band',
      )
      .option('-f, --force', 'overwrite an existing file'),
  ).action(async (flags: CkksUnwrapFlags) => {
    assertDistinctOutput(flags.out, { '--envelope': flags.envelope, '--kem': flags.kem });
    const params = ckksParamsFromFlags(flags, ctx);
    const check = unwrapCheck(flags, ctx);
    const envelope = readKeyFile(flags.envelope, false);
    const kem = loadKemKeyPair(flags.kem);
    let secret: Uint8Array;
    let maker: string;
    let fingerprint: string;
    try {
      ({ secret, maker, fingerprint } = openSealedEnvelope(
        kem.secretKey,
        envelope,
        { federation: flags.federation, recipient: flags.recipient, purpose: CKKS_KEY_WRAP_PURPOSE },
        check,
      ));
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
        `of federation ${flags.federation}\nsealed by: ${maker}\nfingerprint: ${fingerprint}\n` +
        `secret key: ${flags.out} (${octalMode(SECRET_KEY_FILE_MODE)})\n`,
    );
  });
}

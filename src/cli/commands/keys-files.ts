import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import type { CkksParams } from '../../../crypto/ckks/index.ts';
import { DEFAULT_CKKS_PARAMS } from '../../../crypto/ckks/index.ts';
import { encodeKemPublicKey } from '../../../crypto/kem/index.ts';
// The signature module's key file modes: owner-only for secrets.
import { PUBLIC_KEY_FILE_MODE, SECRET_KEY_FILE_MODE } from '../../../crypto/signature/key-file-io.ts';
import { CryptoError, InvalidArgumentError } from '../../errors/index.ts';
import { writeAllOrNone } from '../../files/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

/** One file a `keys` command writes. */
export interface KeyOutput {
  readonly path: string;
  readonly bytes: Uint8Array;
  /** Secret material: written 0o600 (forced, also over an existing file). */
  readonly secret: boolean;
}

function fileExists(paths: readonly string[]): CryptoError {
  return new CryptoError(
    'KEY_FILE_EXISTS',
    `refusing to overwrite ${paths.join(', ')} (pass --force to replace ${paths.length === 1 ? 'it' : 'them'})`,
    { details: { paths: [...paths] } },
  );
}

/**
 * Writes every output, or none when one already exists and `force` is off. Without `force`, each
 * path is first claimed with O_EXCL (so a file appearing meanwhile is not clobbered), and on any
 * failure the files this call created are removed again. Does not wipe `bytes`: the caller does.
 *
 * @throws CryptoError `KEY_FILE_EXISTS` or `KEY_FILE_UNWRITABLE`.
 */
export function writeKeyOutputs(outputs: readonly KeyOutput[], force: boolean): void {
  writeAllOrNone(
    outputs.map(({ path, bytes, secret }) => ({
      path,
      bytes,
      mode: secret ? SECRET_KEY_FILE_MODE : PUBLIC_KEY_FILE_MODE,
    })),
    {
      force,
      exists: (paths) => fileExists(paths),
      unwritable: (path, cause) =>
        new CryptoError('KEY_FILE_UNWRITABLE', `cannot write key file ${path}`, { cause, details: { path } }),
    },
  );
}

/**
 * Throws `INVALID_ARGUMENT` when the output path names one of the inputs (writing it would
 * destroy what was just read, e.g. a CKKS key replaced by its envelope under --force).
 */
export function assertDistinctOutput(out: string, inputs: Readonly<Record<string, string>>): void {
  for (const [flag, input] of Object.entries(inputs)) {
    if (resolve(out) === resolve(input)) {
      throw new InvalidArgumentError(`--out ${out} is the same file as ${flag}`, {
        details: { name: 'out' },
      });
    }
  }
}

/** Flags of commands that take an optional federation config for the CKKS parameters. */
export interface CkksConfigFlags extends ConfigFlags {
  config?: string;
}

/**
 * The CKKS parameters of `--config` (with `--set`/environment overrides), or
 * {@link DEFAULT_CKKS_PARAMS} without one.
 *
 * @throws ConfigError from loading the config; InvalidArgumentError for `--set` without `--config`.
 */
export function ckksParamsFromFlags(flags: CkksConfigFlags, ctx: CliContext): CkksParams {
  if (flags.config === undefined) {
    if ((flags.set ?? []).length > 0) {
      throw new InvalidArgumentError('--set needs --config <federation.yaml>', { details: { name: 'set' } });
    }
    return DEFAULT_CKKS_PARAMS;
  }
  const { ckks } = loadConfigWithFlags(flags.config, flags, ctx).crypto;
  return {
    polyModulusDegree: ckks.polyModulusDegree,
    coeffModulus: [...ckks.coeffModulus],
    scaleBits: ckks.scaleBits,
    exactBits: ckks.exactBits,
  };
}

/** First 16 hex characters of a CKKS params id, as the ceremony logs show it. */
export function shortParamsId(paramsId: Uint8Array): string {
  return Buffer.from(paramsId).toString('hex').slice(0, 16);
}

/** `N=8192 q=[60,40,60] scale=2^16 exact=42`. */
export function describeCkksParams(params: CkksParams): string {
  return `N=${params.polyModulusDegree} q=[${params.coeffModulus.join(',')}] scale=2^${params.scaleBits} exact=${params.exactBits}`;
}

/**
 * Fingerprint of an ML-KEM-768 public key: SHA-256 (hex) of its `.kem.pub` file encoding, so
 * `sha256sum site.kem.pub` shows the same value when comparing keys out of band.
 */
export function kemFingerprint(publicKey: Uint8Array): string {
  return createHash('sha256').update(encodeKemPublicKey(publicKey)).digest('hex');
}

/** `0600`-style octal of a mode. */
export function octalMode(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}

const CKKS_KEY_MAGIC = 'CCK1';
const CKKS_KEY_HEADER_BYTES = 4 + 32;

/**
 * The params id in the header of a CKKS secret key file ('CCK1' ‖ paramsId(32) ‖ SEAL key, as
 * `CkksKeyset.exportSecretKey` writes it). Checks framing only; `CkksKeyset.import` checks the rest.
 *
 * @throws CryptoError `KEY_INVALID` when `bytes` do not start with a CCK1 header.
 */
export function ckksKeyParamsId(bytes: Uint8Array, path: string): Uint8Array {
  if (bytes.length <= CKKS_KEY_HEADER_BYTES || fileMagic(bytes) !== CKKS_KEY_MAGIC) {
    throw new CryptoError('KEY_INVALID', `${path} is not a CKKS secret key file (no CCK1 header)`, {
      details: { path },
    });
  }
  return bytes.slice(4, CKKS_KEY_HEADER_BYTES);
}

/** The first four bytes as Latin-1 text (every Cohort key file starts with a 4-character magic). */
export function fileMagic(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes.subarray(0, 4));
}

import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { readKeyFile, writeKeyFile } from '../signature/key-file-io.ts';

const DOMAIN = 'cohort/v1/position-ledger\0';
/** kind (1) ‖ position key (32) ‖ value digest (32). */
const RECORD = 65;
const KIND = { encryption: 1, shares: 2 } as const;
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * A site's persistent record of the ciphertext positions it has used, one per key epoch's
 * folder, so that a restart never breaks the two rules threshold CKKS rests on
 * (docs/threshold-ckks.md, "Two rules"):
 *
 * 1. a site encrypts at most once at a position (two messages at one position reveal their
 *    difference), and
 * 2. a site makes decryption shares for at most one context per position (one contributor list
 *    and one decrypting set): shares of one site for two decrypting sets, or two cohorts, at one
 *    position let a lattice reduction recover a·S_x, and t such sites' a·S_x open every update.
 *    Asked again for the same context, the ledger hands back the bundle it made, byte for byte:
 *    a fresh one would carry fresh flooding noise, and averaging many thins the flood.
 *
 * Each claim is an append of one fixed-size record to `claims.log`, flushed to disk before the
 * caller may act on it; a torn last record (a crash mid-append) is dropped on open, since nothing
 * was sent under it. Records hold hashes only: the ledger says which positions were used, not
 * what was sent.
 */
export class PositionLedger {
  readonly dir: string;
  readonly #claims = new Map<string, { kind: number; value: string }>();
  #fd: number;
  /** Bytes of whole records in the file. */
  #length: number;
  /** Share bundles being made now ({@link shareBundleAsync}), by position key. */
  readonly #making = new Map<string, { value: string; bundle: Promise<Uint8Array> }>();
  /** An append failed and could not be undone: no claim is trusted until the ledger is reopened. */
  #broken = false;

  private constructor(dir: string, fd: number, length: number) {
    this.dir = dir;
    this.#fd = fd;
    this.#length = length;
  }

  /**
   * Opens (creating, owner-only) the ledger in `dir`.
   *
   * @throws CryptoError `LEDGER_UNAVAILABLE` when the folder or file cannot be made or read.
   */
  static open(dir: string): PositionLedger {
    if (typeof dir !== 'string' || dir.length === 0) throw new InvalidArgumentError('dir must be a path');
    const path = join(dir, 'claims.log');
    let fd: number | undefined;
    try {
      mkdirSync(join(dir, 'shares'), { recursive: true, mode: 0o700 });
      fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_APPEND | NO_FOLLOW, 0o600);
      fchmodSync(fd, 0o600);
      const bytes = readFileSync(path);
      const whole = bytes.length - (bytes.length % RECORD);
      if (whole !== bytes.length) {
        ftruncateSync(fd, whole);
        fsyncSync(fd);
      }
      const ledger = new PositionLedger(dir, fd, whole);
      for (let at = 0; at < whole; at += RECORD) {
        const kind = bytes[at]!;
        const key = bytes.subarray(at + 1, at + 33).toString('hex');
        const value = bytes.subarray(at + 33, at + RECORD).toString('hex');
        if (kind !== KIND.encryption && kind !== KIND.shares) {
          throw new CryptoError('LEDGER_UNAVAILABLE', `${path}: record ${at / RECORD} has kind ${kind}`);
        }
        if (!ledger.#claims.has(key)) ledger.#claims.set(key, { kind, value });
      }
      return ledger;
    } catch (cause) {
      if (fd !== undefined) closeSync(fd);
      if (cause instanceof CryptoError) throw cause;
      throw new CryptoError('LEDGER_UNAVAILABLE', `cannot open the position ledger ${path}`, {
        cause,
        details: { path },
      });
    }
  }

  /** Positions claimed so far (both kinds). */
  get size(): number {
    return this.#claims.size;
  }

  /**
   * Claims (epoch, label, index) for one encryption, on disk, before the ciphertext exists.
   *
   * @throws CryptoError `POSITION_REUSED` when the position was claimed before, by this process
   *   or an earlier one.
   */
  claimEncryption(epochId: Uint8Array, label: string, index: number): void {
    const key = positionKey(KIND.encryption, epochId, label, index);
    if (this.#claims.has(key)) {
      throw new CryptoError(
        'POSITION_REUSED',
        `already encrypted at ${label} block ${index} in this key epoch: a second message there would reveal both`,
        { details: { label, index } },
      );
    }
    this.#append(KIND.encryption, key, new Uint8Array(32));
  }

  /**
   * The one share bundle of (epoch, label) for `context` (the canonical bytes of what the shares
   * are for): the stored bundle when it was made for the same context, else `make()` once, stored
   * and claimed before it is returned.
   *
   * @throws CryptoError `SHARES_CONTEXT_CHANGED` when shares were made (or are being made, by
   *   {@link shareBundleAsync}) at this position for another context (another cohort, decrypting
   *   set or aggregate); `SHARES_FORGOTTEN` when they were made for this context but the bundle is
   *   gone (it cannot be made again); `SHARES_IN_PROGRESS` when they are being made for this context.
   */
  shareBundle(epochId: Uint8Array, label: string, context: Uint8Array, make: () => Uint8Array): Uint8Array {
    const claim = this.#shareClaim(epochId, label, context);
    if (claim.made !== undefined) return claim.made;
    const making = this.#making.get(claim.key);
    if (making !== undefined) {
      throw new CryptoError('SHARES_IN_PROGRESS', `decryption shares at ${label} are being made`, {
        details: { label },
      });
    }
    return this.#storeBundle(claim, make());
  }

  /**
   * {@link shareBundle} with an asynchronous `make` (one that yields to the event loop while it
   * computes). While it runs, the position is taken: a call for the same context waits for the
   * same bundle, a call for another context is refused with `SHARES_CONTEXT_CHANGED`, so no
   * interleaving can make two share sets at one position.
   */
  async shareBundleAsync(
    epochId: Uint8Array,
    label: string,
    context: Uint8Array,
    make: () => Promise<Uint8Array>,
  ): Promise<Uint8Array> {
    const claim = this.#shareClaim(epochId, label, context);
    if (claim.made !== undefined) return claim.made;
    const making = this.#making.get(claim.key);
    if (making !== undefined) return making.bundle;
    const bundle = (async () => this.#storeBundle(claim, await make()))();
    this.#making.set(claim.key, { value: claim.value.toString('hex'), bundle });
    try {
      return await bundle;
    } finally {
      this.#making.delete(claim.key);
    }
  }

  /**
   * The claim of (epoch, label) for `context`: the bundle already made for it, or what making one
   * needs; throws when the position is spent on another context (made, or being made).
   */
  #shareClaim(
    epochId: Uint8Array,
    label: string,
    context: Uint8Array,
  ): { key: string; value: Buffer; file: string; made?: Uint8Array } {
    if (!(context instanceof Uint8Array)) throw new InvalidArgumentError('context must be bytes');
    const key = positionKey(KIND.shares, epochId, label, 0);
    const value = createHash('sha256').update(context).digest();
    const file = join(this.dir, 'shares', `${key}.cds`);
    const changed = () =>
      new CryptoError(
        'SHARES_CONTEXT_CHANGED',
        `decryption shares at ${label} were made for another cohort, decrypting set or aggregate: a second set would open a·S (start a new attempt)`,
        { details: { label } },
      );
    const making = this.#making.get(key);
    if (making !== undefined && making.value !== value.toString('hex')) throw changed();
    const seen = this.#claims.get(key);
    if (seen === undefined) return { key, value, file };
    if (seen.value !== value.toString('hex')) throw changed();
    if (!existsSync(file)) {
      throw new CryptoError(
        'SHARES_FORGOTTEN',
        `decryption shares at ${label} were made and their bundle is gone: new ones would thin the flooding`,
        { details: { label } },
      );
    }
    return { key, value, file, made: readKeyFile(file, true) };
  }

  #storeBundle(claim: { key: string; value: Buffer; file: string }, bundle: Uint8Array): Uint8Array {
    // The bundle first, then the claim: a crash between leaves an unclaimed file, made again.
    writeKeyFile(claim.file, bundle, true);
    this.#append(KIND.shares, claim.key, claim.value);
    return bundle;
  }

  /** Closes the file. */
  close(): void {
    if (this.#fd >= 0) closeSync(this.#fd);
    this.#fd = -1;
  }

  #append(kind: number, key: string, value: Uint8Array): void {
    if (this.#fd < 0) throw new InvalidArgumentError('the position ledger is closed');
    if (this.#broken) {
      throw new CryptoError(
        'LEDGER_UNAVAILABLE',
        `the position ledger in ${this.dir} failed a write: reopen it`,
      );
    }
    const record = new Uint8Array(RECORD);
    record[0] = kind;
    record.set(Buffer.from(key, 'hex'), 1);
    record.set(value, 33);
    try {
      let at = 0;
      while (at < RECORD) at += writeSync(this.#fd, record, at, RECORD - at);
      fsyncSync(this.#fd);
      this.#length += RECORD;
    } catch (cause) {
      // A part of the record may be on disk: cut it off, so the next record starts on a boundary
      // (a later record read at a shifted offset would forget a claim). If that fails too, refuse
      // every claim until the ledger is reopened, which drops a torn tail.
      try {
        ftruncateSync(this.#fd, this.#length);
        fsyncSync(this.#fd);
      } catch {
        this.#broken = true;
      }
      throw new CryptoError('LEDGER_UNAVAILABLE', `cannot record a claim in ${this.dir}`, { cause });
    }
    this.#claims.set(key, { kind, value: Buffer.from(value).toString('hex') });
  }
}

function positionKey(kind: number, epochId: Uint8Array, label: string, index: number): string {
  if (!(epochId instanceof Uint8Array) || epochId.length !== 32)
    throw new InvalidArgumentError('epochId must be 32 bytes');
  if (typeof label !== 'string' || label.length === 0)
    throw new InvalidArgumentError('label must be a string');
  if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff)
    throw new InvalidArgumentError(`index must be an integer in [0, 2^32), got ${index}`);
  const i = Buffer.alloc(5);
  i[0] = kind;
  i.writeUInt32BE(index, 1);
  return createHash('sha256')
    .update(DOMAIN)
    .update(epochId)
    .update(label)
    .update('\0')
    .update(i)
    .digest('hex');
}

import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { readKeyFile, writeKeyFile } from '../signature/key-file-io.ts';
import { assertPoly, type RnsPoly, wipe } from './rns-poly.ts';
import type { ThresholdContext } from './threshold-context.ts';
import { assertRoster, holds, type ThresholdRoster } from './threshold-epoch.ts';

/**
 * What one site holds of a key epoch: its own secret and, when it is a holder, the share of every
 * roster site's secret dealt to it (its own included). Never anyone's whole secret but its own,
 * never the sum.
 */
export interface ThresholdKeyMaterial {
  readonly roster: ThresholdRoster;
  readonly epochId: Uint8Array;
  /** The site this material belongs to (one of the roster). */
  readonly self: string;
  /** The site's own secret (NTT form). */
  readonly secret: RnsPoly;
  /**
   * Dealer id → the share of the dealer's secret held by {@link self}, for every roster site when
   * it holds; empty when it does not.
   */
  readonly shares: ReadonlyMap<string, RnsPoly>;
}

const MAGIC = new TextEncoder().encode('CTK2');

/**
 * The key file's bytes: 'CTK2' ‖ params id (32) ‖ epoch id (32) ‖ u8 federation length ‖ federation ‖
 * u32 threshold ‖ u32 generation ‖ u32 sites ‖
 * per site (u8 id length ‖ id ‖ u32 point ‖ u8 holds) ‖ u8 self length ‖ self ‖ secret words ‖ when
 * self holds, one share's words per site in roster order. Words are 64-bit little-endian. Wipe the
 * result after use.
 */
export function encodeThresholdKey(ctx: ThresholdContext, m: ThresholdKeyMaterial): Uint8Array {
  assertRoster(m.roster);
  if (!m.roster.paramsId.every((b, i) => b === ctx.paramsId[i])) {
    throw new InvalidArgumentError('key material is for other threshold parameters than the context');
  }
  if (!m.roster.sites.some((s) => s.id === m.self))
    throw new InvalidArgumentError(`${m.self} is not in the roster`);
  assertPoly(ctx, m.secret, 'secret');
  const head: number[] = [];
  const u32 = (v: number) => head.push(v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255);
  const str = (s: string) => {
    const b = new TextEncoder().encode(s);
    head.push(b.length, ...b);
  };
  str(m.roster.federation);
  u32(m.roster.threshold);
  u32(m.roster.generation);
  u32(m.roster.sites.length);
  for (const s of m.roster.sites) {
    str(s.id);
    u32(s.point);
    head.push(holds(m.roster, s.id) ? 1 : 0);
  }
  str(m.self);
  const holder = holds(m.roster, m.self);
  if (!holder && m.shares.size > 0) throw new InvalidArgumentError(`${m.self} holds no shares in its roster`);
  const polys = [m.secret, ...(holder ? m.roster.sites.map((s) => m.shares.get(s.id)) : [])];
  const out = new Uint8Array(MAGIC.length + 64 + head.length + polys.length * ctx.polyBytes);
  out.set(MAGIC, 0);
  out.set(m.roster.paramsId, 4);
  out.set(m.epochId, 36);
  out.set(head, 68);
  let at = 68 + head.length;
  polys.forEach((p, k) => {
    if (p === undefined) throw new InvalidArgumentError(`no share of ${m.roster.sites[k - 1]!.id}'s secret`);
    assertPoly(ctx, p, k === 0 ? 'secret' : `share of ${m.roster.sites[k - 1]!.id}`);
    out.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength), at);
    at += ctx.polyBytes;
  });
  return out;
}

/**
 * Parses a key file's bytes, checking the parameters, the layout and every word.
 *
 * @throws CryptoError `KEY_INVALID` (malformed, with what) or `CKKS_PARAMS_MISMATCH`.
 */
export function decodeThresholdKey(
  ctx: ThresholdContext,
  bytes: Uint8Array,
  federation: string,
): ThresholdKeyMaterial {
  const bad = (why: string) => new CryptoError('KEY_INVALID', `threshold key file: ${why}`);
  if (bytes.length < 76 || !MAGIC.every((b, i) => bytes[i] === b)) throw bad('no CTK2 header');
  if (!bytes.subarray(4, 36).every((b, i) => b === ctx.paramsId[i])) {
    throw new CryptoError(
      'CKKS_PARAMS_MISMATCH',
      'threshold key file was made for other threshold parameters',
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 68;
  const need = (n: number) => {
    if (at + n > bytes.length) throw bad('truncated');
  };
  const u32 = () => {
    need(4);
    const v = view.getUint32(at);
    at += 4;
    return v;
  };
  const str = () => {
    need(1);
    const n = bytes[at]!;
    need(1 + n);
    const s = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(at + 1, at + 1 + n));
    at += 1 + n;
    return s;
  };
  const madeFor = str();
  if (madeFor !== federation)
    throw bad(`made for federation ${JSON.stringify(madeFor)}, not ${JSON.stringify(federation)}`);
  const threshold = u32();
  const generation = u32();
  const count = u32();
  if (count < 1 || count > 65_536) throw bad(`${count} sites`);
  const sites: { id: string; point: number }[] = [];
  const holders: string[] = [];
  for (let k = 0; k < count; k++) {
    const site = { id: str(), point: u32() };
    need(1);
    const flag = bytes[at++]!;
    if (flag > 1) throw bad(`holder flag ${flag} of ${site.id}`);
    if (flag === 1) holders.push(site.id);
    sites.push(site);
  }
  const self = str();
  const roster: ThresholdRoster = {
    federation,
    paramsId: ctx.paramsId.slice(),
    threshold,
    generation,
    sites,
    ...(holders.length === sites.length ? {} : { holders }),
  };
  try {
    assertRoster(roster);
  } catch (cause) {
    throw new CryptoError('KEY_INVALID', `threshold key file: ${(cause as Error).message}`, { cause });
  }
  if (!sites.some((s) => s.id === self)) throw bad(`${self} is not in its roster`);
  const holder = holds(roster, self);
  if (bytes.length - at !== (holder ? count + 1 : 1) * ctx.polyBytes)
    throw bad(`${bytes.length - at} bytes of keys for ${count} sites`);
  const poly = (name: string) => {
    const p = new BigUint64Array(
      bytes.buffer.slice(bytes.byteOffset + at, bytes.byteOffset + at + ctx.polyBytes),
    );
    at += ctx.polyBytes;
    try {
      assertPoly(ctx, p, name);
    } catch (cause) {
      wipe(p);
      throw new CryptoError('KEY_INVALID', `threshold key file: ${name} out of range`, { cause });
    }
    return p;
  };
  const secret = poly('secret');
  const shares = new Map<string, RnsPoly>();
  if (holder) for (const s of sites) shares.set(s.id, poly(`share of ${s.id}`));
  return { roster, epochId: bytes.slice(36, 68), self, secret, shares };
}

/** Writes the key material to `path`, owner-only (0600); the encoded bytes are wiped. */
export function saveThresholdKey(ctx: ThresholdContext, path: string, m: ThresholdKeyMaterial): void {
  const bytes = encodeThresholdKey(ctx, m);
  try {
    writeKeyFile(path, bytes, true);
  } finally {
    bytes.fill(0);
  }
}

/**
 * Reads a key file written by {@link saveThresholdKey}, refusing one group or others may read.
 *
 * @throws CryptoError `KEY_FILE_UNREADABLE`, `KEY_FILE_PERMISSIONS`, `KEY_INVALID`, `CKKS_PARAMS_MISMATCH`.
 */
export function loadThresholdKey(
  ctx: ThresholdContext,
  path: string,
  federation: string,
): ThresholdKeyMaterial {
  const bytes = readKeyFile(path, true);
  try {
    return decodeThresholdKey(ctx, bytes, federation);
  } finally {
    bytes.fill(0);
  }
}

/** Overwrites the secret and every share. */
export function wipeThresholdKey(m: ThresholdKeyMaterial): void {
  wipe(m.secret);
  for (const s of m.shares.values()) wipe(s);
}

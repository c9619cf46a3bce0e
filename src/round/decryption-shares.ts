import { createCipheriv, createDecipheriv, type DecipherGCM, hkdfSync, randomBytes } from 'node:crypto';
import { sha256 } from '../../crypto/digest/index.ts';
import { type PublicSigningKey, type SigningKeyPair, sign, verify } from '../../crypto/signature/index.ts';
import {
  addInto,
  commonRandomPoly,
  decryptionShare,
  type PositionLedger,
  packedBytes,
  packWords,
  type RnsPoly,
  rosterHolders,
  roundDecryptionKey,
  SharesDecryptor,
  type ThresholdKeyMaterial,
  type ThresholdLaneContext,
  unpackWords,
  wipe,
  zeroPoly,
} from '../../crypto/threshold/index.ts';
import { BlockRejectedError, InvalidArgumentError } from '../errors/index.ts';
import { CanonicalWriter } from '../protocol/canonical-writer.ts';
import {
  type ControlBodies,
  payloadPositionLabel,
  runSteps,
  runStepsYielding,
  type Steps,
} from '../protocol/index.ts';
import { decodeAggregateObject, encodeAggregateObject } from './aggregate-object.ts';

/**
 * One decrypting site's decryption shares of a round's aggregate, sealed and signed.
 *
 * The shares are bound to everything that makes them safe to release: the round attempt (hence
 * every block's position), the aggregate's digest, the contributors whose secrets they open (a site
 * makes shares for one contributor list per attempt: shares for C and for C without k would
 * together open k's update), the decrypting set whose Lagrange coefficients they carry, and the key
 * epoch. They are sealed with AES-256-GCM under a key derived from the federation data key, which
 * only sites hold: the coordinator relays and stores them but cannot combine them, so the model
 * stays the sites'. The site signs the SHA-256 digest of the whole bundle (domain
 * {@link SHARES_DOMAIN}): a bundle of a 10M-parameter aggregate is tens of megabytes, which the
 * lattice signature's own hash (SHAKE-256 in JavaScript) would take seconds over.
 */

/** Signature domain of a share bundle ('CDS2'): the message signed is SHA-256 of the bundle's body. */
export const SHARES_DOMAIN = 'threshold-shares-sha256';
/**
 * Signature domain of a 'CDS1' bundle, made before bundles were signed over their digest: the
 * message signed is the body itself. Still read (stored rounds are replayed, a ledger hands back a
 * bundle it made), never made.
 */
const SHARES_DOMAIN_V1 = 'threshold-shares';

/** Bundle formats by magic: what the signature covers. */
const FORMATS = {
  1: { magic: new TextEncoder().encode('CDS1'), domain: SHARES_DOMAIN_V1, digest: false },
  2: { magic: new TextEncoder().encode('CDS2'), domain: SHARES_DOMAIN, digest: true },
} as const;
type BundleFormat = keyof typeof FORMATS;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** What a bundle's shares are for; every field is bound into the seal and the signature. */
export interface ShareContext {
  readonly federation: string;
  readonly round: number;
  /** The round attempt (its positions are the blocks' common random polynomials). */
  readonly attempt: Uint8Array;
  /** The key epoch's id. */
  readonly epochId: Uint8Array;
  /** SHA-256 digest of the aggregate the shares decrypt. */
  readonly aggregateDigest: Uint8Array;
  /** Blocks of the aggregate. */
  readonly blocks: number;
  /** The contributors, sorted, no repeats. */
  readonly contributors: readonly string[];
  /** The decrypting set, sorted by site, each with its evaluation point. */
  readonly decrypting: readonly { readonly site: string; readonly point: number }[];
  /**
   * `round.minContributors`: no site makes shares for fewer contributors, since an aggregate that
   * small would show individual updates.
   */
  readonly minContributors: number;
}

/** Checks a share context's shape, naming the field. */
export function assertShareContext(c: ShareContext): void {
  const bytes = (v: Uint8Array, n: number, name: string) => {
    if (!(v instanceof Uint8Array) || (n > 0 && v.length !== n) || v.length > 64) {
      throw new InvalidArgumentError(`share context ${name} must be ${n > 0 ? n : 'at most 64'} bytes`);
    }
  };
  bytes(c.attempt, 0, 'attempt');
  bytes(c.epochId, 32, 'epochId');
  bytes(c.aggregateDigest, 32, 'aggregateDigest');
  if (!Number.isSafeInteger(c.round) || c.round < 0)
    throw new InvalidArgumentError(`share context round ${c.round}`);
  if (!Number.isInteger(c.blocks) || c.blocks < 1 || c.blocks > 65_536) {
    throw new InvalidArgumentError(`share context blocks ${c.blocks} must be in [1, 65536]`);
  }
  const sorted = (xs: readonly string[], name: string) => {
    for (let k = 1; k < xs.length; k++) {
      if (!(xs[k - 1]! < xs[k]!))
        throw new InvalidArgumentError(`share context ${name} must be sorted without repeats`);
    }
  };
  if (!Number.isInteger(c.minContributors) || c.minContributors < 1 || c.minContributors > 65_536) {
    throw new InvalidArgumentError(
      `share context minContributors ${c.minContributors} must be in [1, 65536]`,
    );
  }
  if (c.contributors.length < c.minContributors) {
    throw new InvalidArgumentError(
      `share context names ${c.contributors.length} contributor(s), round.minContributors is ${c.minContributors}: an aggregate this small would show individual updates`,
    );
  }
  sorted(c.contributors, 'contributors');
  if (c.decrypting.length === 0) throw new InvalidArgumentError('share context names no decrypting site');
  sorted(
    c.decrypting.map((d) => d.site),
    'decrypting',
  );
}

/** Canonical bytes of a share context (length-prefixed fields, in declaration order). */
export function shareContextBytes(c: ShareContext): Uint8Array {
  assertShareContext(c);
  const w = new CanonicalWriter()
    .str(c.federation)
    .u64(c.round)
    .bytes(c.attempt)
    .bytes(c.epochId)
    .bytes(c.aggregateDigest)
    .u32(c.blocks)
    .u32(c.minContributors)
    .u32(c.contributors.length);
  for (const s of c.contributors) w.str(s);
  w.u32(c.decrypting.length);
  for (const d of c.decrypting) w.str(d.site).u32(d.point);
  return w.finish();
}

function sealKey(dataKey: Uint8Array, context: Uint8Array, site: string): Buffer {
  const info = Buffer.concat([Buffer.from(`cohort/v1/threshold-shares\0${site}\0`), context]);
  return Buffer.from(hkdfSync('sha256', dataKey, new Uint8Array(0), info, 32));
}

/** What a decrypting site needs to make its bundle. */
export interface MakeSharesInput {
  readonly lanes: ThresholdLaneContext;
  readonly context: ShareContext;
  /** The site's key material for the context's epoch. */
  readonly material: ThresholdKeyMaterial;
  readonly signer: { readonly id: string; readonly key: SigningKeyPair };
  /** The federation data key (32 bytes). */
  readonly dataKey: Uint8Array;
  /**
   * The site's position ledger for the epoch: one bundle per round attempt, whatever is asked
   * (docs/threshold-ckks.md, "Two rules").
   */
  readonly ledger: PositionLedger;
}

/**
 * The signed, sealed bundle of this site's decryption shares for every block of the aggregate:
 * 'CDS2' ‖ u32 context length ‖ context ‖ u32 site length ‖ site ‖ nonce (12) ‖ AES-256-GCM of the
 * packed shares ‖ tag (16) ‖ u16 signature length ‖ signature.
 *
 * A site makes one bundle per round attempt: asked again for the same context it returns the
 * bundle it made (from its ledger), and asked for another (another cohort, decrypting set or
 * aggregate at the same positions) it refuses, since two share sets at one position open a·S_x.
 *
 * @throws InvalidArgumentError when the site is not in the decrypting set, the set is smaller than
 *   the threshold or names a site that holds no shares or a point the roster does not, the epoch is not its material's, or a
 *   contributor has no share in it; CryptoError `SHARES_CONTEXT_CHANGED` from the ledger.
 */
export function makeShareBundle(input: MakeSharesInput): Uint8Array {
  const plan = bundlePlan(input);
  return input.ledger.shareBundle(input.context.epochId, plan.label, plan.contextBytes, () =>
    runSteps(bundleSteps(input, plan)),
  );
}

/**
 * {@link makeShareBundle}, sharing the event loop: it yields every `STEP_SLICE_MS` of work
 * (the shares of a 10M-parameter aggregate take seconds), so the site's heartbeats and connection
 * stay live meanwhile. Same bundle rules, same errors; a second call for the position while one
 * is being made waits for it (the ledger's `shareBundleAsync`).
 */
export async function makeShareBundleYielding(input: MakeSharesInput): Promise<Uint8Array> {
  const plan = bundlePlan(input);
  return input.ledger.shareBundleAsync(input.context.epochId, plan.label, plan.contextBytes, () =>
    runStepsYielding(bundleSteps(input, plan)),
  );
}

/** The checked layout of a bundle to make: its context bytes, head, position label and own point. */
interface BundlePlan {
  readonly contextBytes: Uint8Array;
  readonly head: Uint8Array;
  readonly label: string;
  readonly point: number;
}

function bundlePlan(input: MakeSharesInput): BundlePlan {
  const { lanes, context, material, signer } = input;
  const { contextBytes, head } = layout(lanes, context, signer.id);
  const self = context.decrypting.find((d) => d.site === signer.id);
  if (self === undefined) throw new InvalidArgumentError(`${signer.id} is not in the decrypting set`);
  if (material.self !== signer.id || !material.epochId.every((b, i) => b === context.epochId[i])) {
    throw new InvalidArgumentError(`key material is not ${signer.id}'s for this epoch`);
  }
  if (context.decrypting.length < material.roster.threshold) {
    throw new InvalidArgumentError(
      `a decrypting set of ${context.decrypting.length} is short of the threshold ${material.roster.threshold}`,
    );
  }
  // Only holders count toward t: a set padded with a site that holds no share could never
  // decrypt, and would spend the honest holders' one bundle at this position for nothing.
  const holders = rosterHolders(material.roster);
  for (const d of context.decrypting) {
    const point = holders.find((s) => s.id === d.site)?.point;
    if (point !== d.point) {
      throw new InvalidArgumentError(
        point === undefined
          ? `${d.site} holds no shares in the epoch`
          : `the roster gives ${d.site} point ${point}, not ${d.point}`,
      );
    }
  }
  for (const c of context.contributors) {
    if (!material.shares.has(c)) throw new InvalidArgumentError(`no share of ${c}'s secret in this epoch`);
  }
  const label = payloadPositionLabel({
    federation: context.federation,
    round: context.round,
    attempt: context.attempt,
  });
  return { contextBytes, head, label, point: self.point };
}

/** The bundle's shares, block by block (a step each), then its seal and signature. */
function* bundleSteps(input: MakeSharesInput, plan: BundlePlan): Steps<Uint8Array> {
  const { lanes, context, material, signer, dataKey } = input;
  const { contextBytes, head, label } = plan;
  const tc = lanes.tc;
  const sum = zeroPoly(tc);
  for (const c of context.contributors) addInto(tc, sum, material.shares.get(c)!);
  const key = roundDecryptionKey(
    tc,
    sum,
    context.decrypting.map((d) => d.point),
    plan.point,
  );
  wipe(sum);
  const plain = new Uint8Array(context.blocks * packedBytes(tc));
  let done = false;
  try {
    for (let b = 0; b < context.blocks; b++) {
      const d = decryptionShare(tc, key, commonRandomPoly(tc, context.epochId, label, b));
      plain.set(packWords(tc, d), b * packedBytes(tc));
      wipe(d);
      yield;
    }
    done = true;
  } catch (err) {
    plain.fill(0);
    throw err;
  } finally {
    // Also when the steps are abandoned midway (no catch runs then): neither the round's key share
    // nor the shares made so far outlive them. `plain` is still needed below when all went well.
    wipe(key);
    if (!done) plain.fill(0);
  }
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealKey(dataKey, contextBytes, signer.id), nonce);
  cipher.setAAD(head);
  const sealed = Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  plain.fill(0);
  const body = Buffer.concat([head, nonce, sealed]);
  const signature = sign(signer.key, SHARES_DOMAIN, sha256(body));
  return new Uint8Array(
    Buffer.concat([body, Uint8Array.of(signature.length >> 8, signature.length & 255), signature]),
  );
}

/** What a reader checks a bundle against. */
export interface VerifySharesInput {
  readonly lanes: ThresholdLaneContext;
  /** The context the reader expects (from the share request and its own view of the round). */
  readonly context: ShareContext;
  /** The site the bundle must come from (one of the decrypting set). */
  readonly site: string;
  /** The site's signing key as the reader's registry has it. */
  readonly key: PublicSigningKey;
}

/** What a site opening a bundle needs beyond {@link VerifySharesInput}. */
export interface OpenSharesInput extends VerifySharesInput {
  readonly dataKey: Uint8Array;
}

const MAX_SIGNATURE_BYTES = 8192;

/** A bundle's parts before its nonce: 'CDS2' (or 'CDS1') ‖ context (length-prefixed) ‖ site (length-prefixed). */
function layout(lanes: ThresholdLaneContext, context: ShareContext, site: string, format: BundleFormat = 2) {
  const contextBytes = shareContextBytes(context);
  const head = Buffer.concat([
    FORMATS[format].magic,
    new CanonicalWriter().bytes(contextBytes).str(site).finish(),
  ]);
  const sealedLength = context.blocks * packedBytes(lanes.tc) + TAG_BYTES;
  return { contextBytes, head, bodyLength: head.length + NONCE_BYTES + sealedLength };
}

/**
 * Checks a bundle without opening it, cheapest first: size, magic, the context byte for byte, the
 * site, then the signature; what the coordinator does before it stores a bundle it cannot read.
 *
 * @throws BlockRejectedError `SHARES_INVALID` with the reason.
 */
export function verifyShareBundle(bytes: Uint8Array, input: VerifySharesInput): void {
  verifiedLayout(bytes, input);
}

/** {@link verifyShareBundle}, returning the bundle's layout for {@link openShareBundle}. */
function verifiedLayout(bytes: Uint8Array, input: VerifySharesInput): ReturnType<typeof layout> {
  const { lanes, context, site } = input;
  const refuse = (why: string) =>
    new BlockRejectedError('SHARES_INVALID', `decryption shares of ${site}: ${why}`, { details: { site } });
  if (!context.decrypting.some((d) => d.site === site)) throw refuse('not in the decrypting set');
  const v1 = FORMATS[1].magic;
  const format: BundleFormat =
    bytes instanceof Uint8Array && bytes.length >= v1.length && v1.every((b, i) => bytes[i] === b) ? 1 : 2;
  const parts = layout(lanes, context, site, format);
  const { head, bodyLength } = parts;
  if (
    !(bytes instanceof Uint8Array) ||
    bytes.length < bodyLength + 2 ||
    bytes.length > bodyLength + 2 + MAX_SIGNATURE_BYTES
  ) {
    throw refuse(`${bytes?.length} bytes, expected ${bodyLength} and a signature`);
  }
  if (!head.every((b, i) => bytes[i] === b))
    throw refuse('made for another round, aggregate, cohort, set or site');
  const sigLength = (bytes[bodyLength]! << 8) | bytes[bodyLength + 1]!;
  if (bytes.length !== bodyLength + 2 + sigLength) throw refuse('malformed signature length');
  let ok: boolean;
  try {
    const body = bytes.subarray(0, bodyLength);
    const { domain, digest } = FORMATS[format];
    ok = verify(input.key, domain, digest ? sha256(body) : body, bytes.subarray(bodyLength + 2));
  } catch (cause) {
    throw new BlockRejectedError('SHARES_INVALID', `decryption shares of ${site}: bad signature`, {
      cause,
      details: { site },
    });
  }
  if (!ok) throw refuse('bad signature');
  return parts;
}

/**
 * Opens a bundle ({@link verifyShareBundle}, then the seal); returns one share per block, every
 * word checked against its prime.
 *
 * @throws BlockRejectedError `SHARES_INVALID` with the reason.
 */
export function openShareBundle(bytes: Uint8Array, input: OpenSharesInput): RnsPoly[] {
  return runSteps(openSteps(bytes, input));
}

/**
 * {@link openShareBundle}, sharing the event loop: it yields every `STEP_SLICE_MS` of work (the
 * bundle of a 10M-parameter aggregate is tens of megabytes to unseal and unpack). Same result,
 * same errors.
 */
export function openShareBundleYielding(bytes: Uint8Array, input: OpenSharesInput): Promise<RnsPoly[]> {
  return runStepsYielding(openSteps(bytes, input));
}

/** Bytes of sealed shares deciphered per step. */
const OPEN_CHUNK_BYTES = 1 << 20;

function* openSteps(bytes: Uint8Array, input: OpenSharesInput): Steps<RnsPoly[]> {
  const { contextBytes, head, bodyLength } = verifiedLayout(bytes, input);
  const { lanes, context, site } = input;
  const tc = lanes.tc;
  const nonce = bytes.subarray(head.length, head.length + NONCE_BYTES);
  const sealed = bytes.subarray(head.length + NONCE_BYTES, bodyLength);
  const unsealed = (cause: unknown) =>
    new BlockRejectedError('SHARES_INVALID', `decryption shares of ${site}: the seal does not open`, {
      cause,
      details: { site },
    });
  const plain = Buffer.alloc(Math.max(0, sealed.length - TAG_BYTES));
  try {
    let decipher: DecipherGCM;
    try {
      decipher = createDecipheriv('aes-256-gcm', sealKey(input.dataKey, contextBytes, site), nonce);
      decipher.setAAD(head);
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    } catch (cause) {
      throw unsealed(cause);
    }
    for (let at = 0; at < plain.length; at += OPEN_CHUNK_BYTES) {
      const end = Math.min(plain.length, at + OPEN_CHUNK_BYTES);
      decipher.update(sealed.subarray(at, end)).copy(plain, at);
      yield;
    }
    try {
      decipher.final();
    } catch (cause) {
      // Nothing deciphered is used before the tag checks.
      throw unsealed(cause);
    }
    const shares: RnsPoly[] = [];
    let done = false;
    try {
      for (let b = 0; b < context.blocks; b++) {
        const chunk = plain.subarray(b * packedBytes(tc), (b + 1) * packedBytes(tc));
        try {
          shares.push(unpackWords(tc, new Uint8Array(chunk)));
        } catch (cause) {
          throw new BlockRejectedError(
            'SHARES_INVALID',
            `decryption shares of ${site}: block ${b} out of range`,
            {
              cause,
              details: { site },
            },
          );
        }
        yield;
      }
      done = true;
      return shares;
    } finally {
      // Failed or abandoned: the shares unpacked so far are wiped too.
      if (!done) for (const d of shares) wipe(d);
    }
  } finally {
    plain.fill(0);
  }
}

/**
 * The decryptor of an aggregate from one opened bundle per decrypting site (keyed by site).
 *
 * @throws InvalidArgumentError when a site of the set has no bundle or a bundle has the wrong count.
 */
export function sharesDecryptor(
  lanes: ThresholdLaneContext,
  context: ShareContext,
  bundles: ReadonlyMap<string, readonly RnsPoly[]>,
): SharesDecryptor {
  const perBlock: RnsPoly[][] = Array.from({ length: context.blocks }, () => []);
  for (const d of context.decrypting) {
    const shares = bundles.get(d.site);
    if (shares === undefined || shares.length !== context.blocks) {
      throw new InvalidArgumentError(`no complete decryption shares of ${d.site}`);
    }
    shares.forEach((s, b) => {
      perBlock[b]!.push(s);
    });
  }
  return new SharesDecryptor(lanes, perBlock);
}

/** The share context a share request names (cohort.proto `ShareRequest`, less the object). */
export function shareContextOf(request: ControlBodies['share-request']): ShareContext {
  return {
    federation: request.federation,
    round: request.round,
    attempt: request.attempt,
    epochId: request.epochId,
    aggregateDigest: request.aggregateDigest,
    blocks: request.blocks,
    contributors: request.contributors,
    decrypting: request.decrypting.map((d) => ({ site: d.site, point: d.point })),
    minContributors: request.minContributors,
  };
}

/** The object the decryption shares of round `round` are stored as: `round-<n>-shares`, beside its aggregate. */
export function sharesObjectName(round: number): string {
  if (!Number.isSafeInteger(round) || round < 1)
    throw new InvalidArgumentError(`round ${round} must be a positive integer`);
  return `round-${round}-shares`;
}

/**
 * The object the share request of round `round` is stored as before it is published:
 * `round-<n>-share-request`. The store is write-once, so every decrypting site reads the same
 * request there: one context per round attempt federation-wide, whatever the coordinator sends.
 */
export function shareRequestObjectName(round: number): string {
  if (!Number.isSafeInteger(round) || round < 1)
    throw new InvalidArgumentError(`round ${round} must be a positive integer`);
  return `round-${round}-share-request`;
}

/**
 * The stored shares of a round: the coordinator-signed share request exactly as published (it
 * names the decrypting set), then one bundle per decrypting site in the request's order, framed
 * as an aggregate object is (u32 count, then u32 length ‖ bytes each).
 */
export function encodeSharesObject(request: Uint8Array, bundles: readonly Uint8Array[]): Uint8Array {
  return encodeAggregateObject([request, ...bundles]);
}

/** Splits a stored shares object ({@link encodeSharesObject}); `MALFORMED` when it is not one. */
export function decodeSharesObject(bytes: Uint8Array): { request: Uint8Array; bundles: Uint8Array[] } {
  const [request, ...bundles] = decodeAggregateObject(bytes);
  if (request === undefined || bundles.length === 0) {
    throw new BlockRejectedError('MALFORMED', 'a shares object holds a request and at least one bundle');
  }
  return { request, bundles };
}

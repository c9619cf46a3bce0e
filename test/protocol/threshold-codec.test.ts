// Threshold CKKS through the real codec: sites encode signed updates under their own secrets, the
// aggregation code sums the payloads it cannot read, and t sites' decryption shares decode the
// exact lane sums with the aggregate MAC checked, as a shared key did.
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CKKS_PARAMS, PlainLaneContext, PlainLaneKeyset } from '../../crypto/ckks/index.ts';
import type { LaneKeyset } from '../../crypto/lanes/index.ts';
import { AggregateMacKey } from '../../crypto/mac/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../crypto/signature/index.ts';
import {
  addInto,
  commonRandomPoly,
  DEFAULT_THRESHOLD_PARAMS,
  decryptionShare,
  getThresholdContext,
  type RnsPoly,
  roundDecryptionKey,
  SharesDecryptor,
  SiteSecret,
  ThresholdLaneContext,
  ThresholdLaneKeyset,
  zeroPoly,
} from '../../crypto/threshold/index.ts';
import {
  BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  encodeUpdate,
  payloadPositionLabel,
  sumUpdates,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { randomUpdate, roundContext, roundMac } from '../helpers/codec-fixture.ts';
import { blockReason } from '../helpers/error-code.ts';

const SITES = [1, 2, 3, 4];
const THRESHOLD = 3;
const PARAMS = 20_000;
const ATTEMPT = Uint8Array.of(7, 7);
const epoch = new Uint8Array(32).fill(9);

let ctx: ThresholdLaneContext;
let secrets: Map<number, SiteSecret>;
let held: Map<number, Map<number, RnsPoly>>;
let keysets: Map<number, ThresholdLaneKeyset>;
let signers: Map<string, SigningKeyPair>;
let macKey: AggregateMacKey;
const context = roundContext(7);
const mac = () => roundMac(macKey, context, ATTEMPT);

function encode(site: number, keyset: LaneKeyset, seed: number) {
  return encodeUpdate({
    update: randomUpdate(PARAMS, 100 + site, 0.05),
    residual: null,
    credentials: { signer: `site-${site}`, ckks: keyset, signing: signers.get(`site-${site}`)!, mac: mac() },
    context,
    options: DEFAULT_CODEC_OPTIONS,
    exampleWeight: 10,
    roundingSeed: { key0: seed, key1: 7 },
  });
}

function verifier(paramsId: Uint8Array): BlockVerifier {
  return new BlockVerifier({
    context,
    ckksParamsId: paramsId,
    keys: (s) => signers.get(s),
    allowedAlgorithms: ['falcon-512'],
  });
}

/** Decryption shares of `decrypting` for an aggregate of `cohort`, one list per block. */
function shares(cohort: number[], decrypting: number[], blocks: number): RnsPoly[][] {
  const label = payloadPositionLabel(mac().nonce);
  return Array.from({ length: blocks }, (_, b) => {
    const crp = commonRandomPoly(ctx.tc, epoch, label, b);
    return decrypting.map((x) => {
      const sum = zeroPoly(ctx.tc);
      for (const i of cohort) addInto(ctx.tc, sum, held.get(x)!.get(i)!);
      return decryptionShare(ctx.tc, roundDecryptionKey(ctx.tc, sum, decrypting, x), crp);
    });
  });
}

let updates: VerifiedUpdate[];
let plainUpdates: VerifiedUpdate[];
let plain: PlainLaneContext;

beforeAll(async () => {
  ctx = new ThresholdLaneContext(await getThresholdContext(DEFAULT_THRESHOLD_PARAMS));
  macKey = AggregateMacKey.random();
  signers = new Map(SITES.map((i) => [`site-${i}`, generateSigningKeyPair('falcon-512')]));
  secrets = new Map(SITES.map((i) => [i, SiteSecret.generate(ctx.tc)]));
  held = new Map(SITES.map((x) => [x, new Map()]));
  for (const [i, s] of secrets) {
    s.deal(THRESHOLD, SITES).forEach((share, k) => {
      held.get(SITES[k]!)!.set(i, share);
    });
  }
  keysets = new Map(SITES.map((i) => [i, new ThresholdLaneKeyset(ctx, secrets.get(i)!, epoch)]));
  updates = SITES.map((i) => verifier(ctx.paramsId).verifyUpdate(encode(i, keysets.get(i)!, i)));
  // The same updates, quantized with the same rounding, in plain mode: the reference sums.
  plain = new PlainLaneContext(DEFAULT_CKKS_PARAMS);
  plainUpdates = SITES.map((i) =>
    verifier(plain.paramsId).verifyUpdate(encode(i, new PlainLaneKeyset(plain), i)),
  );
});

describe('threshold CKKS through the codec', () => {
  it('a block payload is one polynomial of two 60-bit limbs packed at 60 bits: 122,880 bytes, nothing else', () => {
    expect(updates[0]!.ciphertexts.length).toBe(2);
    for (const c of updates[0]!.ciphertexts) expect(c.length).toBe((2 * 8192 * 60) / 8);
  });

  it('t sites decrypt the summed payloads to the exact lane sums, MAC checked, one site silent', () => {
    const sum = sumUpdates(ctx, updates);
    const decoded = decodeAggregate(new SharesDecryptor(ctx, shares(SITES, [1, 2, 4], 2)), sum, mac());
    const reference = decodeAggregate(new PlainLaneKeyset(plain), sumUpdates(plain, plainUpdates), mac());
    expect(decoded.contributors).toBe(4);
    expect(decoded.clamped).toBe(0);
    expect(decoded.laneSums).toEqual(reference.laneSums);
    expect(decoded.sum).toEqual(reference.sum);
  });

  it('the aggregate of a sub-cohort decrypts with shares for that cohort, and with no other', () => {
    const cohort = [1, 3, 4];
    const sum = sumUpdates(
      ctx,
      updates.filter((_, k) => cohort.includes(SITES[k]!)),
    );
    const reference = decodeAggregate(
      new PlainLaneKeyset(plain),
      sumUpdates(
        plain,
        plainUpdates.filter((_, k) => cohort.includes(SITES[k]!)),
      ),
      mac(),
    );
    expect(
      decodeAggregate(new SharesDecryptor(ctx, shares(cohort, [2, 3, 4], 2)), sum, mac()).laneSums,
    ).toEqual(reference.laneSums);
    // Shares for every site's secret against the sum of three: the fourth's secret masks it.
    expect(
      blockReason(() => decodeAggregate(new SharesDecryptor(ctx, shares(SITES, [2, 3, 4], 2)), sum, mac())),
    ).toBe('MAC_MISMATCH');
  });

  it('t − 1 sites cannot decrypt: the sum fails its MAC', () => {
    const sum = sumUpdates(ctx, updates);
    const short = shares(SITES, [1, 2, 4], 2).map((perBlock) => perBlock.slice(0, 2));
    expect(blockReason(() => decodeAggregate(new SharesDecryptor(ctx, short), sum, mac()))).toBe(
      'MAC_MISMATCH',
    );
  });

  it('a site never encrypts twice at one position (same round attempt): POSITION_REUSED', () => {
    const fresh = new ThresholdLaneKeyset(ctx, SiteSecret.generate(ctx.tc), epoch);
    encode(1, fresh, 1);
    expect(() => encode(1, fresh, 2)).toThrow(expect.objectContaining({ code: 'POSITION_REUSED' }));
  });

  it('an aggregator refuses a payload of the wrong size or with a word beyond its prime', () => {
    const good = updates[0]!.ciphertexts[0]!;
    expect(() => ctx.loadCiphertext(good.subarray(8))).toThrow(
      expect.objectContaining({ code: 'CKKS_PARAMS_MISMATCH' }),
    );
    const bad = good.slice();
    bad.fill(0xff, 0, 7);
    bad[7]! |= 0x0f;
    expect(() => ctx.loadCiphertext(bad)).toThrow(expect.objectContaining({ code: 'CKKS_PARAMS_MISMATCH' }));
  });
});

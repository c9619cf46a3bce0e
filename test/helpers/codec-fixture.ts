import {
  type CkksContext,
  CkksKeyset,
  DEFAULT_CKKS_PARAMS,
  getCkksContext,
} from '../../crypto/ckks/index.ts';
import type { LaneContext } from '../../crypto/lanes/index.ts';
import { AggregateMacKey } from '../../crypto/mac/index.ts';
import {
  generateSigningKeyPair,
  type SignatureAlgorithm,
  type SigningKeyPair,
} from '../../crypto/signature/index.ts';
import { addInto, ThresholdLaneContext } from '../../crypto/threshold/index.ts';
import {
  BlockVerifier,
  type CodecOptions,
  codecEncoding,
  dataSlotsOfBlock,
  payloadPositionLabel,
  type RoundContext,
  type RoundMac,
  type SiteCredentials,
  signBlocks,
  UpdateTagger,
  updateLayout,
} from '../../src/protocol/index.ts';

/**
 * A federation of `n` sites sharing one CKKS keyset and one aggregate-MAC key, each with its own
 * signing key.
 */
export interface CodecFixture {
  ctx: CkksContext;
  keyset: CkksKeyset;
  macKey: AggregateMacKey;
  /** Each site's credentials in `context`'s round (its MAC bound to that round, attempt empty). */
  sites: SiteCredentials[];
  signers: Map<string, SigningKeyPair>;
  context: RoundContext;
  /** The aggregate MAC of a round (default `context`'s) and attempt (default empty). */
  mac(round?: Pick<RoundContext, 'federation' | 'round'>, attempt?: Uint8Array): RoundMac;
  /** Site `i`'s credentials in another round. */
  site(i: number, round: Pick<RoundContext, 'federation' | 'round'>, attempt?: Uint8Array): SiteCredentials;
  verifier(options?: Partial<{ context: RoundContext; encoding: CodecOptions }>): BlockVerifier;
}

/** The aggregate MAC of `round` under `key` (attempt empty unless given). */
export function roundMac(
  key: AggregateMacKey,
  round: Pick<RoundContext, 'federation' | 'round'>,
  attempt: Uint8Array = new Uint8Array(0),
): RoundMac {
  return { key, nonce: { federation: round.federation, round: round.round, attempt } };
}

export function roundContext(round = 7, federation = 'test-fed'): RoundContext {
  return { federation, round, version: 3, baseCommit: new Uint8Array(32).fill(0xab) };
}

export async function codecFixture(
  n: number,
  algorithm: SignatureAlgorithm = 'falcon-512',
): Promise<CodecFixture> {
  const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const keyset = CkksKeyset.create(ctx);
  const macKey = AggregateMacKey.random();
  const context = roundContext();
  const signers = new Map<string, SigningKeyPair>();
  const sites: SiteCredentials[] = [];
  for (let i = 0; i < n; i++) {
    const signer = `site-${i}`;
    const signing = generateSigningKeyPair(algorithm);
    signers.set(signer, signing);
    sites.push({ signer, ckks: keyset, signing, mac: roundMac(macKey, context) });
  }
  return {
    ctx,
    keyset,
    macKey,
    sites,
    signers,
    context,
    mac: (round = context, attempt) => roundMac(macKey, round, attempt),
    site: (i, round, attempt) => ({ ...sites[i]!, mac: roundMac(macKey, round, attempt) }),
    verifier: (o) =>
      new BlockVerifier({
        context: o?.context ?? context,
        ckksParamsId: ctx.paramsId,
        keys: (s) => signers.get(s),
        allowedAlgorithms: ['falcon-512', 'ml-dsa-65'],
      }),
  };
}

/** Deterministic pseudo-random update in [-scale, scale] (xorshift32; tests only). */
export function randomUpdate(length: number, seed: number, scale: number): Float32Array {
  const out = new Float32Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = ((x / 0x1_0000_0000) * 2 - 1) * scale;
  }
  return out;
}

/**
 * The block-wise homomorphic sum of `updates`' ciphertexts, any of them any number of times (what
 * a lying aggregator can make: `AggregateBuilder` refuses a site twice). Serialized, SEAL freed.
 */
export function sumCiphertexts(
  ctx: LaneContext,
  updates: readonly { readonly ciphertexts: readonly Uint8Array[] }[],
): Uint8Array[] {
  const sums = updates[0]!.ciphertexts.map((c) => ctx.loadCiphertext(c));
  for (const u of updates.slice(1)) {
    u.ciphertexts.forEach((c, b) => {
      const ct = ctx.loadCiphertext(c);
      ctx.addInPlace(sums[b]!, ct);
      ct.delete();
    });
  }
  return sums.map((s) => {
    const bytes = ctx.serialize(s);
    s.delete();
    return bytes;
  });
}

/**
 * A ciphertext with a plaintext added to its slots (`delta`, slot by slot; 0 beyond its length):
 * what anyone can do to a CKKS ciphertext without any key, at the ciphertext's level and scale.
 * Under threshold keys the payload is a c0 alone, and the encoded plaintext is added to it.
 */
export function addPlaintext(ctx: LaneContext, ciphertext: Uint8Array, delta: Float64Array): Uint8Array {
  const values = new Float64Array(ctx.slots);
  values.set(delta.subarray(0, ctx.slots));
  if (ctx instanceof ThresholdLaneContext) {
    const v = ctx.loadCiphertext(ciphertext);
    try {
      addInto(ctx.tc, v.c0, ctx.tc.encode(values));
      return ctx.serialize(v);
    } finally {
      v.delete();
    }
  }
  const seal = ctx as CkksContext;
  const ct = seal.loadCiphertext(ciphertext);
  const plain = new seal.seal.Plaintext();
  try {
    seal.encoder.encode(values, seal.scale, plain);
    seal.evaluator.plainModSwitchToInplace(plain, seal.lastParmsId);
    seal.evaluator.addPlain(ct, plain, ct);
    return seal.serialize(ct);
  } finally {
    plain.delete();
    ct.delete();
  }
}

/**
 * An update whose data slots hold whatever `slotValues(block)` gives (integers a site may pick
 * freely: negative, above a lane's range, carrying into the next lane), tagged with the site's own
 * MAC key so the MAC holds, encrypted and signed like any update: what a hostile site holding
 * every key of its own can send.
 */
export function hostileUpdate(
  site: SiteCredentials,
  context: RoundContext,
  options: CodecOptions,
  totalParams: number,
  slotValues: (block: number, dataSlots: number) => Float64Array,
  exampleWeight = 10,
): { blocks: Uint8Array[]; manifest: Uint8Array } {
  const encoding = codecEncoding(site.ckks.ctx, options);
  const layout = updateLayout(totalParams, encoding);
  const tagger = new UpdateTagger(site.mac, layout, site.signer);
  // At the round attempt's positions, as an honest site encrypts (threshold keys need them).
  const label = payloadPositionLabel(site.mac.nonce);
  const ciphertexts: Uint8Array[] = [];
  for (let b = 0; b < layout.blocks; b++) {
    const { count } = dataSlotsOfBlock(layout, b);
    const slots = new Float64Array(encoding.slots);
    slots.set(slotValues(b, count).subarray(0, count));
    tagger.block(b, slots);
    ciphertexts.push(site.ckks.encrypt(slots, { label, index: b }));
  }
  return signBlocks(
    context,
    site.signer,
    site.signing,
    { totalParams, exampleWeight, encoding, crcChunkBytes: options.crcChunkBytes },
    ciphertexts,
    1,
    [],
  );
}

import {
  type CkksContext,
  CkksKeyset,
  DEFAULT_CKKS_PARAMS,
  getCkksContext,
} from '../../crypto/ckks/index.ts';
import type { LaneContext } from '../../crypto/lanes/index.ts';
import {
  generateSigningKeyPair,
  type SignatureAlgorithm,
  type SigningKeyPair,
} from '../../crypto/signature/index.ts';
import {
  BlockVerifier,
  type CodecOptions,
  type RoundContext,
  type SiteCredentials,
} from '../../src/protocol/index.ts';

/** A federation of `n` sites sharing one CKKS keyset, each with its own signing key. */
export interface CodecFixture {
  ctx: CkksContext;
  keyset: CkksKeyset;
  sites: SiteCredentials[];
  signers: Map<string, SigningKeyPair>;
  context: RoundContext;
  verifier(options?: Partial<{ context: RoundContext; encoding: CodecOptions }>): BlockVerifier;
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
  const signers = new Map<string, SigningKeyPair>();
  const sites: SiteCredentials[] = [];
  for (let i = 0; i < n; i++) {
    const signer = `site-${i}`;
    const signing = generateSigningKeyPair(algorithm);
    signers.set(signer, signing);
    sites.push({ signer, ckks: keyset, signing });
  }
  const context = roundContext();
  return {
    ctx,
    keyset,
    sites,
    signers,
    context,
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

// An aggregator sums ciphertexts it cannot read, so the sites that decrypt check what it did: the
// aggregate MAC must hold for exactly the listed contributions of this round and attempt. Every
// lie an aggregator (or anyone without the sites' key) can tell is tried on real ciphertexts.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Aggregate,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  encodeUpdate,
  sumUpdates,
  updateLayout,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import {
  addPlaintext,
  type CodecFixture,
  codecFixture,
  hostileUpdate,
  randomUpdate,
  roundContext,
  sumCiphertexts,
} from '../helpers/codec-fixture.ts';
import { blockReason } from '../helpers/error-code.ts';

const ATTEMPT = Uint8Array.of(1, 2, 3, 4);
const PARAMS = 5000;

describe('aggregate MAC', () => {
  let fx: CodecFixture;
  const updates: VerifiedUpdate[] = [];
  let older: VerifiedUpdate;
  let otherAttempt: VerifiedUpdate;

  beforeAll(async () => {
    fx = await codecFixture(3);
    const encode = (site: number, round: number, attempt: Uint8Array) => {
      const context = roundContext(round);
      const e = encodeUpdate({
        update: randomUpdate(PARAMS, 11 + site, 0.04),
        residual: null,
        credentials: fx.site(site, context, attempt),
        context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: 10,
      });
      return fx.verifier({ context }).verifyUpdate(e);
    };
    for (let s = 0; s < 3; s++) updates.push(encode(s, 7, ATTEMPT));
    older = encode(2, 6, ATTEMPT);
    otherAttempt = encode(2, 7, Uint8Array.of(9));
  });

  const mac = () => fx.mac(roundContext(7), ATTEMPT);

  /** The sum of `added` ciphertexts presented as the sum of `listed` (what a lying aggregator sends). */
  function lyingSum(
    added: readonly { ciphertexts: readonly Uint8Array[] }[],
    listed: readonly VerifiedUpdate[],
  ): Aggregate {
    const sites = listed.flatMap((u) => u.sites);
    return {
      encoding: listed[0]!.encoding,
      totalParams: listed[0]!.totalParams,
      sites,
      contributors: sites.length,
      totalWeight: listed.reduce((w, u) => w + u.exampleWeight, 0),
      ciphertexts: sumCiphertexts(fx.ctx, added),
    };
  }

  it('an honest sum decodes to the exact lane sums; the tag takes whole slots after the data', () => {
    const decoded = decodeAggregate(fx.keyset, sumUpdates(fx.ctx, updates), mac());
    expect(decoded.contributors).toBe(3);
    expect(decoded.clamped).toBe(0);
    const layout = updateLayout(PARAMS, updates[0]!.encoding);
    // 8-bit lanes for 32 contributors: 13 bits, 3 a slot; a limb has 39 − 6 = 33 bits, two hold 61.
    expect(layout).toMatchObject({ dataSlots: Math.ceil(PARAMS / 3), limbBits: 33, macSlots: 2, blocks: 1 });
  });

  it('the sum must be this round’s and attempt’s: another MAC nonce refuses it', () => {
    const sum = sumUpdates(fx.ctx, updates);
    for (const other of [fx.mac(roundContext(8), ATTEMPT), fx.mac(roundContext(7), Uint8Array.of(5))]) {
      expect(blockReason(() => decodeAggregate(fx.keyset, sum, other))).toBe('MAC_MISMATCH');
    }
  });

  it('a ciphertext added twice, left out, swapped, or from another round or attempt → MAC_MISMATCH', () => {
    const lies: [string, Aggregate][] = [
      ['added twice', lyingSum([...updates, updates[1]!], updates)],
      ['left out', lyingSum(updates.slice(0, 2), updates)],
      ['swapped for another listed one', lyingSum([updates[0]!, updates[1]!, updates[1]!], updates)],
      ['an older round’s', lyingSum([updates[0]!, updates[1]!, older], updates)],
      ['another attempt’s', lyingSum([updates[0]!, updates[1]!, otherAttempt], updates)],
      ['listed once more than summed', lyingSum(updates.slice(0, 2), [...updates.slice(0, 2), updates[2]!])],
    ];
    for (const [what, lie] of lies) {
      expect(
        blockReason(() => decodeAggregate(fx.keyset, lie, mac())),
        what,
      ).toBe('MAC_MISMATCH');
    }
  });

  it('a plaintext added to the parameters (the review’s +510 levels) → MAC_MISMATCH', () => {
    const sum = sumUpdates(fx.ctx, updates);
    const delta = new Float64Array(fx.ctx.slots);
    // +510 levels in every lane of the first 1000 slots (lanes are 13 bits, 3 a slot).
    for (let j = 0; j < 1000; j++) delta[j] = 510 * (1 + 2 ** 13 + 2 ** 26);
    const bent = { ...sum, ciphertexts: [addPlaintext(fx.ctx, sum.ciphertexts[0]!, delta)] };
    expect(blockReason(() => decodeAggregate(fx.keyset, bent, mac()))).toBe('MAC_MISMATCH');
  });

  it('isolation: one site’s ciphertext presented as three, plus any plaintext → MAC_MISMATCH', () => {
    // The review's attack: keep site-0's update, list all three with their real manifests, and add
    // plaintexts for the others' integrity fields. Whatever is added, the tag lacks their offsets.
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(fx.ctx.slots - 1), fc.integer({ min: -(2 ** 40), max: 2 ** 40 })), {
          maxLength: 6,
        }),
        (edits) => {
          const alone = lyingSum([updates[0]!], updates);
          const delta = new Float64Array(fx.ctx.slots);
          for (const [slot, v] of edits) delta[slot] = v;
          const bent = { ...alone, ciphertexts: [addPlaintext(fx.ctx, alone.ciphertexts[0]!, delta)] };
          expect(blockReason(() => decodeAggregate(fx.keyset, bent, mac()))).toBe('MAC_MISMATCH');
        },
      ),
      { numRuns: 12 },
    );
  });

  it('any nonzero plaintext on an honest sum, in data, tag or padding slots → MAC_MISMATCH', () => {
    const sum = sumUpdates(fx.ctx, updates);
    const layout = updateLayout(PARAMS, updates[0]!.encoding);
    // The padding after the tag too: a change there would alter no parameter, but the aggregate's
    // bytes would not be the sum of its contributions.
    expect(layout.totalSlots).toBeLessThan(fx.ctx.slots);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.nat(layout.totalSlots - 1),
          fc.integer({ min: layout.totalSlots, max: fx.ctx.slots - 1 }),
        ),
        fc.integer({ min: -(2 ** 30), max: 2 ** 30 }).filter((v) => v !== 0),
        (slot, v) => {
          const delta = new Float64Array(fx.ctx.slots);
          delta[slot] = v;
          const bent = { ...sum, ciphertexts: [addPlaintext(fx.ctx, sum.ciphertexts[0]!, delta)] };
          expect(blockReason(() => decodeAggregate(fx.keyset, bent, mac()))).toBe('MAC_MISMATCH');
        },
      ),
      { numRuns: 16 },
    );
  });

  it('a site’s out-of-range values are clamped, not refused: one site cannot stop the round', () => {
    // A hostile site holds the MAC key too: it packs 600 levels in every lane (honest levels stop
    // at 255), −50 in one slot, and a fraction in another, and tags what it encrypted, so the MAC
    // holds. The sum's lanes above K · 255 (K = 3) are clamped to it, the negative slot to 0, the
    // fraction rounded: nothing is refused, and every parameter stays in what K honest sites send.
    const context = roundContext(7);
    const lane = 2 ** 13;
    const hostile = hostileUpdate(
      fx.site(2, context, ATTEMPT),
      context,
      DEFAULT_CODEC_OPTIONS,
      PARAMS,
      (_b, n) => {
        const v = new Float64Array(n).fill(600 * (1 + lane + lane * lane));
        v[0] = -50;
        return v;
      },
    );
    const verified = fx.verifier({ context }).verifyUpdate(hostile);
    const sum = sumUpdates(fx.ctx, [updates[0]!, updates[1]!, verified]);
    const decoded = decodeAggregate(fx.keyset, sum, mac());
    expect(decoded.clamped).toBeGreaterThan(PARAMS / 2);
    expect(decoded.laneSums.every((v) => v >= 0 && v <= 3 * 255)).toBe(true);
    // Every parameter's mean stays within [−clip, clip], whatever one site sent.
    const clip = updates[0]!.encoding.clip;
    expect(decoded.sum.every((v) => Math.abs(v / 3) <= clip * (1 + 1e-6))).toBe(true);
  });

  it('a site that writes a wrong tag makes the MAC fail for everyone alike', () => {
    const context = roundContext(7);
    const site = fx.site(2, context, ATTEMPT);
    const wrong = hostileUpdate(
      { ...site, mac: fx.mac(roundContext(7), Uint8Array.of(0xee)) },
      context,
      DEFAULT_CODEC_OPTIONS,
      PARAMS,
      (_b, n) => new Float64Array(n).fill(100),
    );
    const verified = fx.verifier({ context }).verifyUpdate(wrong);
    const sum = sumUpdates(fx.ctx, [updates[0]!, updates[1]!, verified]);
    expect(blockReason(() => decodeAggregate(fx.keyset, sum, mac()))).toBe('MAC_MISMATCH');
  });
});

// An aggregator sums ciphertexts it cannot read, so the sites that decrypt check what it did: the
// integrity lanes must show exactly the listed contributions, all of this round.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Aggregate,
  BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  encodeUpdate,
  integrityLaneCount,
  integrityLevels,
  sumUpdates,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import {
  type CodecFixture,
  codecFixture,
  randomUpdate,
  roundContext,
  sumCiphertexts,
} from '../helpers/codec-fixture.ts';
import { blockReason } from '../helpers/error-code.ts';

/** The round's participants, in RoundOpen order: their presence lanes. */
const PARTICIPANTS = ['site-0', 'site-1', 'site-2'];

describe('integrity lanes', () => {
  let fx: CodecFixture;
  const updates: VerifiedUpdate[] = [];
  let older: VerifiedUpdate;

  beforeAll(async () => {
    fx = await codecFixture(3);
    const encode = (site: number, round: number) => {
      const context = roundContext(round);
      const e = encodeUpdate({
        update: randomUpdate(5000, 11 + site, 0.04),
        residual: null,
        credentials: fx.sites[site]!,
        context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: 10,
        position: { index: site, participants: 3 },
      });
      const v = new BlockVerifier({
        context,
        ckksParamsId: fx.ctx.paramsId,
        keys: (signer) => fx.signers.get(signer),
        allowedAlgorithms: ['falcon-512'],
        participants: 3,
      });
      return v.verifyUpdate(e);
    };
    for (let s = 0; s < 3; s++) updates.push(encode(s, 7));
    older = encode(2, 6);
  });

  /** The sum of `added` ciphertexts presented as the sum of `listed` (what a lying aggregator sends). */
  function lyingSum(added: readonly VerifiedUpdate[], listed: readonly VerifiedUpdate[]): Aggregate {
    const ciphertexts = sumCiphertexts(fx.ctx, added);
    const sites = listed.flatMap((u) => u.sites);
    return {
      encoding: listed[0]!.encoding,
      totalParams: listed[0]!.totalParams,
      sites,
      contributors: sites.length,
      totalWeight: listed.reduce((w, u) => w + u.exampleWeight, 0),
      ciphertexts,
    };
  }

  it('an honest sum decodes; the lanes hold a count and a 32-bit round tag', () => {
    const context = roundContext(7);
    expect(decodeAggregate(fx.keyset, sumUpdates(fx.ctx, updates), context, PARTICIPANTS).contributors).toBe(
      3,
    );
    expect(integrityLaneCount(8)).toBe(5);
    expect(integrityLaneCount(1)).toBe(33);
    expect(integrityLaneCount(8, 3)).toBe(7);
    expect(Array.from(integrityLevels(8, context, { index: 1, participants: 3 }).subarray(0, 3))).toEqual([
      0, 1, 0,
    ]);
    expect(integrityLevels(8, context)[0]).toBe(1);
    // The tag is the round's: another round (or federation) gives other levels.
    expect(Array.from(integrityLevels(8, context))).not.toEqual(
      Array.from(integrityLevels(8, roundContext(8))),
    );
    expect(Array.from(integrityLevels(8, context))).not.toEqual(
      Array.from(integrityLevels(8, roundContext(7, 'other-fed'))),
    );
  });

  it("a site's ciphertext added twice while listed once → INTEGRITY_MISMATCH", () => {
    // The integrity lanes are checked before the parameters' lane bounds: the precise reason.
    const twice = lyingSum([...updates, updates[1]!], updates);
    expect(blockReason(() => decodeAggregate(fx.keyset, twice, roundContext(7), PARTICIPANTS))).toBe(
      'INTEGRITY_MISMATCH',
    );
  });

  it('a listed site left out of the sum → INTEGRITY_MISMATCH', () => {
    const dropped = lyingSum(updates.slice(0, 2), updates);
    expect(blockReason(() => decodeAggregate(fx.keyset, dropped, roundContext(7), PARTICIPANTS))).toBe(
      'INTEGRITY_MISMATCH',
    );
  });

  it("another listed site's update in a listed site's place → INTEGRITY_MISMATCH naming it", () => {
    const swapped = lyingSum([updates[0]!, updates[1]!, updates[1]!], updates);
    expect(() => decodeAggregate(fx.keyset, swapped, roundContext(7), PARTICIPANTS)).toThrow(/"site-1"/);
    expect(blockReason(() => decodeAggregate(fx.keyset, swapped, roundContext(7), PARTICIPANTS))).toBe(
      'INTEGRITY_MISMATCH',
    );
  });

  it("an older round's ciphertext substituted for a site's → INTEGRITY_MISMATCH", () => {
    const substituted = lyingSum([updates[0]!, updates[1]!, older], updates);
    expect(blockReason(() => decodeAggregate(fx.keyset, substituted, roundContext(7), PARTICIPANTS))).toBe(
      'INTEGRITY_MISMATCH',
    );
  });
});

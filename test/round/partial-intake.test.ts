// The coordinator takes a partial aggregate only with each listed site's own signed manifest of
// this round, naming the digest and the weight the partial lists: an aggregator cannot list a site
// that sent nothing, another update under a site's name, or a weight of its own choosing.
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair, type SigningKeyPair } from '../../crypto/signature/index.ts';
import {
  type Assignment,
  BlockVerifier,
  codecEncoding,
  DEFAULT_CODEC_OPTIONS,
  type EncodedUpdate,
  encodeAggregate,
  encodeUpdate,
  type RoundContext,
  sumUpdates,
} from '../../src/protocol/index.ts';
import { PartialIntake } from '../../src/round/index.ts';
import { type CodecFixture, codecFixture, randomUpdate, roundContext } from '../helpers/codec-fixture.ts';
import { blockReason } from '../helpers/error-code.ts';

const PARAMS = 3000;
const ASSIGNMENTS: Assignment[] = [
  { site: 'site-0', aggregator: 'agg', examples: 10 },
  { site: 'site-1', aggregator: 'agg', examples: 20 },
];

describe('PartialIntake: forwarded site manifests', () => {
  let fx: CodecFixture;
  let aggKey: SigningKeyPair;
  const context: RoundContext = roundContext(7);

  beforeAll(async () => {
    fx = await codecFixture(2);
    aggKey = generateSigningKeyPair('falcon-512');
  });

  const siteUpdate = (site: number, weight: number, ctx = context): EncodedUpdate =>
    encodeUpdate({
      update: randomUpdate(PARAMS, 3 + site, 0.03),
      residual: null,
      credentials: fx.site(site, ctx),
      context: ctx,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: weight,
    });

  /** A partial of `sums` that forwards `forwarded` as its site manifests. */
  function partial(sums: readonly EncodedUpdate[], forwarded: readonly Uint8Array[]) {
    const v = new BlockVerifier({
      context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
    });
    const aggregate = sumUpdates(
      fx.ctx,
      sums.map((e) => v.verifyUpdate(e)),
    );
    return encodeAggregate(aggregate, { signer: 'agg', signing: aggKey }, context, {
      crcChunkBytes: DEFAULT_CODEC_OPTIONS.crcChunkBytes,
      siteManifests: forwarded,
    });
  }

  /** Feeds a partial's blocks and manifest to a fresh intake; the manifest's outcome. */
  function submit(p: ReturnType<typeof partial>): string {
    const intake = new PartialIntake({
      ckks: fx.ctx,
      context,
      encoding: codecEncoding(fx.ctx, DEFAULT_CODEC_OPTIONS),
      assignments: ASSIGNMENTS,
      totalParams: PARAMS,
      keys: (id) => (id === 'agg' ? aggKey : fx.signers.get(id)),
      allowedAlgorithms: ['falcon-512'],
    });
    try {
      for (const b of p.blocks) intake.accept('agg', b);
      return blockReason(() => intake.accept('agg', p.manifest));
    } finally {
      intake.builder.dispose();
    }
  }

  it('accepts a partial backed by each listed site’s own manifest', () => {
    const a = siteUpdate(0, 10);
    const b = siteUpdate(1, 20);
    expect(submit(partial([a, b], [a.manifest, b.manifest]))).toBe('accepted');
  });

  it('refuses a partial that forwards no manifests, or another site’s under a listed name', () => {
    const a = siteUpdate(0, 10);
    const b = siteUpdate(1, 20);
    expect(submit(partial([a, b], []))).toBe('BAD_HEADER');
    expect(submit(partial([a, b], [b.manifest, a.manifest]))).toBe('WRONG_SIGNER');
  });

  it('refuses a listed site whose manifest is of another round or names another update', () => {
    const a = siteUpdate(0, 10);
    const b = siteUpdate(1, 20);
    const old = siteUpdate(1, 20, roundContext(6));
    expect(submit(partial([a, b], [a.manifest, old.manifest]))).toBe('WRONG_CONTEXT');
    const other = siteUpdate(1, 20); // site-1 signed another update this round: not the one summed
    expect(submit(partial([a, b], [a.manifest, other.manifest]))).toBe('DIGEST_MISMATCH');
  });

  it('refuses a site weight other than the one RoundOpen pinned', () => {
    const a = siteUpdate(0, 10);
    const heavy = siteUpdate(1, 1e12);
    expect(submit(partial([a, heavy], [a.manifest, heavy.manifest]))).toBe('NOT_PINNED');
  });
});

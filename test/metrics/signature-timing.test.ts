// BlockVerifier's timing hook feeding cohort_signature_verify_seconds: one observation per lattice
// verification actually run (an update's blocks share one signature, verified once and cached).
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCryptoTimings } from '../../src/metrics/index.ts';
import {
  BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  type EncodedUpdate,
  encodeUpdate,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';
import { parseExposition, sample } from '../helpers/promtool.ts';

describe('signature timings', () => {
  let fx: CodecFixture;
  let update: EncodedUpdate;
  beforeAll(async () => {
    fx = await codecFixture(1);
    update = encodeUpdate({
      update: randomUpdate(40_000, 3, 0.04),
      residual: null,
      credentials: fx.sites[0]!,
      context: fx.context,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: 10,
    });
  });

  it('observes each lattice verification run, not the cached ones', async () => {
    const registry = new Registry();
    const timings = createCryptoTimings(registry);
    const seen: boolean[] = [];
    const verifier = new BlockVerifier({
      context: fx.context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
      onSignatureVerified: (ms, ok) => {
        seen.push(ok);
        timings.signature('site-update', ms);
      },
    });
    expect(update.blocks.length).toBeGreaterThan(1);
    for (const b of update.blocks) verifier.verifyBlock(b);
    verifier.verifyManifest(update.manifest);
    expect(seen).toEqual([true]);
    const s = parseExposition(await registry.metrics());
    expect(sample(s, 'cohort_signature_verify_seconds_count', { kind: 'site-update' })).toBe(1);
    expect(sample(s, 'cohort_signature_verify_seconds_sum', { kind: 'site-update' })).toBeGreaterThan(0);
    expect(sample(s, 'cohort_signature_verify_seconds_count', { kind: 'partial' })).toBe(0);
  });

  it('does not let a failing observer change the verdict', () => {
    const verifier = new BlockVerifier({
      context: fx.context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
      onSignatureVerified: () => {
        throw new Error('observer down');
      },
    });
    expect(verifier.verifyManifest(update.manifest).signer).toBe('site-0');
  });
});

// The CKKS and control-signature hooks feeding cohort_ckks_operation_seconds and
// cohort_signature_verify_seconds{kind="control"}: one observation per block and operation, one per
// lattice verification actually run, and an observer that throws changes nothing.
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { BlockRejectedError } from '../../src/errors/index.ts';
import { createCryptoTimings } from '../../src/metrics/index.ts';
import {
  type CryptoTimingObserver,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  type EncodedUpdate,
  encodeUpdate,
  openControl,
  sealControl,
  sumUpdates,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';
import { parseExposition, sample } from '../helpers/promtool.ts';

function metered() {
  const registry = new Registry();
  const timings: CryptoTimingObserver = createCryptoTimings(registry);
  const count = async (operation: string) =>
    sample(parseExposition(await registry.metrics()), 'cohort_ckks_operation_seconds_count', { operation });
  const signatures = async (kind: string) =>
    sample(parseExposition(await registry.metrics()), 'cohort_signature_verify_seconds_count', { kind });
  return { registry, timings, count, signatures };
}

const throwing: CryptoTimingObserver = {
  signature() {
    throw new Error('observer down');
  },
  ckks() {
    throw new Error('observer down');
  },
};

describe('crypto timings', () => {
  let fx: CodecFixture;
  beforeAll(async () => {
    fx = await codecFixture(2);
  });

  const encode = (site: number, timings?: CryptoTimingObserver): EncodedUpdate =>
    encodeUpdate({
      update: randomUpdate(20_000, 11 + site, 0.04),
      residual: null,
      credentials: fx.sites[site]!,
      context: fx.context,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: 10,
      roundingSeed: { key0: 5, key1: 7 },
      ...(timings === undefined ? {} : { timings }),
    });

  it('observes each block encrypted, loaded, added and decrypted', async () => {
    const m = metered();
    const a = encode(0, m.timings);
    const blocks = a.blocks.length;
    expect(blocks).toBeGreaterThan(1);
    expect(await m.count('encrypt')).toBe(blocks);
    const b = encode(1);
    const updates: VerifiedUpdate[] = [a, b].map((u) => fx.verifier().verifyUpdate(u));
    const sum = sumUpdates(fx.ctx, updates, m.timings);
    // Both updates' blocks are loaded; the first becomes the sum, the second's blocks are added.
    expect(await m.count('load')).toBe(2 * blocks);
    expect(await m.count('add')).toBe(blocks);
    expect(await m.count('decrypt')).toBe(0);
    const decoded = decodeAggregate(fx.keyset, sum, fx.mac(), m.timings);
    expect(decoded.contributors).toBe(2);
    expect(await m.count('decrypt')).toBe(blocks);
    expect(await m.count('encrypt')).toBe(blocks); // b was encoded without an observer
  });

  it('does not let a throwing observer change what CKKS computes', () => {
    const plain = encode(0);
    const observed = encode(0, throwing);
    expect(observed.levels).toEqual(plain.levels);
    const updates = [plain, encode(1)].map((u) => fx.verifier().verifyUpdate(u));
    const expected = decodeAggregate(fx.keyset, sumUpdates(fx.ctx, updates), fx.mac());
    const sum = sumUpdates(fx.ctx, updates, throwing);
    const got = decodeAggregate(fx.keyset, sum, fx.mac(), throwing);
    expect(got.laneSums).toEqual(expected.laneSums);
  });

  it('times control signatures actually verified, not those refused before', async () => {
    const m = metered();
    const seen: boolean[] = [];
    const hook = (ms: number, ok: boolean) => {
      seen.push(ok);
      m.timings.signature('control', ms);
    };
    const body = {
      federation: fx.context.federation,
      member: 'site-0',
      role: 'site',
      sentUnixMs: 1_700_000_000_000,
      head: new Uint8Array(32),
      examples: 10,
      height: 1,
      state: 'READY',
    };
    const keys = (id: string) => fx.signers.get(id);
    const sealed = sealControl('heartbeat', body, 'site-0', fx.signers.get('site-0')!);
    expect(
      openControl(sealed, 'heartbeat', keys, { signer: 'site-0', onSignatureVerified: hook }).signer,
    ).toBe('site-0');
    // Another signer than the subject's: refused before any lattice work, nothing timed.
    expect(() =>
      openControl(sealed, 'heartbeat', keys, { signer: 'site-1', onSignatureVerified: hook }),
    ).toThrow(BlockRejectedError);
    // Signed under site-1's key while claiming site-0: verified, and fails.
    const forged = sealControl('heartbeat', body, 'site-0', {
      ...fx.signers.get('site-1')!,
      keyId: fx.signers.get('site-0')!.keyId,
    });
    expect(() => openControl(forged, 'heartbeat', keys, { onSignatureVerified: hook })).toThrow(
      /does not verify/,
    );
    expect(seen).toEqual([true, false]);
    expect(await m.signatures('control')).toBe(2);
    expect(await m.signatures('partial')).toBe(0);
    // A throwing observer does not change the verdict.
    expect(
      openControl(sealed, 'heartbeat', keys, { onSignatureVerified: () => throwing.signature('control', 1) })
        .signer,
    ).toBe('site-0');
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CKKS_PARAMS, PlainLaneContext, PlainLaneKeyset } from '../../crypto/ckks/index.ts';
import { sha256 } from '../../crypto/digest/index.ts';
import { AggregateMacKey } from '../../crypto/mac/index.ts';
import { generateSigningKeyPair } from '../../crypto/signature/index.ts';
import { dequantizeSum, type RobustRule } from '../../federation/index.ts';
import { BlockVerifier, encodeUpdate, type VerifiedUpdate } from '../../src/protocol/index.ts';
import { decodeRoundParams, encodeRoundParams, type RoundParams } from '../../src/round/index.ts';
import {
  applyRobustRule,
  decodeRobustDelta,
  encodeRobustDelta,
  plainUpdateDelta,
} from '../../src/services/robust-plan.ts';
import { roundContext, roundMac } from '../helpers/codec-fixture.ts';

const BASE: RoundParams = {
  round: 3,
  bits: 8,
  clip: Math.fround(0.05),
  strategy: 'fedavg',
  learningRate: 0.1,
};

const ruleArb: fc.Arbitrary<RobustRule> = fc.oneof(
  fc.record({ name: fc.constant('mean' as const) }),
  fc.record({
    name: fc.constant('median' as const),
    normBound: fc.double({ min: 0.01, max: 10, noNaN: true }),
  }),
  fc.record({
    name: fc.constant('trimmed-mean' as const),
    trimFraction: fc.double({ min: 0, max: 0.49, noNaN: true }),
  }),
  fc.record({
    name: fc.constant('multi-krum' as const),
    byzantine: fc.integer({ min: 0, max: 5 }),
    select: fc.integer({ min: 1, max: 9 }),
  }),
);

describe('the robust record of the round params', () => {
  it('round-trips any rule, kept sites and digest, alone and after a data contract', () => {
    fc.assert(
      fc.property(
        ruleArb,
        fc.uniqueArray(fc.stringMatching(/^site-[0-9]{1,3}$/), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 1, max: 2 ** 32 - 1 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.boolean(),
        (rule, sites, clipped, parameters, delta, contract) => {
          const params: RoundParams = {
            ...BASE,
            ...(contract ? { dataContract: 'ab'.repeat(32) } : {}),
            robust: { rule, selected: [...sites].sort(), clipped, parameters, delta },
          };
          expect(decodeRoundParams(encodeRoundParams(params))).toEqual(params);
        },
      ),
    );
  });

  it('is bytes the params hash covers: absent, the params are those of a FedAvg round', () => {
    const plain = encodeRoundParams(BASE);
    const robust = encodeRoundParams({
      ...BASE,
      robust: {
        rule: { name: 'median' },
        selected: ['a', 'b'],
        clipped: 0,
        parameters: 10,
        delta: new Uint8Array(32),
      },
    });
    expect(robust.subarray(0, plain.length)).toEqual(plain);
    expect(robust.length).toBeGreaterThan(plain.length);
  });

  it('refuses unsorted sites, a short digest, a truncated trailer and an unknown rule, naming them', () => {
    const record = {
      rule: { name: 'median' } as RobustRule,
      selected: ['b', 'a'],
      clipped: 0,
      parameters: 10,
    };
    expect(() =>
      encodeRoundParams({ ...BASE, robust: { ...record, delta: new Uint8Array(32) } }),
    ).toThrowError(/selected must be sorted and distinct/);
    expect(() =>
      encodeRoundParams({ ...BASE, robust: { ...record, selected: ['a'], delta: new Uint8Array(31) } }),
    ).toThrowError(/delta must be a 32-byte SHA-256/);
    const good = encodeRoundParams({
      ...BASE,
      robust: { ...record, selected: ['a'], delta: new Uint8Array(32) },
    });
    expect(() => decodeRoundParams(good.subarray(0, good.length - 1))).toThrowError(
      /robust trailer is truncated/,
    );
    // The rule's name, one letter changed in place.
    const at = Buffer.from(good).indexOf('median');
    const renamed = good.slice();
    renamed[at + 3] = 'y'.charCodeAt(0);
    expect(() => decodeRoundParams(renamed)).toThrowError(/robust rule: rule.name is "medyan"/);
  });
});

describe('applyRobustRule', () => {
  const updates = [
    { site: 'site-3', delta: Float32Array.of(3, 0, 0) },
    { site: 'site-1', delta: Float32Array.of(1, 2, 3) },
    { site: 'site-2', delta: Float32Array.of(2, 4, 9) },
  ];

  it('computes the hand-worked median and digests its float32 bytes, whatever the arrival order', () => {
    const a = applyRobustRule(updates, { name: 'median' });
    expect(Array.from(a.delta)).toEqual([2, 2, 3]);
    expect(a.selected).toEqual(['site-1', 'site-2', 'site-3']);
    expect(a.digest).toEqual(sha256(encodeRobustDelta(Float32Array.of(2, 2, 3))));
    const b = applyRobustRule([...updates].reverse(), { name: 'median' });
    expect(b.digest).toEqual(a.digest);
  });

  it('names the sites Multi-Krum keeps and counts what the norm bound scaled', () => {
    const five = [
      ...updates,
      { site: 'site-4', delta: Float32Array.of(2, 2, 3) },
      { site: 'site-9', delta: Float32Array.of(-90, -90, -90) },
    ];
    const r = applyRobustRule(five, { name: 'multi-krum', byzantine: 1, normBound: 50 });
    expect(r.selected).toEqual(['site-1', 'site-2', 'site-3', 'site-4']);
    expect(r.clipped).toBe(1);
    expect(() => applyRobustRule([...updates, updates[0]!], { name: 'mean' })).toThrowError(
      /two updates of site-3/,
    );
  });
});

describe('the stored aggregate update', () => {
  it('is float32 little-endian and refuses another length or a value that is not finite', () => {
    const bytes = encodeRobustDelta(Float32Array.of(1, -0.5));
    expect(Buffer.from(bytes).toString('hex')).toBe('0000803f000000bf');
    expect(Array.from(decodeRobustDelta(bytes, 2))).toEqual([1, -0.5]);
    expect(() => decodeRobustDelta(bytes, 3)).toThrowError(
      /aggregate update of 8 bytes, the model has 3 parameters/,
    );
    expect(() => decodeRobustDelta(encodeRobustDelta(Float32Array.of(1, Number.NaN)), 2)).toThrowError(
      /parameter 1 is NaN/,
    );
  });
});

describe('plainUpdateDelta', () => {
  it('reads one signed plain update back to its dequantized levels, checking its presence lane', () => {
    const lanes = new PlainLaneContext(DEFAULT_CKKS_PARAMS);
    const keyset = new PlainLaneKeyset(lanes);
    const signing = generateSigningKeyPair('falcon-512');
    const context = roundContext();
    const update = Float32Array.from({ length: 20_000 }, (_, i) => Math.sin(i) * 0.04);
    const options = { bits: 8 as const, clip: 0.05, maxContributors: 8, crcChunkBytes: 16_384 };
    const encoded = encodeUpdate({
      update,
      residual: null,
      credentials: {
        signer: 'site-b',
        ckks: keyset,
        signing,
        mac: roundMac(AggregateMacKey.random(), context),
      },
      context,
      options,
      exampleWeight: 10,
      roundingSeed: { key0: 1, key1: 2 },
    });
    const verifier = new BlockVerifier({
      context,
      ckksParamsId: lanes.paramsId,
      keys: (s) => (s === 'site-b' ? signing : undefined),
      allowedAlgorithms: ['falcon-512'],
      maxCiphertextBytes: lanes.maxCiphertextBytes,
    });
    const verified: VerifiedUpdate = verifier.verifyUpdate({
      blocks: encoded.blocks,
      manifest: encoded.manifest,
    });
    const delta = plainUpdateDelta(keyset, verified, update.length);
    const expected = dequantizeSum(
      Float64Array.from(encoded.levels.subarray(0, update.length)),
      1,
      8,
      Math.fround(0.05),
    );
    expect(delta).toEqual(expected);
    // Within one quantization step of what the site trained.
    const step = (2 * 0.05) / 255;
    expect(delta.every((v, i) => Math.abs(v - update[i]!) <= step + 1e-7)).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { type CohortConfigInput, parseConfig } from '../../src/config/index.ts';
import { dataContractDigest } from '../../src/data/index.ts';
import { decodeRoundParams, encodeRoundParams, federationGenesis } from '../../src/round/index.ts';
import { federationGenesis as agentGenesis } from '../../src/services/agent/index.ts';
import { bytesToHex } from '../../src/versions/index.ts';

const CONTRACT = {
  kind: 'tabular',
  features: [{ name: 'radius_mean' }, { name: 'texture_mean' }],
  label: { name: 'diagnosis', classes: ['B', 'M'] },
} as const;

const configOf = (extra: Partial<CohortConfigInput> = {}) =>
  parseConfig({ federation: { id: 'genesis' }, ...extra } as CohortConfigInput);

describe('federation genesis and the data contract', () => {
  it('without a data section, the params are those written before data contracts existed', () => {
    const genesis = federationGenesis(configOf());
    // The bytes the encoding gave before the data contract (default codec and learning settings).
    expect(bytesToHex(genesis.commit.params)).toBe(
      '00000016636f686f72742f76312f726f756e642d706172616d730000000000000000083d4ccccd000000066665646176673fb999999999999a',
    );
    expect(decodeRoundParams(genesis.commit.params).dataContract).toBeUndefined();
  });

  it('pins the contract digest into the genesis params', () => {
    const config = configOf({ data: CONTRACT as never });
    const genesis = federationGenesis(config);
    const params = decodeRoundParams(genesis.commit.params);
    expect(params.dataContract).toBe(bytesToHex(dataContractDigest(config.data!)));
    expect(params.round).toBe(0);
    expect(agentGenesis(config).commit.hash).toEqual(genesis.commit.hash);
  });

  it('gives members with different contracts different genesis hashes', () => {
    const hash = (extra: Partial<CohortConfigInput>) =>
      bytesToHex(federationGenesis(configOf(extra)).commit.hash);
    const none = hash({});
    const a = hash({ data: CONTRACT as never });
    const b = hash({ data: { ...CONTRACT, label: { name: 'diagnosis', classes: ['M', 'B'] } } as never });
    const c = hash({ data: { ...CONTRACT, preprocessing: { scale: 2 } } as never });
    expect(new Set([none, a, b, c]).size).toBe(4);
    expect(hash({ data: { ...CONTRACT, preprocessing: { standardize: 'none' } } as never })).toBe(a);
  });
});

describe('round params with a data contract digest', () => {
  const base = { round: 0, bits: 8, clip: 0.05, strategy: 'fedavg', learningRate: 0.1 };

  it('round-trips, and appends the digest only when given', () => {
    const digest = 'ab'.repeat(32);
    const plain = encodeRoundParams(base);
    const pinned = encodeRoundParams({ ...base, dataContract: digest });
    expect(pinned.length).toBe(plain.length + 4 + 32);
    expect(bytesToHex(pinned.subarray(0, plain.length))).toBe(bytesToHex(plain));
    expect(decodeRoundParams(pinned)).toEqual({ ...base, clip: Math.fround(0.05), dataContract: digest });
  });

  it('refuses a digest that is not 32 bytes of lowercase hex, and a truncated one', () => {
    expect(() => encodeRoundParams({ ...base, dataContract: 'ab' })).toThrow(
      /params\.dataContract has 1 bytes/,
    );
    expect(() => encodeRoundParams({ ...base, dataContract: 'AB'.repeat(32) })).toThrow(/lowercase hex/);
    const pinned = encodeRoundParams({ ...base, dataContract: 'cd'.repeat(32) });
    expect(() => decodeRoundParams(pinned.subarray(0, pinned.length - 1))).toThrow(/truncated/);
  });
});

// Registry changes in the federation log: LogHistory folds them into its registry view (officer
// signature, the registry's rules, applied from the round after the entry) and refuses the rest.
import { describe, expect, it } from 'vitest';
import { sha256 } from '../../crypto/digest/index.ts';
import { generateKemKeyPair, ML_KEM_768 } from '../../crypto/kem/index.ts';
import { generateSigningKeyPair, toPublicSigningKey } from '../../crypto/signature/index.ts';
import type { ControlBodies, LogRecordBody } from '../../src/protocol/index.ts';
import {
  type MemberRegistry,
  openRegistry,
  type RegistryChangeBody,
  sealRegistryChange,
  signRegistry,
} from '../../src/registry/index.ts';
import { type LogEntry, LogHistory } from '../../src/services/federation-log/index.ts';
import { type Commit, genesisCommit } from '../../src/versions/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { emptyDecision } from '../helpers/log-records.ts';

const F = 'logreg';
const seed = (n: number, length: number) => new Uint8Array(length).fill(n);
const falcon = (n: number) => generateSigningKeyPair('falcon-512', seed(n, 48));
const officer = falcon(1);
const mallory = falcon(7);
const genesis = genesisCommit(new Float32Array([0.5, -0.25, 1]), new TextEncoder().encode('{}'));

const registry: MemberRegistry = {
  federation: F,
  members: [
    {
      id: 'coordinator',
      role: 'coordinator',
      signingKey: toPublicSigningKey(falcon(2)),
      kemKey: undefined,
      nkey: undefined,
      validFromRound: 0,
    },
    {
      id: 'site-1',
      role: 'site',
      signingKey: toPublicSigningKey(falcon(3)),
      kemKey: generateKemKeyPair(seed(3, ML_KEM_768.seedBytes)).publicKey,
      nkey: undefined,
      validFromRound: 0,
    },
  ],
  officerKey: toPublicSigningKey(officer),
  issuedUnixMs: 1,
};
const verified = openRegistry(signRegistry(registry, officer));

const rotate = (fromRound: number, n = 11): RegistryChangeBody => ({
  federation: F,
  kind: 'rotate',
  member: 'site-1',
  role: 'site',
  signingKey: toPublicSigningKey(falcon(n)),
  kemKey: undefined,
  nkey: undefined,
  fromRound,
  issuedUnixMs: 1,
  reason: '',
});

function open(round: number, base: Commit): ControlBodies['round-open'] {
  return {
    federation: F,
    round,
    version: base.height,
    baseCommit: base.hash,
    assignments: [],
    bits: 8,
    clip: 1,
    maxContributors: 16,
    crcChunkBytes: 4096,
    deadlineUnixMs: 0,
    totalExamples: 0,
    totalParams: 3,
    attempt: new Uint8Array(16).fill(round),
  };
}

/** A log of hand-built records (links and signatures are the reader's business, not LogHistory's). */
function entries(records: Partial<LogRecordBody>[]): LogEntry[] {
  return records.map((r, i) => ({
    sequence: i + 1,
    bytes: new Uint8Array(0),
    hash: sha256(new Uint8Array([i + 1])),
    record: { federation: F, sequence: i + 1, previousEntry: new Uint8Array(32), unixMs: i, ...r },
  }));
}

const round = (r: number): Partial<LogRecordBody>[] => [
  { roundOpen: open(r, genesis) },
  { decision: emptyDecision(F, r, genesis) },
];

describe('LogHistory: registry changes', () => {
  it('folds a rotation logged before round r into its view: the old key up to r-1, the new from r', () => {
    const history = new LogHistory(genesis, 'log', { registry: verified });
    const log = entries([
      ...round(1),
      { registryChange: sealRegistryChange(rotate(2), officer) },
      ...round(2),
    ]);
    history.apply(log[0]!);
    expect(history.registry!.round).toBe(1);
    history.apply(log[1]!);
    history.apply(log[2]!);
    expect(history.registryChanges.map((c) => [c.change.kind, c.change.fromRound, c.entry.sequence])).toEqual(
      [['rotate', 2, 3]],
    );
    expect(history.registry!.round).toBe(2);
    expect(history.registry!.current('site-1')!.keyId).toBe(falcon(11).keyId);
    expect(history.registry!.keyFor('site-1', 1)!.keyId).toBe(falcon(3).keyId);
    history.apply(log[3]!);
    history.apply(log[4]!);
    expect(history.registry!.round).toBe(3);
  });

  it('refuses a change while a round is open, for another round, or not signed by the officer', () => {
    const cases: [Partial<LogRecordBody>[], RegExp][] = [
      [[round(1)[0]!, { registryChange: sealRegistryChange(rotate(2), officer) }], /while round 1 is open/],
      [
        [...round(1), { registryChange: sealRegistryChange(rotate(5), officer) }],
        /from round 5, logged before round 2/,
      ],
      [[...round(1), { registryChange: sealRegistryChange(rotate(2), mallory) }], /signed with key/],
      [
        [
          ...round(1),
          {
            registryChange: sealRegistryChange(
              { ...rotate(2), kind: 'revoke', signingKey: undefined },
              officer,
            ),
          },
          ...round(2),
          { registryChange: sealRegistryChange(rotate(3), officer) },
        ],
        /revoked from round 2/,
      ],
    ];
    for (const [records, problem] of cases) {
      const history = new LogHistory(genesis, 'log', { registry: verified });
      const log = entries(records);
      for (const e of log.slice(0, -1)) history.apply(e);
      let thrown: unknown;
      try {
        history.apply(log.at(-1)!);
      } catch (err) {
        thrown = err;
      }
      expect(
        errorCode(() => {
          throw thrown;
        }),
      ).toBe('LOG_HISTORY_INVALID');
      expect((thrown as Error).message).toMatch(problem);
    }
  });

  it('without the registry: checks structure and round only (the entry is the coordinator’s)', () => {
    const history = new LogHistory(genesis, 'log');
    const log = entries([...round(1), { registryChange: sealRegistryChange(rotate(2), mallory) }]);
    for (const e of log) history.apply(e);
    expect(history.registry).toBeUndefined();
    expect(history.registryChanges).toHaveLength(1);
    const bad = new LogHistory(genesis, 'log');
    const wrong = entries([...round(1), { registryChange: sealRegistryChange(rotate(4), officer) }]);
    bad.apply(wrong[0]!);
    bad.apply(wrong[1]!);
    expect(errorCode(() => bad.apply(wrong[2]!))).toBe('LOG_HISTORY_INVALID');
  });
});

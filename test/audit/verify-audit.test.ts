// verifyAudit on hand-built, coordinator-signed logs (no NATS): each rule's problem code at its
// entry, the history stopping at the first problem while later entries are still checked, a record
// of a kind this build does not know, and aggregates missing, resized, unreadable or skipped.
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../../crypto/digest/index.ts';
import { generateKemKeyPair, ML_KEM_768 } from '../../crypto/kem/index.ts';
import {
  generateSigningKeyPair,
  SIGNATURE_ALGORITHM_IDS,
  type SigningKeyPair,
  sign,
  toPublicSigningKey,
} from '../../crypto/signature/index.ts';
import {
  AUDIT_BUNDLE_VERSION,
  type AuditBundle,
  type AuditReport,
  bundleAuditSource,
  decodeAuditBundle,
  encodeAuditBundle,
  type StoredEntry,
  verifyAudit,
} from '../../src/audit/index.ts';
import {
  type AggregateInfo,
  type ControlBodies,
  controlDomain,
  FRAME_KIND,
  frame,
  type LogRecordBody,
  PROTO_PATH,
  sealControl,
} from '../../src/protocol/index.ts';
import { openRegistry, sealRegistryChange, signRegistry } from '../../src/registry/index.ts';
import { encodeAggregateObject } from '../../src/round/index.ts';
import type { LogRecordInput } from '../../src/services/federation-log/index.ts';
import { type Commit, genesisCommit, roundCommit } from '../../src/versions/index.ts';
import { emptyDecision } from '../helpers/log-records.ts';

const F = 'auditfed';
const seed = (n: number, length: number) => new Uint8Array(length).fill(n);
const falcon = (n: number) => generateSigningKeyPair('falcon-512', seed(n, 48));
const officer = falcon(1);
const coordinator = falcon(2);
const mallory = falcon(7);
/** Seals the bundles these tests audit (auditor-1's key). */
const auditor = falcon(4);
const genesis = genesisCommit(new Float32Array([0.5, -0.25, 1]), new TextEncoder().encode('{}'));
const registryBytes = signRegistry(
  {
    federation: F,
    members: [
      {
        id: 'coordinator',
        role: 'coordinator',
        signingKey: toPublicSigningKey(coordinator),
        kemKey: undefined,
        nkey: undefined,
        validFromRound: 0,
      },
      {
        id: 'auditor-1',
        role: 'auditor',
        signingKey: toPublicSigningKey(auditor),
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
  },
  officer,
);
const registry = openRegistry(registryBytes);
const trust = { registry, genesis };
/** These hand-built logs hold no partial records: each COMMIT is listed as CONTRIBUTIONS_UNLOGGED. */
const notUnlogged = (r: AuditReport) => r.unchecked.filter((u) => u.code !== 'CONTRIBUTIONS_UNLOGGED');

// ---- records ----------------------------------------------------------------------------------

function open(round: number, base: Commit): LogRecordInput {
  const roundOpen: ControlBodies['round-open'] = {
    federation: F,
    round,
    version: base.height,
    baseCommit: base.hash,
    assignments: [{ site: 'site-1', aggregator: 'agg-1', examples: 10 }],
    bits: 8,
    clip: 1,
    maxContributors: 16,
    crcChunkBytes: 4096,
    deadlineUnixMs: 0,
    totalExamples: 10,
    totalParams: 3,
    attempt: new Uint8Array(16).fill(round),
  };
  return { roundOpen };
}

/** The stored aggregate of `round` (one fake ciphertext) and its decision's AggregateInfo. */
function aggregate(round: number): { object: Uint8Array; info: AggregateInfo } {
  const object = encodeAggregateObject([seed(round, 100)]);
  return {
    object,
    info: {
      encoding: {
        bits: 8,
        clip: 1,
        laneBits: 16,
        lanesPerSlot: 2,
        maxContributors: 16,
        scaleBits: 16,
        slots: 4096,
        paramsPerBlock: 8192,
        ckksParamsId: seed(9, 32),
      },
      totalParams: 3,
      contributors: [{ site: 'site-1', digest: seed(5, 32), weight: 10 }],
      totalWeight: 10,
      participants: 1,
      totalExamples: 10,
      object: `round-${round}`,
      objectBytes: object.length,
    },
  };
}

function commit(round: number, head: Commit): { record: LogRecordInput; commit: Commit } {
  const { object, info } = aggregate(round);
  const c = roundCommit(head, {
    round,
    aggregateDigest: sha256(object),
    modelHash: seed(round + 20, 32),
    params: new Uint8Array([round]),
  });
  const decision = {
    ...emptyDecision(F, round, head),
    commit: true,
    commitHash: c.hash,
    modelHash: c.modelHash,
    height: c.height,
    aggregateDigest: c.aggregateDigest,
    kind: 'round',
    params: c.params,
    aggregate: info,
    voters: ['site-1'],
  };
  return { record: { decision }, commit: c };
}

/** Signs `records` as consecutive, chained entries 1, 2, … (`keys[i]` signs entry i + 1, default the coordinator). */
function seal(records: readonly LogRecordInput[], keys: Record<number, SigningKeyPair> = {}): StoredEntry[] {
  let previous: Uint8Array = new Uint8Array(32);
  return records.map((r, i) => {
    const body: LogRecordBody = {
      federation: F,
      sequence: i + 1,
      previousEntry: previous,
      unixMs: 1000 + i,
      ...r,
    };
    const bytes = sealControl('log-record', body, 'coordinator', keys[i + 1] ?? coordinator);
    previous = sha256(bytes);
    return { sequence: i + 1, bytes };
  });
}

/** A bundle of `entries` and `objects` as the format holds it: encoded, sealed by auditor-1, decoded. */
async function bundleOf(
  entries: StoredEntry[],
  objects: [string, Uint8Array | null][],
  last?: number,
): Promise<AuditBundle> {
  const bundle: AuditBundle = {
    meta: {
      format: 'cohort-audit-bundle',
      version: AUDIT_BUNDLE_VERSION,
      federation: F,
      stream: 'COHORT_AUDITFED',
      member: 'auditor-1',
      exportedUnixMs: 1,
      lastSequence: last ?? entries.length,
      aggregates: 'included',
      contributions: 'skipped',
    },
    registry: registryBytes,
    genesis,
    entries,
    objects: new Map(objects),
  };
  return decodeAuditBundle(await encodeAuditBundle(bundle, { member: 'auditor-1', key: auditor }));
}

const audit = (b: AuditBundle, skipAggregates = false): Promise<AuditReport> =>
  verifyAudit(bundleAuditSource(b), trust, { skipAggregates });
const codes = (r: AuditReport) => r.problems.map((p) => [p.sequence, p.code]);

/** Rounds 1 and 2 committed, a snapshot, a registry change and an admin action between them. */
function scenario() {
  const c1 = commit(1, genesis);
  const c2 = commit(2, c1.commit);
  const rotate = sealRegistryChange(
    {
      federation: F,
      kind: 'rotate',
      member: 'site-1',
      role: 'site',
      signingKey: toPublicSigningKey(falcon(11)),
      kemKey: undefined,
      nkey: undefined,
      fromRound: 2,
      issuedUnixMs: 1,
      reason: '',
    },
    officer,
  );
  const adminAction = {
    action: 'runs.start',
    caller: 'ops',
    scope: 'operator',
    target: '',
    arguments: new Uint8Array(0),
    unixMs: 1,
  };
  const records: LogRecordInput[] = [
    open(1, genesis), // 1
    c1.record, // 2
    {
      snapshot: {
        commitHash: c1.commit.hash,
        height: 1,
        object: 's-1',
        digest: seed(1, 32),
        bytes: 1,
        site: 'site-1',
      },
    }, // 3
    { registryChange: rotate }, // 4
    { adminAction }, // 5
    open(2, c1.commit), // 6
    c2.record, // 7
  ];
  const objects: [string, Uint8Array][] = [
    ['round-1', aggregate(1).object],
    ['round-2', aggregate(2).object],
  ];
  return { records, objects, c1, c2 };
}

describe('verifyAudit', () => {
  it('verifies a valid log: every record kind checked, aggregates read, head and counts reported', async () => {
    const { records, objects, c2 } = scenario();
    const r = await audit(await bundleOf(seal(records), objects));
    expect(r.problems).toEqual([]);
    expect(r.verified).toBe(true);
    expect(r.head).toEqual({ hash: Buffer.from(c2.commit.hash).toString('hex'), height: 2, sequence: 7 });
    expect(r.checked).toEqual({
      signatures: 7,
      links: 7,
      historyRules: 7,
      commitHashes: 2,
      aggregates: 2,
      registryChanges: 1,
      snapshots: 1,
      adminActions: 1,
      partials: 0,
      votes: 0,
      contributions: 0,
      recomputed: 0,
      privacyRecords: 0,
      robustAggregates: 0,
      culprits: 0,
      uncheckedKinds: 0,
    });
    expect(r.rounds.map((x) => [x.round, x.sequence, x.outcome, x.aggregate])).toEqual([
      [1, 2, 'commit', 'verified'],
      [2, 7, 'commit', 'verified'],
    ]);
  });

  it('a COMMIT naming another hash: COMMIT_HASH_MISMATCH; the rules stop, later entries are still checked', async () => {
    const { records, objects } = scenario();
    const d = records[1]!.decision!;
    records[1] = { decision: { ...d, commitHash: seed(42, 32) } };
    const r = await audit(await bundleOf(seal(records, { 6: mallory }), objects));
    expect(codes(r)).toEqual([
      [2, 'COMMIT_HASH_MISMATCH'],
      [6, 'SIGNATURE_INVALID'],
    ]);
    expect(r.historyThrough).toBe(1);
    expect(r.checked.aggregates).toBe(2);
    expect(r.verified).toBe(false);
  });

  it('history rules: a decision of a round never opened, a snapshot off the chain, a forged registry change', async () => {
    const { records, objects } = scenario();
    expect(codes(await audit(await bundleOf(seal(records.slice(1)), objects)))[0]).toEqual([
      1,
      'DECISION_INVALID',
    ]);
    const snap = [...records];
    snap[2] = { snapshot: { ...records[2]!.snapshot!, height: 2 } };
    expect(codes(await audit(await bundleOf(seal(snap), objects)))).toEqual([[3, 'SNAPSHOT_INVALID']]);
    const forged = [...records];
    forged[3] = {
      registryChange: {
        ...records[3]!.registryChange!,
        signature: sign(mallory, 'registry-change', records[3]!.registryChange!.body),
      },
    };
    expect(codes(await audit(await bundleOf(seal(forged), objects)))).toEqual([
      [4, 'REGISTRY_CHANGE_INVALID'],
    ]);
    const anonymous = [...records];
    anonymous[4] = { adminAction: { ...records[4]!.adminAction!, caller: '' } };
    expect(codes(await audit(await bundleOf(seal(anonymous), objects)))).toEqual([
      [5, 'ADMIN_ACTION_INVALID'],
    ]);
  });

  it('a record of a kind this build does not know: counted as unchecked, its signature and link checked', async () => {
    const { records, objects } = scenario();
    const entries = seal(records);
    // Entry 5 becomes a record holding only field 30 (no kind this build knows), signed and chained.
    const LogRecord = protobuf.loadSync(PROTO_PATH).lookupType('cohort.v1.LogRecord');
    const Envelope = protobuf.loadSync(PROTO_PATH).lookupType('cohort.v1.SignedEnvelope');
    const known = LogRecord.encode(
      LogRecord.fromObject({
        federation: F,
        sequence: 5,
        previousEntry: sha256(entries[3]!.bytes),
        unixMs: 5,
      }),
    ).finish();
    const body = new Uint8Array([...known, 0xf2, 0x01, 0x02, 0x08, 0x01]); // field 30, length 2: { 1: 1 }
    const envelope = Envelope.encode(
      Envelope.fromObject({
        type: 'log-record',
        body,
        signer: 'coordinator',
        signerKeyId: coordinator.keyId,
        signatureAlgorithm: SIGNATURE_ALGORITHM_IDS[coordinator.algorithm],
        signature: sign(coordinator, controlDomain('log-record'), body),
      }),
    ).finish();
    const newer = frame(FRAME_KIND.control, envelope);
    // Re-chain entries 6 and 7 after it.
    const rest = seal(records).slice(5);
    let previous = sha256(newer);
    const tail = rest.map((e, i) => {
      const record = {
        federation: F,
        sequence: 6 + i,
        previousEntry: previous,
        unixMs: 1005 + i,
        ...records[5 + i]!,
      };
      const bytes = sealControl('log-record', record, 'coordinator', coordinator);
      previous = sha256(bytes);
      return { sequence: e.sequence, bytes };
    });
    const r = await audit(
      await bundleOf([...entries.slice(0, 4), { sequence: 5, bytes: newer }, ...tail], objects),
    );
    expect(r.problems).toEqual([]);
    expect(notUnlogged(r).map((u) => [u.sequence, u.code])).toEqual([[5, 'UNCHECKED_KIND']]);
    expect(r.checked.uncheckedKinds).toBe(1);
    expect(r.checked.links).toBe(7);
    expect(r.verified).toBe(true);
    // The same record signed by another key is a problem, not an unchecked kind.
    const forged = sealControl(
      'log-record',
      { federation: F, sequence: 5, previousEntry: sha256(entries[3]!.bytes), unixMs: 5 },
      'coordinator',
      mallory,
    );
    const bad = await audit(
      await bundleOf([...entries.slice(0, 4), { sequence: 5, bytes: forged }, ...tail], objects),
    );
    expect(codes(bad)[0]).toEqual([5, 'SIGNATURE_INVALID']);
  });

  it('aggregates: missing, a size other than the decision names, unreadable, skipped', async () => {
    const { records, objects, c1 } = scenario();
    const entries = seal(records);
    const absent = await audit(await bundleOf(entries, [objects[0]!, ['round-2', null]]));
    expect(codes(absent)).toEqual([[7, 'AGGREGATE_MISSING']]);

    const resized = [...records];
    const d = records[6]!.decision!;
    resized[6] = {
      decision: { ...d, aggregate: { ...d.aggregate!, objectBytes: d.aggregate!.objectBytes + 1 } },
    };
    expect(codes(await audit(await bundleOf(seal(resized), objects)))).toEqual([
      [7, 'AGGREGATE_SIZE_MISMATCH'],
    ]);
    const twoBlocks = encodeAggregateObject([seed(2, 100), seed(3, 100)]);
    const wrongCount = [...records];
    const c2 = roundCommit(c1.commit, {
      round: 2,
      aggregateDigest: sha256(twoBlocks),
      modelHash: seed(22, 32),
      params: new Uint8Array([2]),
    });
    wrongCount[6] = {
      decision: {
        ...d,
        commitHash: c2.hash,
        aggregateDigest: c2.aggregateDigest,
        aggregate: { ...d.aggregate!, objectBytes: twoBlocks.length },
      },
    };
    const counted = await audit(await bundleOf(seal(wrongCount), [objects[0]!, ['round-2', twoBlocks]]));
    expect(codes(counted)).toEqual([[7, 'AGGREGATE_SIZE_MISMATCH']]);
    expect(counted.problems[0]!.message).toContain('2 ciphertexts');

    const unreadable = await audit(await bundleOf(entries, [objects[0]!]));
    expect(unreadable.problems).toEqual([]);
    expect(notUnlogged(unreadable).map((u) => [u.sequence, u.code])).toEqual([[7, 'AGGREGATE_UNREADABLE']]);
    expect(unreadable.verified).toBe(false);

    const skipped = await audit(await bundleOf(entries, []), true);
    expect(skipped.unchecked.map((u) => u.code)).toEqual(['AGGREGATE_SKIPPED', 'AGGREGATE_SKIPPED']);
    expect(skipped.verified).toBe(true);
  });

  it('entries missing at the end of the log: LOG_TRUNCATED at its last sequence', async () => {
    const { records, objects } = scenario();
    const r = await audit(await bundleOf(seal(records), objects, 9));
    expect(r.problems).toEqual([
      {
        sequence: 9,
        code: 'LOG_TRUNCATED',
        message: "the log's last entry is 9, the last one read is 7: entries 8–9 are missing",
      },
    ]);
  });
});

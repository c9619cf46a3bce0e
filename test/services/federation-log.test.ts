import {
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sha256 } from '../../crypto/digest/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../crypto/signature/index.ts';
import {
  type AggregateInfo,
  type ControlBodies,
  type DecisionBody,
  type LogRecordBody,
  type SnapshotRecordBody,
  sealControl,
} from '../../src/protocol/index.ts';
import { LogFollower } from '../../src/services/agent/log-follower.ts';
import {
  ADMIN_ACTION_ROLLBACK,
  ensureLogStream,
  FederationLogError,
  type FederationLogReader,
  LOG_MAX_ENTRY_BYTES,
  LOG_ORIGIN,
  LOG_ORIGIN_HASH,
  type LogEntry,
  LogHistory,
  type LogPosition,
  type LogRecordInput,
  logStreamName,
  openLogEntry,
  openLogReader,
  openLogWriter,
  recordKind,
} from '../../src/services/federation-log/index.ts';
import { federationSubjects, type NatsUser, readOnlyStreamSubjects } from '../../src/transport/index.ts';
import {
  bytesToHex,
  type Commit,
  genesisCommit,
  rollbackCommit,
  roundCommit,
} from '../../src/versions/index.ts';
import { emptyDecision } from '../helpers/log-records.ts';
import {
  type NatsClusterHandle,
  type NatsServerHandle,
  startNatsCluster,
  startNatsServer,
} from '../helpers/nats-server.ts';
import { nkeyUser } from '../helpers/nkey-user.ts';

// Signing is randomized (hedged): two seals of one record differ. One test needs a second writer
// to produce the very bytes the first stored (as a retried publish does), so signatures can be
// made deterministic for it: the first signature of a message is reused.
const signing = vi.hoisted(() => ({ deterministic: false, memo: new Map<string, Uint8Array>() }));
vi.mock('../../crypto/signature/index.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../crypto/signature/index.ts')>();
  const sign: typeof real.sign = (key, domain, message) => {
    if (!signing.deterministic) return real.sign(key, domain, message);
    const id = `${key.keyId}|${domain}|${Buffer.from(message).toString('hex')}`;
    let signature = signing.memo.get(id);
    if (signature === undefined) {
      signature = real.sign(key, domain, message);
      signing.memo.set(id, signature);
    }
    return signature;
  };
  return { ...real, sign };
});

const COORDINATOR = 'coordinator';
const T0 = 1_700_000_000_000;
const EMPTY = new Uint8Array(0);
const coordinatorKey = generateSigningKeyPair('falcon-512');
const malloryKey = generateSigningKeyPair('falcon-512');
const keys = (signer: string) =>
  signer === COORDINATOR ? coordinatorKey : signer === 'mallory' ? malloryKey : undefined;

const H = (text: string) => sha256(new TextEncoder().encode(text));
const hex = (bytes: Uint8Array) => bytesToHex(bytes);
const PARAMS = new TextEncoder().encode('{"strategy":"fedavg","lr":1}');

// ---- hand-built records ----------------------------------------------------------------------

// genesis → c1 (round 1) → r3 (round 3: rollback to genesis' model) → c4 (round 4)
const genesis = genesisCommit(new Float32Array([0.5, -0.25, 1]), PARAMS);
const c1 = roundCommit(genesis, {
  round: 1,
  aggregateDigest: H('aggregate 1'),
  modelHash: H('model 1'),
  params: PARAMS,
});
const r3 = rollbackCommit(c1, genesis, 3, PARAMS);
const c4 = roundCommit(r3, {
  round: 4,
  aggregateDigest: H('aggregate 4'),
  modelHash: H('model 4'),
  params: PARAMS,
});

function aggregateInfo(round: number): AggregateInfo {
  return {
    encoding: {
      bits: 8,
      clip: 1,
      laneBits: 16,
      lanesPerSlot: 3,
      maxContributors: 16,
      scaleBits: 40,
      slots: 4096,
      paramsPerBlock: 12288,
      ckksParamsId: H('ckks'),
    },
    totalParams: 3,
    contributors: [
      { site: 'site-a', digest: H(`update a ${round}`), weight: 60 },
      { site: 'site-b', digest: H(`update b ${round}`), weight: 40 },
    ],
    totalWeight: 100,
    participants: 2,
    totalExamples: 100,
    object: `round-${round}`,
    objectBytes: 2048,
  };
}

function openRecord(federation: string, round: number, base: Commit): ControlBodies['round-open'] {
  return {
    federation,
    round,
    version: base.height,
    baseCommit: base.hash,
    assignments: [
      { site: 'site-a', aggregator: 'agg-1', examples: 50 },
      { site: 'site-b', aggregator: 'agg-1', examples: 50 },
    ],
    bits: 8,
    clip: 1,
    maxContributors: 16,
    crcChunkBytes: 4096,
    deadlineUnixMs: T0 + round * 1000,
    totalExamples: 100,
    totalParams: 7850,
    attempt: new Uint8Array(16).fill(round),
  };
}

/** The COMMIT that moves the head `parent` to `next` (a round or rollback commit). */
function commitRecord(federation: string, parent: Commit, next: Commit, target?: Commit): DecisionBody {
  return {
    ...emptyDecision(federation, next.round, parent),
    commit: true,
    commitHash: next.hash,
    modelHash: next.modelHash,
    height: next.height,
    aggregateDigest: next.kind === 'round' ? next.aggregateDigest : EMPTY,
    voters: ['site-a', 'site-b'],
    kind: next.kind,
    params: next.params,
    aggregate: next.kind === 'round' ? aggregateInfo(next.round) : null,
    rollbackTarget: target?.hash ?? EMPTY,
    stateHash: H(`state ${next.round}`),
    nextClip: 1,
  };
}

function abortRecord(federation: string, round: number, head: Commit): DecisionBody {
  return {
    ...emptyDecision(federation, round, head),
    voters: ['site-a', 'site-b'],
    reason: 'NO from site-b (disk full)',
    exclusions: [{ site: 'site-b', strikes: 1, sinceRound: round, atHeight: head.height, excluded: true }],
    nextClip: 1,
  };
}

function snapshotRecord(commit: Commit): SnapshotRecordBody {
  return {
    commitHash: commit.hash,
    height: commit.height,
    object: `height-${commit.height}`,
    digest: H(`snapshot ${commit.height}`),
    bytes: 1234,
    site: 'site-a',
  };
}

/** The valid script: open 1, COMMIT 1, open 2, ABORT 2, snapshot c1, open 3, rollback COMMIT 3, open 4, COMMIT 4. */
function script(federation: string): LogRecordInput[] {
  return [
    { roundOpen: openRecord(federation, 1, genesis) },
    { decision: commitRecord(federation, genesis, c1) },
    { roundOpen: openRecord(federation, 2, c1) },
    { decision: abortRecord(federation, 2, c1) },
    { snapshot: snapshotRecord(c1) },
    { roundOpen: openRecord(federation, 3, c1) },
    { decision: commitRecord(federation, c1, r3, genesis) },
    { roundOpen: openRecord(federation, 4, r3) },
    { decision: commitRecord(federation, r3, c4) },
  ];
}

/** An unsigned entry for LogHistory (it reads only the record, sequence and hash). */
function unsigned(sequence: number, input: LogRecordInput, federation = 'f'): LogEntry {
  const record: LogRecordBody = {
    federation,
    sequence,
    previousEntry: H(`entry ${sequence - 1}`),
    unixMs: T0 + sequence,
    ...input,
  };
  return { sequence, bytes: EMPTY, hash: H(`entry ${sequence}`), record };
}

function fold(records: readonly LogRecordInput[]): LogHistory {
  const history = new LogHistory(genesis, 'COHORT_F');
  for (const [i, r] of records.entries()) history.apply(unsigned(i + 1, r));
  return history;
}

function thrown(fn: () => unknown): FederationLogError {
  try {
    fn();
  } catch (err) {
    if (err instanceof FederationLogError) return err;
    throw err;
  }
  throw new Error('expected a FederationLogError');
}

async function rejection(p: Promise<unknown>): Promise<FederationLogError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err instanceof FederationLogError) return err;
  throw new Error(`expected a FederationLogError, got ${String(err)}`);
}

async function collect(entries: AsyncIterable<LogEntry>): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  for await (const e of entries) out.push(e);
  return out;
}

// ---- LogHistory (no server) ------------------------------------------------------------------

describe('LogHistory', () => {
  it('keeps a logged rollback request pending until a rollback round takes it, or two other rounds pass it', () => {
    const request = (target: Commit): LogRecordInput => ({
      adminAction: {
        action: ADMIN_ACTION_ROLLBACK,
        caller: 'coordinator',
        scope: 'signed-request',
        target: bytesToHex(target.hash),
        arguments: new TextEncoder().encode('{"reason":"bad round"}'),
        unixMs: T0,
      },
    });
    const base = script('f').slice(0, 2); // round 1 committed: c1
    // One other round after it (opened before the request was queued, say): still pending.
    let h = fold([
      ...base,
      request(genesis),
      { roundOpen: openRecord('f', 2, c1) },
      { decision: abortRecord('f', 2, c1) },
    ]);
    expect(h.pendingRollbacks.map((r) => [bytesToHex(r.target), r.reason])).toEqual([
      [bytesToHex(genesis.hash), 'bad round'],
    ]);
    // A rollback round to its target takes it.
    h = fold([
      ...base,
      request(genesis),
      { roundOpen: openRecord('f', 3, c1) },
      { decision: commitRecord('f', c1, r3, genesis) },
    ]);
    expect(h.pendingRollbacks).toEqual([]);
    // Two other rounds opened after it: lost or refused, never run late.
    h = fold([
      ...base,
      request(genesis),
      { roundOpen: openRecord('f', 2, c1) },
      { decision: abortRecord('f', 2, c1) },
      { roundOpen: openRecord('f', 3, c1) },
      { decision: abortRecord('f', 3, c1) },
    ]);
    expect(h.pendingRollbacks).toEqual([]);
  });

  it('folds open → COMMIT, open → ABORT, a snapshot, a rollback and a round commit', () => {
    const history = new LogHistory(genesis, 'COHORT_F');
    expect(history.position).toEqual(LOG_ORIGIN);
    expect(history.head.commit.hash).toEqual(genesis.hash);
    expect(history.head.sequence).toBe(0);
    expect(history.lastRound).toBe(0);
    expect(history.openRound).toBeNull();
    expect(history.lastDecision).toBeNull();

    const entries = script('f').map((r, i) => unsigned(i + 1, r));
    history.apply(entries[0]!);
    expect(history.openRound?.roundOpen.round).toBe(1);
    expect(history.openRound?.entry.sequence).toBe(1);
    expect(history.lastRound).toBe(1);
    history.apply(entries[1]!);
    expect(history.openRound).toBeNull();
    expect(history.head.commit.hash).toEqual(c1.hash);
    history.apply(entries[2]!);
    history.apply(entries[3]!); // ABORT of round 2: the head stays c1
    expect(history.head.commit.hash).toEqual(c1.hash);
    expect(history.lastDecision?.sequence).toBe(4);
    for (const e of entries.slice(4)) history.apply(e);

    expect(history.position).toEqual({ sequence: 9, hash: H('entry 9') });
    expect(history.lastRound).toBe(4);
    expect(history.openRound).toBeNull();
    expect(history.lastDecision?.sequence).toBe(9);
    // The chain: genesis (0), c1 (1), r3 (2), c4 (3).
    expect(history.head.commit.hash).toEqual(c4.hash);
    expect(history.head.commit.height).toBe(3);
    expect([0, 1, 2, 3].map((h) => hex(history.commitAt(h)!.commit.hash))).toEqual(
      [genesis, c1, r3, c4].map((c) => hex(c.hash)),
    );
    expect(history.commitAt(4)).toBeUndefined();
    const atC1 = history.commitByHash(c1.hash)!;
    expect(atC1.sequence).toBe(2);
    expect(atC1.unixMs).toBe(T0 + 2);
    expect(atC1.decision?.round).toBe(1);
    expect(history.commitByHash(genesis.hash)).toMatchObject({ sequence: 0, unixMs: 0, decision: null });
    // The rollback restored genesis' model under a new hash.
    const rolled = history.commitByHash(r3.hash)!;
    expect(rolled.commit.kind).toBe('rollback');
    expect(rolled.commit.modelHash).toEqual(genesis.modelHash);
    expect(rolled.sequence).toBe(7);
    expect(history.commitByHash(H('nowhere'))).toBeUndefined();

    expect(history.decisionOf(1)).toMatchObject({ sequence: 2, decision: { commit: true } });
    expect(history.decisionOf(2)).toMatchObject({ sequence: 4, decision: { commit: false } });
    expect(history.decisionOf(3)?.decision.kind).toBe('rollback');
    expect(history.decisionOf(5)).toBeUndefined();

    expect(history.snapshots.map((s) => s.entry.sequence)).toEqual([5]);
    expect(history.snapshotAtOrBelow(0)).toBeUndefined();
    expect(history.snapshotAtOrBelow(1)?.snapshot.commitHash).toEqual(c1.hash);
    expect(history.snapshotAtOrBelow(3)?.entry.sequence).toBe(5);
  });

  it('accepts a gap in round numbers, a snapshot of genesis and of an older commit', () => {
    const history = fold([
      { roundOpen: openRecord('f', 1, genesis) },
      { decision: commitRecord('f', genesis, c1) },
      { snapshot: snapshotRecord(genesis) },
      { roundOpen: openRecord('f', 7, c1) }, // rounds 2-6 were never opened (e.g. a quiet coordinator)
      { snapshot: snapshotRecord(c1) }, // a snapshot may land while a round is open
      { decision: abortRecord('f', 7, c1) },
    ]);
    expect(history.lastRound).toBe(7);
    expect(history.snapshots.map((s) => s.snapshot.height)).toEqual([0, 1]);
    expect(history.snapshotAtOrBelow(0)?.entry.sequence).toBe(3);
    expect(history.snapshotAtOrBelow(1)?.entry.sequence).toBe(5);
  });

  it('finds the highest snapshot at or below a height, whatever order they were recorded in', () => {
    const history = fold([
      { roundOpen: openRecord('f', 1, genesis) },
      { decision: commitRecord('f', genesis, c1) },
      { snapshot: snapshotRecord(c1) },
      { snapshot: snapshotRecord(genesis) }, // handed in later by a site that was behind
    ]);
    expect(history.snapshots.map((s) => s.snapshot.height)).toEqual([1, 0]);
    expect(history.snapshotAtOrBelow(1)?.entry.sequence).toBe(3);
    expect(history.snapshotAtOrBelow(5)?.entry.sequence).toBe(3);
    expect(history.snapshotAtOrBelow(0)?.entry.sequence).toBe(4);
  });

  it('retains the newest rounds in full with retainRounds, the whole chain always', () => {
    const history = new LogHistory(genesis, 'COHORT_F', { retainRounds: 2 });
    for (const [i, r] of script('f').entries()) history.apply(unsigned(i + 1, r));
    // Rounds 1-4 decided (COMMIT, ABORT, rollback COMMIT, COMMIT): the newest two stay whole.
    expect(history.decided.map((r) => r.round)).toEqual([3, 4]);
    expect(history.decisionOf(1)).toBeUndefined();
    expect(history.decisionOf(2)).toBeUndefined();
    expect(history.decisionOf(3)?.open.round).toBe(3);
    expect(history.decisionOf(4)?.openSequence).toBe(8);
    // Every commit stays on the chain; the oldest non-genesis one without its decision, but with
    // the sequences to read it back from the log.
    expect([0, 1, 2, 3].map((h) => hex(history.commitAt(h)!.commit.hash))).toEqual(
      [genesis, c1, r3, c4].map((c) => hex(c.hash)),
    );
    expect(history.commitByHash(c1.hash)).toMatchObject({ sequence: 2, openSequence: 1, decision: null });
    expect(history.commitAt(2)).toMatchObject({ sequence: 7, openSequence: 6, decision: { round: 3 } });
    expect(history.head.decision?.round).toBe(4);
    expect(history.snapshotAtOrBelow(3)?.snapshot.commitHash).toEqual(c1.hash);
    // The checks do not change: a decision that does not follow the head is still refused.
    expect(() => history.apply(unsigned(10, { roundOpen: openRecord('f', 5, c1) }))).toThrow(/based on/);
    expect(() => new LogHistory(genesis, 'COHORT_F', { retainRounds: 0 })).toThrow(/retainRounds/);
  });

  it('shows the round still open at the end of the log', () => {
    const history = fold(script('f').slice(0, 8));
    expect(history.openRound?.roundOpen.round).toBe(4);
    expect(history.openRound?.roundOpen.baseCommit).toEqual(r3.hash);
    expect(history.openRound?.entry.sequence).toBe(8);
    expect(history.lastDecision?.sequence).toBe(7);
  });

  it('refuses to start anywhere but at a genesis commit', () => {
    expect(thrown(() => new LogHistory(c1)).code).toBe('LOG_HISTORY_INVALID');
    expect(thrown(() => new LogHistory({ ...genesis, hash: H('forged') })).code).toBe('LOG_HISTORY_INVALID');
  });

  // Each case: a valid prefix of the script, then one entry with one fault.
  const open1 = { roundOpen: openRecord('f', 1, genesis) };
  const commit1 = { decision: commitRecord('f', genesis, c1) };
  const open2 = { roundOpen: openRecord('f', 2, c1) };
  const cases: [name: string, prefix: LogRecordInput[], bad: LogRecordInput, message: RegExp][] = [
    [
      'a decision of a round never opened',
      [],
      { decision: commitRecord('f', genesis, c1) },
      /entry 1: decides round 1, which was never opened \(last round 0\)/,
    ],
    [
      'a decision after its round was decided',
      [open1, commit1],
      { decision: abortRecord('f', 1, c1) },
      /entry 3: decides round 1, which was never opened \(last round 1\)/,
    ],
    [
      'a decision of another round than the open one',
      [open1],
      { decision: abortRecord('f', 2, genesis) },
      /entry 2: decides round 2 while round 1 is open/,
    ],
    [
      'a second open before the decision',
      [open1],
      { roundOpen: openRecord('f', 2, genesis) },
      /entry 2: opens round 2 while round 1 is undecided/,
    ],
    [
      'a round not after the last',
      [open1, commit1],
      { roundOpen: openRecord('f', 1, c1) },
      /entry 3: opens round 1, not after round 1/,
    ],
    [
      'an open on another base than the head',
      [open1, commit1],
      { roundOpen: openRecord('f', 2, genesis) },
      /entry 3: round 2 is based on .* \(height 0\), the head is .* \(height 1\)/,
    ],
    [
      'an open on the head with another height',
      [open1, commit1],
      { roundOpen: { ...openRecord('f', 2, c1), version: 0 } },
      /entry 3: round 2 is based on .* \(height 0\), the head is .* \(height 1\)/,
    ],
    [
      'a COMMIT whose parent is not the head',
      [open1, commit1, open2],
      {
        decision: commitRecord(
          'f',
          genesis,
          roundCommit(genesis, {
            round: 2,
            aggregateDigest: H('aggregate 2'),
            modelHash: H('model 2'),
            params: PARAMS,
          }),
        ),
      },
      /entry 4: decision of round 2 has parent .*, the head is /,
    ],
    [
      'an ABORT whose parent is not the head',
      [open1, commit1, open2],
      { decision: abortRecord('f', 2, genesis) },
      /entry 4: decision of round 2 has parent /,
    ],
    [
      'a COMMIT whose height skips',
      [open1],
      { decision: { ...commitRecord('f', genesis, c1), height: 2 } },
      /entry 2: COMMIT of round 1 at height 2, expected 1/,
    ],
    [
      'a COMMIT whose hash is not the hash of its fields',
      [open1],
      { decision: { ...commitRecord('f', genesis, c1), modelHash: H('another model') } },
      /entry 2: COMMIT of round 1 names hash [0-9a-f]{12}, its fields hash to [0-9a-f]{12}/,
    ],
    [
      'a COMMIT of an unknown kind',
      [open1],
      { decision: { ...commitRecord('f', genesis, c1), kind: '' } },
      /entry 2: COMMIT of round 1 has kind ""/,
    ],
    [
      'a round COMMIT without its aggregate',
      [open1],
      { decision: { ...commitRecord('f', genesis, c1), aggregate: null } },
      /entry 2: COMMIT of round 1 names no aggregate/,
    ],
    [
      'a rollback to a commit not on the chain',
      [open1, commit1, open2],
      {
        decision: {
          ...commitRecord('f', c1, rollbackCommit(c1, genesis, 2, PARAMS), genesis),
          rollbackTarget: H('nowhere'),
        },
      },
      /entry 4: rollback to [0-9a-f]{12}, which is not on the chain/,
    ],
    [
      'a rollback that names another model hash than its target',
      [open1, commit1, open2],
      // Names genesis as its target but restores c1's model (a commit whose hash is right).
      { decision: commitRecord('f', c1, rollbackCommit(c1, c1, 2, PARAMS), genesis) },
      /entry 4: rollback to height 0 names another model hash/,
    ],
    [
      'an ABORT that moves the height',
      [open1],
      { decision: { ...abortRecord('f', 1, genesis), height: 1 } },
      /entry 2: ABORT of round 1 at height 1, the head is at 0/,
    ],
    [
      'an ABORT that names a commit hash',
      [open1],
      { decision: { ...abortRecord('f', 1, genesis), commitHash: c1.hash } },
      /entry 2: ABORT of round 1 names a commit hash/,
    ],
    [
      'a snapshot of a commit not on the chain',
      [open1, commit1],
      { snapshot: { ...snapshotRecord(c1), commitHash: H('elsewhere') } },
      /entry 3: snapshot of [0-9a-f]{12} at height 1, which is not on the chain/,
    ],
    [
      'a snapshot of a chain commit at another height',
      [open1, commit1],
      { snapshot: { ...snapshotRecord(c1), height: 0 } },
      /entry 3: snapshot of [0-9a-f]{12} at height 0, which is not on the chain/,
    ],
    [
      'a snapshot above the head',
      [open1],
      { snapshot: snapshotRecord(c1) },
      /entry 2: snapshot of [0-9a-f]{12} at height 1, which is not on the chain/,
    ],
  ];

  it.each(cases)('refuses %s, naming the entry, and keeps its state', (_name, prefix, bad, message) => {
    const history = fold(prefix);
    const before = {
      position: history.position,
      head: hex(history.head.commit.hash),
      lastRound: history.lastRound,
      open: history.openRound?.roundOpen.round,
      snapshots: history.snapshots.length,
    };
    const sequence = prefix.length + 1;
    const err = thrown(() => history.apply(unsigned(sequence, bad)));
    expect(err.code).toBe('LOG_HISTORY_INVALID');
    expect(err.message).toMatch(message);
    expect(err.message).toContain(`log COHORT_F entry ${sequence}:`);
    expect(err.details).toEqual({ stream: 'COHORT_F', sequence });
    expect({
      position: history.position,
      head: hex(history.head.commit.hash),
      lastRound: history.lastRound,
      open: history.openRound?.roundOpen.round,
      snapshots: history.snapshots.length,
    }).toEqual(before);
  });
});

// ---- entries: signatures and context (no server) ---------------------------------------------

describe('openLogEntry', () => {
  const opts = { federation: 'f', coordinator: COORDINATOR, keys, stream: 'COHORT_F' };
  const record = (over: Partial<LogRecordBody> = {}): LogRecordBody => ({
    federation: 'f',
    sequence: 1,
    previousEntry: LOG_ORIGIN_HASH,
    unixMs: T0,
    roundOpen: openRecord('f', 1, genesis),
    ...over,
  });
  const seal = (body: LogRecordBody, signer = COORDINATOR, key: SigningKeyPair = coordinatorKey) =>
    sealControl('log-record', body, signer, key);

  it('opens an entry signed by the coordinator and hashes its exact bytes', () => {
    const bytes = seal(record());
    const entry = openLogEntry(bytes, 1, opts);
    expect(entry.sequence).toBe(1);
    expect(entry.bytes).toBe(bytes);
    expect(entry.hash).toEqual(sha256(bytes));
    expect(recordKind(entry.record)).toBe('roundOpen');
    expect(entry.record.roundOpen?.baseCommit).toEqual(genesis.hash);
    // A broadcast entry: any sequence.
    expect(openLogEntry(bytes, undefined, opts).sequence).toBe(1);
  });

  const cases: [name: string, bytes: () => Uint8Array, message: RegExp][] = [
    ['signed by someone else', () => seal(record(), 'mallory', malloryKey), /signed by "mallory"/],
    [
      "naming the coordinator with another's key",
      () => seal(record(), COORDINATOR, malloryKey),
      /not a signed log record: .*unknown signer or key/,
    ],
    ['for another federation', () => seal(record({ federation: 'g' })), /is for federation "g", not f/],
    ['claiming another sequence', () => seal(record({ sequence: 2 })), /entry 1: claims sequence 2/],
    [
      'with a short previousEntry',
      () => seal(record({ previousEntry: new Uint8Array(31) })),
      /previousEntry is not 32 bytes/,
    ],
    ['holding no record', () => seal(record({ roundOpen: null })), /holds 0 records, expects exactly one/],
    [
      'not a log record at all',
      () => sealControl('round-open', openRecord('f', 1, genesis), COORDINATOR, coordinatorKey),
      /not a signed log record/,
    ],
  ];

  it('keeps only the last of two records sealed into one entry (a protobuf oneof)', () => {
    // Why the writer refuses such an input: what is stored would differ from what it was given.
    const entry = openLogEntry(seal(record({ snapshot: snapshotRecord(genesis) })), 1, opts);
    expect(recordKind(entry.record)).toBe('snapshot');
    expect(entry.record.roundOpen ?? null).toBeNull();
  });

  it.each(cases)('refuses an entry %s', (_name, bytes, message) => {
    const err = thrown(() => openLogEntry(bytes(), 1, opts));
    expect(err.code).toBe('LOG_ENTRY_INVALID');
    expect(err.message).toMatch(message);
    expect(err.details).toMatchObject({ sequence: 1, stream: 'COHORT_F' });
  });
});

// ---- on a nats-server ------------------------------------------------------------------------

describe('federation log on JetStream', () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true });
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  const settings = (federation: string) => ({ federation, replicas: 1, maxBytes: 1 << 20 });
  const reader = (federation: string, conn: NatsConnection = nc) =>
    openLogReader(conn, { federation, coordinator: COORDINATOR, keys });
  const writer = (federation: string, start: LogPosition = LOG_ORIGIN, attempts?: number) =>
    openLogWriter(nc, {
      federation,
      signer: COORDINATOR,
      signing: coordinatorKey,
      start,
      now: () => T0,
      ...(attempts === undefined ? {} : { attempts, retryMs: 1 }),
    });

  /** A stream as ensureLogStream creates it, with `over` applied. */
  const streamConfig = (
    federation: string,
    over: Partial<StreamConfig>,
  ): Partial<StreamConfig> & { name: string } => ({
    name: logStreamName(federation),
    subjects: [federationSubjects(federation).log],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.New,
    num_replicas: 1,
    deny_delete: true,
    deny_purge: true,
    ...over,
  });

  describe('ensureLogStream', () => {
    it('creates a file stream that denies deletes, purges and rollups, and accepts it again', async () => {
      const name = await ensureLogStream(jsm, settings('fl-create'));
      expect(name).toBe('COHORT_FL-CREATE');
      const { config } = await jsm.streams.info(name);
      expect(config).toMatchObject({
        name: 'COHORT_FL-CREATE',
        subjects: ['cohort.fl-create.log'],
        storage: 'file',
        retention: 'limits',
        discard: 'new',
        num_replicas: 1,
        deny_delete: true,
        deny_purge: true,
        allow_rollup_hdrs: false,
        max_age: 0,
        max_msgs: -1,
        max_msgs_per_subject: -1,
        max_bytes: 1 << 20,
        max_msg_size: LOG_MAX_ENTRY_BYTES,
      });
      await expect(ensureLogStream(jsm, settings('fl-create'))).resolves.toBe(name);

      // The server itself enforces what the settings promise, even against the coordinator.
      await (await writer('fl-create')).append({ roundOpen: openRecord('fl-create', 1, genesis) });
      await expect(jsm.streams.purge(name)).rejects.toBeInstanceOf(JetStreamApiError);
      await expect(jsm.streams.deleteMessage(name, 1)).rejects.toBeInstanceOf(JetStreamApiError);
      const rollup = headers();
      rollup.set('Nats-Rollup', 'all');
      await expect(
        jetstream(nc).publish('cohort.fl-create.log', 'wipe', { headers: rollup }),
      ).rejects.toBeInstanceOf(JetStreamApiError);
      expect((await jsm.streams.info(name)).state).toMatchObject({ messages: 1, first_seq: 1, last_seq: 1 });
    });

    // Each a stream as ensureLogStream would create it but for one setting.
    const mismatches: [name: string, federation: string, over: Partial<StreamConfig>, problem: string][] = [
      ['memory storage', 'fl-mm-mem', { storage: StorageType.Memory }, 'storage is memory, expected file'],
      ['purges allowed', 'fl-mm-purge', { deny_purge: false }, 'deny_purge is false, expected true'],
      ['deletes allowed', 'fl-mm-delete', { deny_delete: false }, 'deny_delete is false, expected true'],
      [
        'another subject too',
        'fl-mm-subj',
        { subjects: ['cohort.fl-mm-subj.log', 'cohort.fl-mm-subj.other'] },
        'subjects are [cohort.fl-mm-subj.log, cohort.fl-mm-subj.other], expected [cohort.fl-mm-subj.log]',
      ],
      ['discard old', 'fl-mm-discard', { discard: DiscardPolicy.Old }, 'discard is old, expected new'],
      // The server allows rollups only on a stream that allows purges: both are named.
      [
        'rollup headers allowed',
        'fl-mm-rollup',
        { allow_rollup_hdrs: true, deny_purge: false },
        'allow_rollup_hdrs is true, expected false',
      ],
      [
        'a per-subject message limit',
        'fl-mm-per-subject',
        { max_msgs_per_subject: 10 },
        'max_msgs_per_subject is 10, expected -1 (no limit)',
      ],
    ];

    it.each(mismatches)(
      'refuses an existing stream with %s, leaving it as it is',
      async (_name, federation, over, problem) => {
        await jsm.streams.add(streamConfig(federation, over));
        const err = await rejection(ensureLogStream(jsm, settings(federation)));
        expect(err.code).toBe('LOG_STREAM_MISMATCH');
        expect(err.details['stream']).toBe(logStreamName(federation));
        expect(err.details['problems']).toContain(problem);
        expect(err.message).toContain(problem);
        // Nothing was changed: the stream keeps its settings.
        const { config: after } = await jsm.streams.info(logStreamName(federation));
        expect(after).toMatchObject(over);
      },
    );

    it('names every difference at once', async () => {
      await jsm.streams.add(streamConfig('fl-mm-all', { storage: StorageType.Memory, deny_purge: false }));
      const err = await rejection(ensureLogStream(jsm, settings('fl-mm-all')));
      expect(err.details['problems']).toEqual([
        'storage is memory, expected file',
        'deny_purge is false, expected true',
      ]);
    });
  });

  describe('writer and reader', () => {
    const F = 'fl-rw';
    let log: FederationLogReader;
    let appended: LogEntry[];

    beforeAll(async () => {
      await ensureLogStream(jsm, settings(F));
      log = await reader(F);
      const w = await writer(F);
      appended = [];
      for (const record of script(F)) appended.push(await w.append(record));
      expect(w.position()).toEqual({ sequence: 9, hash: appended[8]!.hash });
      expect(w.fenced).toBe(false);
    });

    it('gives a follower the decision and RoundOpen of a commit its history no longer retains', async () => {
      const follower = await LogFollower.open(nc, {
        federation: F,
        coordinator: COORDINATOR,
        keys,
        genesis,
        retainRounds: 1,
      });
      expect(await follower.sync()).toBe(9);
      const old = follower.history.commitAt(1)!; // c1, round 1: compacted
      expect(old.decision).toBeNull();
      const read = await follower.roundOf(old);
      expect(read.decision).toMatchObject({ round: 1, commit: true, height: 1 });
      expect(read.decision.commitHash).toEqual(c1.hash);
      expect(read.open).toMatchObject({ round: 1 });
      // From memory while retained: the head's.
      expect((await follower.roundOf(follower.history.head)).decision.round).toBe(4);
      // Entries that are not the commit's are refused, not used.
      const err = await rejection(follower.roundOf({ ...old, sequence: 4, openSequence: 3 }));
      expect(err.code).toBe('LOG_HISTORY_INVALID');
      expect(err.message).toMatch(/entries 3 and 4 are not the RoundOpen and decision of commit/);
    });

    it('reads a stream that does not exist yet, or holds nothing, as an empty log', async () => {
      const empty = await reader('fl-empty');
      expect(await empty.lastSequence()).toBe(0);
      expect(await collect(empty.entries())).toEqual([]);
      await ensureLogStream(jsm, settings('fl-empty'));
      expect(await empty.lastSequence()).toBe(0);
      expect(await collect(empty.entries())).toEqual([]);
    });

    it('appends entries chained from the origin, signed, with the clock and the record', () => {
      expect(appended.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(appended[0]!.record.previousEntry).toEqual(LOG_ORIGIN_HASH);
      for (const [i, e] of appended.entries()) {
        expect(e.hash).toEqual(sha256(e.bytes));
        expect(e.record).toMatchObject({ federation: F, sequence: i + 1, unixMs: T0 });
        if (i > 0) expect(e.record.previousEntry).toEqual(appended[i - 1]!.hash);
        // What was stored is what a reader opens.
        expect(
          openLogEntry(e.bytes, i + 1, { federation: F, coordinator: COORDINATOR, keys, stream: 'x' }).hash,
        ).toEqual(e.hash);
      }
      expect(appended.map((e) => recordKind(e.record))).toEqual([
        'roundOpen',
        'decision',
        'roundOpen',
        'decision',
        'snapshot',
        'roundOpen',
        'decision',
        'roundOpen',
        'decision',
      ]);
    });

    it('reads one entry, the last sequence, and refuses one beyond the end', async () => {
      expect(log.stream).toBe('COHORT_FL-RW');
      expect(log.subject).toBe('cohort.fl-rw.log');
      expect(await log.lastSequence()).toBe(9);
      const e2 = await log.get(2);
      expect(e2.bytes).toEqual(appended[1]!.bytes);
      expect(e2.hash).toEqual(appended[1]!.hash);
      const d = e2.record.decision!;
      expect(d).toMatchObject({
        round: 1,
        commit: true,
        height: 1,
        kind: 'round',
        voters: ['site-a', 'site-b'],
      });
      expect(hex(d.commitHash)).toBe(hex(c1.hash));
      expect(d.aggregate?.contributors.map((c) => c.site)).toEqual(['site-a', 'site-b']);
      const s = (await log.get(5)).record.snapshot!;
      expect(s).toMatchObject({ height: 1, object: 'height-1', bytes: 1234, site: 'site-a' });
      expect(hex(s.commitHash)).toBe(hex(c1.hash));
      expect((await log.get(4)).record.decision).toMatchObject({
        commit: false,
        reason: 'NO from site-b (disk full)',
      });
      const beyond = await rejection(log.get(10));
      expect(beyond.code).toBe('LOG_CHAIN_BROKEN');
      expect(beyond.message).toContain('has no entry 10');
    });

    it('iterates every entry from the origin, from a position and up to a bound, each linked', async () => {
      const all = await collect(log.entries());
      expect(all.map((e) => hex(e.hash))).toEqual(appended.map((e) => hex(e.hash)));
      for (let i = 1; i < all.length; i++) expect(all[i]!.record.previousEntry).toEqual(all[i - 1]!.hash);

      const from4 = await collect(log.entries({ sequence: 4, hash: appended[3]!.hash }));
      expect(from4.map((e) => e.sequence)).toEqual([5, 6, 7, 8, 9]);
      const upTo3 = await collect(log.entries(LOG_ORIGIN, 3));
      expect(upTo3.map((e) => e.sequence)).toEqual([1, 2, 3]);
      expect(await collect(log.entries({ sequence: 9, hash: appended[8]!.hash }))).toEqual([]);
      // A small window gives the same entries.
      const narrow = await openLogReader(nc, { federation: F, coordinator: COORDINATOR, keys, window: 1 });
      expect((await collect(narrow.entries())).map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // So does a reader that checks one signature per run of linked entries, whatever the run.
      for (const window of [1, 4, 128]) {
        const chained = await openLogReader(nc, {
          federation: F,
          coordinator: COORDINATOR,
          keys,
          window,
          signatures: 'chain',
        });
        expect((await collect(chained.entries())).map((e) => hex(e.hash))).toEqual(
          all.map((e) => hex(e.hash)),
        );
        expect((await collect(chained.entries(LOG_ORIGIN, 3))).map((e) => e.sequence)).toEqual([1, 2, 3]);
      }
    });

    it('refuses a start position the log does not hold', async () => {
      const wrongHash = await rejection(collect(log.entries({ sequence: 4, hash: appended[4]!.hash })));
      expect(wrongHash.code).toBe('LOG_CHAIN_BROKEN');
      expect(wrongHash.message).toContain('entry 5 does not chain to entry 4');
      const ahead = await rejection(collect(log.entries({ sequence: 12, hash: LOG_ORIGIN_HASH })));
      expect(ahead.code).toBe('LOG_BEHIND');
    });

    it('folds into the same history as the hand-built records', async () => {
      const history = new LogHistory(genesis, log.stream);
      for await (const e of log.entries()) history.apply(e);
      expect(history.position).toEqual({ sequence: 9, hash: appended[8]!.hash });
      expect(hex(history.head.commit.hash)).toBe(hex(c4.hash));
      expect(history.commitByHash(r3.hash)?.sequence).toBe(7);
      expect(history.snapshotAtOrBelow(3)?.entry.sequence).toBe(5);
    });

    it('lets a writer continue from the position a reader verified', async () => {
      const last = await log.get(9);
      const w = await writer(F, { sequence: 9, hash: last.hash });
      const e10 = await w.append({ roundOpen: openRecord(F, 5, c4) });
      expect(e10.sequence).toBe(10);
      expect(e10.record.previousEntry).toEqual(last.hash);
      expect((await collect(log.entries({ sequence: 9, hash: last.hash }))).map((e) => e.sequence)).toEqual([
        10,
      ]);
    });
  });

  describe('entries someone else published on the log subject', () => {
    it('refuses a forged message and a signed entry that does not chain', async () => {
      const F = 'fl-forged';
      await ensureLogStream(jsm, settings(F));
      const e1 = await (await writer(F)).append({ roundOpen: openRecord(F, 1, genesis) });
      const js = jetstream(nc);
      await js.publish(`cohort.${F}.log`, 'not a log record');
      const log = await reader(F);
      expect((await log.get(1)).hash).toEqual(e1.hash);
      const forged = await rejection(collect(log.entries()));
      expect(forged.code).toBe('LOG_ENTRY_INVALID');
      expect(forged.message).toContain('entry 2');

      const G = 'fl-unchained';
      await ensureLogStream(jsm, settings(G));
      await (await writer(G)).append({ roundOpen: openRecord(G, 1, genesis) });
      // Signed by the coordinator and claiming sequence 2, but linked to the origin (a replay).
      const replay = sealControl(
        'log-record',
        {
          federation: G,
          sequence: 2,
          previousEntry: LOG_ORIGIN_HASH,
          unixMs: T0,
          decision: abortRecord(G, 1, genesis),
        },
        COORDINATOR,
        coordinatorKey,
      );
      await js.publish(`cohort.${G}.log`, replay);
      const broken = await rejection(collect((await reader(G)).entries()));
      expect(broken.code).toBe('LOG_CHAIN_BROKEN');
      expect(broken.message).toContain('entry 2 does not chain to entry 1');
    });

    it("a chain reader checks each run's last signature: a bad one ends the read, one vouched for by a later entry passes", async () => {
      const F = 'fl-chain';
      await ensureLogStream(jsm, settings(F));
      const e1 = await (await writer(F)).append({ roundOpen: openRecord(F, 1, genesis) });
      const js = jetstream(nc);
      // Entry 2 claims the coordinator but carries mallory's signature.
      const forged = sealControl(
        'log-record',
        {
          federation: F,
          sequence: 2,
          previousEntry: e1.hash,
          unixMs: T0,
          decision: abortRecord(F, 1, genesis),
        },
        COORDINATOR,
        malloryKey,
      );
      await js.publish(`cohort.${F}.log`, forged);
      const chain = (window: number) =>
        openLogReader(nc, { federation: F, coordinator: COORDINATOR, keys, window, signatures: 'chain' });
      // The forged entry is the last: its own signature is checked, and nothing of the run is yielded.
      const seen: number[] = [];
      const last = await rejection(
        (async () => {
          for await (const e of (await chain(16)).entries()) seen.push(e.sequence);
        })(),
      );
      expect(last.code).toBe('LOG_ENTRY_INVALID');
      expect(last.message).toContain('entry 2');
      expect(seen).toEqual([]);
      const every = await rejection(collect((await reader(F)).entries()));
      expect(every.code).toBe('LOG_ENTRY_INVALID');

      // The coordinator signs entry 3 over entry 2's hash: that signature vouches for entry 2's bytes,
      // so a chain reader whose run ends at 3 takes both, while one checking every entry refuses 2.
      const e3 = sealControl(
        'log-record',
        {
          federation: F,
          sequence: 3,
          previousEntry: sha256(forged),
          unixMs: T0,
          roundOpen: openRecord(F, 2, genesis),
        },
        COORDINATOR,
        coordinatorKey,
      );
      await js.publish(`cohort.${F}.log`, e3);
      expect((await collect((await chain(16)).entries())).map((e) => e.sequence)).toEqual([1, 2, 3]);
      expect((await rejection(collect((await chain(1)).entries()))).message).toContain('entry 2');
      expect((await rejection(collect((await reader(F)).entries()))).message).toContain('entry 2');
      expect((await rejection((await chain(16)).get(2))).code).toBe('LOG_ENTRY_INVALID');
    });
  });

  describe('fencing', () => {
    it('refuses the second of two writers opened at one position, and every later append of it', async () => {
      const F = 'fl-fence';
      await ensureLogStream(jsm, settings(F));
      const a = await writer(F);
      const b = await writer(F);
      const a1 = await a.append({ roundOpen: openRecord(F, 1, genesis) });
      expect(a1.sequence).toBe(1);

      const conflict = await rejection(b.append({ roundOpen: openRecord(F, 2, genesis) }));
      expect(conflict.code).toBe('LOG_SEQUENCE_CONFLICT');
      expect(conflict.message).toContain('another writer appended after entry 0');
      expect(b.fenced).toBe(true);
      expect(b.position()).toEqual(LOG_ORIGIN);
      const fenced = await rejection(b.append({ roundOpen: openRecord(F, 2, genesis) }));
      expect(fenced.code).toBe('LOG_FENCED');

      // The first writer carries on; the log holds its entries only.
      const a2 = await a.append({ decision: abortRecord(F, 1, genesis) });
      expect(a2.sequence).toBe(2);
      expect((await rejection(b.append({ decision: abortRecord(F, 1, genesis) }))).code).toBe('LOG_FENCED');
      const stored = await collect((await reader(F)).entries());
      expect(stored.map((e) => hex(e.bytes))).toEqual([a1, a2].map((e) => hex(e.bytes)));
    });

    it('fences a writer started at a stale position', async () => {
      const F = 'fl-stale';
      await ensureLogStream(jsm, settings(F));
      const a = await writer(F);
      const a1 = await a.append({ roundOpen: openRecord(F, 1, genesis) });
      const stale = await writer(F, { sequence: 1, hash: a1.hash });
      await a.append({ decision: abortRecord(F, 1, genesis) });
      const err = await rejection(stale.append({ decision: abortRecord(F, 1, genesis) }));
      expect(err.code).toBe('LOG_SEQUENCE_CONFLICT');
      expect(stale.fenced).toBe(true);
      expect(await (await reader(F)).lastSequence()).toBe(2);
    });

    it('recognises its own entry when the one stored is the very bytes it is publishing', async () => {
      // As after a publish whose acknowledgement was lost: the retry finds the entry already
      // there. Here writer `b` seals the bytes `a` stored (same record, clock and signature).
      const F = 'fl-own';
      await ensureLogStream(jsm, settings(F));
      signing.deterministic = true;
      try {
        const a = await writer(F);
        const b = await writer(F);
        const record = { roundOpen: openRecord(F, 1, genesis) };
        const a1 = await a.append(record);
        const b1 = await b.append(record);
        expect(b.fenced).toBe(false);
        expect(b1.sequence).toBe(1);
        expect(b1.hash).toEqual(a1.hash);
        expect(b.position()).toEqual({ sequence: 1, hash: a1.hash });
        const b2 = await b.append({ decision: abortRecord(F, 1, genesis) });
        expect(b2.sequence).toBe(2);
        // Now `a` is the stale one (with another record: the same one would be the same bytes).
        const other = { decision: { ...abortRecord(F, 1, genesis), reason: 'deadline passed' } };
        expect((await rejection(a.append(other))).code).toBe('LOG_SEQUENCE_CONFLICT');
        expect(a.fenced).toBe(true);
      } finally {
        signing.deterministic = false;
      }
      expect(await (await reader(F)).lastSequence()).toBe(2);
    });

    it('refuses a record input without exactly one record, appending nothing', async () => {
      const F = 'fl-shape';
      await ensureLogStream(jsm, settings(F));
      const w = await writer(F);
      for (const input of [
        {},
        { roundOpen: openRecord(F, 1, genesis), snapshot: snapshotRecord(genesis) },
      ] as LogRecordInput[]) {
        await expect(w.append(input)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      expect(w.fenced).toBe(false);
      expect(w.position()).toEqual(LOG_ORIGIN);
      expect(await (await reader(F)).lastSequence()).toBe(0);
      expect((await w.append({ snapshot: snapshotRecord(genesis) })).sequence).toBe(1);
    });

    it('reports an append to a missing stream as unavailable and stays usable', async () => {
      const F = 'fl-missing';
      const w = await writer(F, LOG_ORIGIN, 2);
      const err = await rejection(w.append({ roundOpen: openRecord(F, 1, genesis) }));
      expect(err.code).toBe('LOG_UNAVAILABLE');
      expect(w.fenced).toBe(false);
      await ensureLogStream(jsm, settings(F));
      expect((await w.append({ roundOpen: openRecord(F, 1, genesis) })).sequence).toBe(1);
    });

    it('an append reported unavailable whose publish lands late is taken in by the next append (refused, to be built again), not fenced on', async () => {
      // Its own server, paused with SIGSTOP: the publish waits in the socket, the writer gives up
      // (LOG_UNAVAILABLE), and the resumed server stores it as entry 1 after all.
      const own = await startNatsServer({ jetstream: true });
      const conn = await connect({ servers: own.url });
      try {
        const F = 'fl-late';
        await ensureLogStream(await jetstreamManager(conn), settings(F));
        const late: LogEntry[] = [];
        const w = await openLogWriter(conn, {
          federation: F,
          signer: COORDINATOR,
          signing: coordinatorKey,
          start: LOG_ORIGIN,
          now: () => T0,
          attempts: 1,
          timeoutMs: 500,
          onLateEntry: (e) => late.push(e),
        });
        process.kill(own.pid, 'SIGSTOP');
        let err: FederationLogError;
        try {
          err = await rejection(w.append({ roundOpen: openRecord(F, 1, genesis) }));
        } finally {
          process.kill(own.pid, 'SIGCONT');
        }
        expect(err.code).toBe('LOG_UNAVAILABLE');
        expect(err.message).toMatch(/outcome is unknown/);
        const jsm2 = await jetstreamManager(conn);
        for (let i = 0; (await jsm2.streams.info(federationSubjects(F).logStream)).state.messages < 1; i++) {
          if (i > 100) throw new Error('the stalled publish never landed');
          await new Promise((r) => setTimeout(r, 20));
        }
        // The next append finds its own earlier entry at 1 and hands it over; it appends nothing for
        // its own record (built for position 1, it may not hold after entry 1), and says so.
        const refused = await rejection(w.append({ snapshot: snapshotRecord(genesis) }));
        expect(refused.code).toBe('LOG_LATE_ENTRY');
        expect(late.map((e) => [e.sequence, e.record.roundOpen?.round])).toEqual([[1, 1]]);
        // Built again, it goes after the late entry.
        const next = await w.append({ snapshot: snapshotRecord(genesis) });
        expect(next.sequence).toBe(2);
        expect(Buffer.from(next.record.previousEntry).equals(Buffer.from(late[0]!.hash))).toBe(true);
        expect(w.fenced).toBe(false);
      } finally {
        await conn.close();
        await own.stop();
      }
    });

    it('checks beforeAttempt before every publish attempt: once it throws, the append ends with its error and sends nothing more', async () => {
      const F = 'fl-lease-retry';
      let attempts = 0;
      const w = await openLogWriter(nc, {
        federation: F,
        signer: COORDINATOR,
        signing: coordinatorKey,
        start: LOG_ORIGIN,
        now: () => T0,
        attempts: 5,
        retryMs: 1,
        beforeAttempt: () => {
          attempts++;
          // The lease lapsed while the first attempt's outcome was unknown (no stream here).
          if (attempts > 1) throw new FederationLogError('LOG_FENCED', 'lease lost (test)');
        },
      });
      const err = await rejection(w.append({ roundOpen: openRecord(F, 1, genesis) }));
      expect(err.message).toMatch(/lease lost \(test\)/);
      expect(attempts).toBe(2);
      await expect(
        openLogWriter(nc, {
          federation: F,
          signer: COORDINATOR,
          signing: coordinatorKey,
          start: LOG_ORIGIN,
          beforeAttempt: 'no' as unknown as () => void,
        }),
      ).rejects.toThrow(/options.beforeAttempt must be a function/);
    });
  });

  describe('a read-only NATS user', () => {
    const F = 'fl-ro';
    const S = federationSubjects(F);
    const stream = S.logStream;
    let authServer: NatsServerHandle;
    let admin: NatsConnection;
    let auditor: NatsConnection;
    let written: LogEntry[];

    const coordinatorUser = nkeyUser(
      'coordinator',
      { allow: [S.all, '_INBOX.>', '$JS.>'] },
      { allow: [S.all, '_INBOX.>'] },
    );
    const auditorUser = nkeyUser(
      'auditor',
      { allow: readOnlyStreamSubjects(stream) },
      { allow: [`${S.inboxPrefix('auditor')}.>`] },
    );
    const users: NatsUser[] = [coordinatorUser.user, auditorUser.user];

    beforeAll(async () => {
      authServer = await startNatsServer({ jetstream: true, users });
      admin = await connect({ servers: authServer.url, authenticator: coordinatorUser.authenticator });
      await ensureLogStream(await jetstreamManager(admin), settings(F));
      const w = await openLogWriter(admin, {
        federation: F,
        signer: COORDINATOR,
        signing: coordinatorKey,
        start: LOG_ORIGIN,
      });
      written = [];
      for (const record of script(F).slice(0, 5)) written.push(await w.append(record));
      auditor = await connect({
        servers: authServer.url,
        authenticator: auditorUser.authenticator,
        inboxPrefix: S.inboxPrefix('auditor'),
      });
    });

    afterAll(async () => {
      await auditor?.close();
      await admin?.close();
      await authServer?.stop();
    });

    it('reads and verifies every entry', async () => {
      const log = await reader(F, auditor);
      expect(await log.lastSequence()).toBe(5);
      const entries = await collect(log.entries());
      expect(entries.map((e) => hex(e.hash))).toEqual(written.map((e) => hex(e.hash)));
      const history = new LogHistory(genesis, stream);
      for (const e of entries) history.apply(e);
      expect(hex(history.head.commit.hash)).toBe(hex(c1.hash));
    });

    it('cannot append: a publish on the log subject is refused and stores nothing', async () => {
      const w = await openLogWriter(auditor, {
        federation: F,
        signer: COORDINATOR,
        signing: coordinatorKey,
        start: { sequence: 5, hash: written[4]!.hash },
        attempts: 1,
      });
      const err = await rejection(w.append({ roundOpen: openRecord(F, 3, c1) }));
      expect(err.code).toBe('LOG_UNAVAILABLE');
      expect(String((err.cause as Error).message)).toMatch(
        /permissions violation for publish to "cohort\.fl-ro\.log"/i,
      );
      auditor.publish(S.log, written[0]!.bytes); // a raw replay, refused the same way
      await auditor.flush();
      // Barrier: the coordinator's next append is fenced on entry 5, so it lands as 6 only if
      // nothing else was stored.
      const coordinator = await openLogWriter(admin, {
        federation: F,
        signer: COORDINATOR,
        signing: coordinatorKey,
        start: { sequence: 5, hash: written[4]!.hash },
      });
      const e6 = await coordinator.append({ roundOpen: openRecord(F, 3, c1) });
      expect(e6.sequence).toBe(6);
      written.push(e6);
    });

    it('cannot purge, delete entries or delete the stream', async () => {
      const jsmRo = await jetstreamManager(auditor, { checkAPI: false });
      const denied = /permissions violation for publish/i;
      await expect(jsmRo.streams.purge(stream)).rejects.toThrow(denied);
      await expect(jsmRo.streams.deleteMessage(stream, 1)).rejects.toThrow(denied);
      await expect(jsmRo.streams.delete(stream)).rejects.toThrow(denied);
      const entries = await collect((await reader(F, admin)).entries());
      expect(entries.map((e) => hex(e.hash))).toEqual(written.map((e) => hex(e.hash)));
    });
  });
});

// ---- on a three-node cluster -----------------------------------------------------------------

describe('log stream on a three-node cluster', () => {
  let cluster: NatsClusterHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    nc = await connect({ servers: cluster.urls[0]! });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  it('creates the stream with three replicas and appends to it', async () => {
    const name = await ensureLogStream(jsm, { federation: 'fl-r3', replicas: 3, maxBytes: 1 << 20 });
    expect((await jsm.streams.info(name)).config.num_replicas).toBe(3);
    // The stream's Raft group elects its leader just after creation: wait (bounded) until it has.
    await expect
      .poll(
        async () => {
          const { cluster } = await jsm.streams.info(name);
          return { leader: Boolean(cluster?.leader), replicas: cluster?.replicas?.length };
        },
        { timeout: 15_000, interval: 100 },
      )
      .toEqual({ leader: true, replicas: 2 });
    const w = await openLogWriter(nc, {
      federation: 'fl-r3',
      signer: COORDINATOR,
      signing: coordinatorKey,
      start: LOG_ORIGIN,
    });
    const e1 = await w.append({ roundOpen: openRecord('fl-r3', 1, genesis) });
    const log = await openLogReader(nc, { federation: 'fl-r3', coordinator: COORDINATOR, keys });
    expect((await log.get(1)).hash).toEqual(e1.hash);
  });

  it('refuses a one-replica stream where three are expected', async () => {
    await jsm.streams.add({
      name: logStreamName('fl-r1'),
      subjects: ['cohort.fl-r1.log'],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.New,
      num_replicas: 1,
      deny_delete: true,
      deny_purge: true,
    });
    const err = await rejection(
      ensureLogStream(jsm, { federation: 'fl-r1', replicas: 3, maxBytes: 1 << 20 }),
    );
    expect(err.code).toBe('LOG_STREAM_MISMATCH');
    expect(err.details['problems']).toEqual(['replicas is 1, expected 3']);
  });
});

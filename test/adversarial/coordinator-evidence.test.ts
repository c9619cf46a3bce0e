// Issue 22, "Write-once evidence", for what the coordinator stores: each round's aggregate (and a
// culprit partial's evidence, a robust round's Δ̄) and the sites' snapshots. Any one member may be
// hostile, the coordinator included: with its own NATS user (a second connection with its
// credentials) it tries to roll either store up, put another object under a stored name, hide an
// object, or delete and purge messages, in a live federation over a real nats-server with the
// federation's TLS, NKEY users and permissions. Each attempt must be refused, every aggregate and
// snapshot the log names must still read and hash to the digest it records, the auditor's live
// audit must verify, a site joining afterwards must start from the latest snapshot, and honest
// rounds must commit.
//
// The attacks name raw subjects of whichever design the code has (the object stores
// `cohort-<F>-aggregates` / `-snapshots` before the fix, the write-once streams
// `COHORT_<F>_AGGREGATES` / `_SNAPSHOTS` after it), so the same file ran against the code before
// the fix, where the rollups, the replaced objects and the delete marker succeeded.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import type { AuditReport } from '../../src/audit/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import type { MemberContext } from '../../src/services/index.ts';
import * as storeModule from '../../src/services/store/index.ts';
import { Federation, hex, type MemberProcess, waitFor } from '../helpers/federation.ts';
import { cohort } from '../helpers/run-cli.ts';
import { AttackLedger, holds, honestRoundsCommit, refusedAs } from './attack-ledger.ts';

const F = 'coordev';
const JOINER = 'site-4';
const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 8000,
    voteTimeoutMs: 8000,
    minContributors: 3,
    quorum: 4, // the aggregator and three sites: the joiner comes later
  },
  learning: { model: 'logreg', trainLimit: 600, testLimit: 100, epochs: 1, batchSize: 20 },
  history: { snapshotEvery: 1 },
  log: { level: 'error' },
};

type Kind = 'aggregates' | 'snapshots';
type Reader = (
  nc: NatsConnection,
  store: unknown,
  name: string,
  limits: { maxBytes: number },
) => Promise<Uint8Array | null>;
type Writer = (nc: NatsConnection, store: unknown) => { put(name: string, bytes: Uint8Array): Promise<void> };

/** The store API, whichever design the code has. */
const api = storeModule as unknown as Record<string, unknown>;
/** The write-once streams (after the fix), or the object stores (before it). */
const STREAMS = typeof api['readWriteOnceObject'] === 'function';
const storeOf = (kind: Kind): unknown =>
  (api[kind === 'aggregates' ? 'aggregateStore' : 'snapshotStore'] as (f: string) => unknown)(F);
const oldBucket = (kind: Kind) => `cohort-${F}-${kind}`;
const streamOf = (kind: Kind) =>
  STREAMS ? `COHORT_${F.toUpperCase()}_${kind.toUpperCase()}` : `OBJ_${oldBucket(kind)}`;
const frameSubject = (kind: Kind, object: string, frame: number) =>
  `cohort.${F}.${kind === 'aggregates' ? 'aggregate' : 'snapshot-store'}.${object}.${frame}`;
/** An object store's meta subject for `name` (base64url of the name, as `@nats-io/obj` writes it). */
const metaSubject = (kind: Kind, name: string) =>
  `$O.${oldBucket(kind)}.M.${Buffer.from(name, 'latin1').toString('base64').replace(/\+/g, '-').replace(/\//g, '_')}`;
/** The subject an object's record lives on: its header frame, or its meta. */
const recordSubject = (kind: Kind, name: string) =>
  STREAMS ? frameSubject(kind, name, 0) : metaSubject(kind, name);

const ledger = new AttackLedger('coordinator-evidence', [
  'Issue 22 item',
  'Attack with the coordinator’s own credentials (its NATS user) on what it stored',
  'Outcome',
]);

/** What a request answered: 'ok', or the error's code (a StoreError's) or message. */
async function attempt(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    const e = err as Error & { code?: unknown };
    return typeof e.code === 'string' && /^[A-Z_]+$/.test(e.code) ? e.code : e.message;
  }
}

const refusedByServer = (answer: string) => /permissions violation|permission denied/i.test(answer);

const rollup = (kind: 'all' | 'sub') => {
  const h = natsHeaders();
  h.set('Nats-Rollup', kind);
  return h;
};

describe('a hostile coordinator against the aggregates and snapshots it stored (issue 22)', () => {
  let f: Federation;
  let hostile: MemberContext;
  let nc: NatsConnection;
  let rounds = 0;
  let joiner: MemberProcess | undefined;

  /** Object `name` of `kind`, read with the coordinator's read rights, as the code reads it. */
  async function readStored(kind: Kind, name: string): Promise<Uint8Array | null> {
    const reader = f.coord.transport.connection;
    const limits = { maxBytes: 64 << 20, timeoutMs: 5000 };
    if (STREAMS) return (api['readWriteOnceObject'] as Reader)(reader, storeOf(kind), name, limits);
    return storeModule.readObject(reader, oldBucket(kind), name, limits);
  }

  /** The objects of `kind` the log names, with the digest it records for each. */
  async function logged(kind: Kind): Promise<{ name: string; digest: Uint8Array }[]> {
    if (kind === 'aggregates') {
      return (await f.decisions()).flatMap((d) =>
        d.commit && d.aggregate !== null ? [{ name: d.aggregate.object, digest: d.aggregateDigest }] : [],
      );
    }
    return (await f.logEntries()).flatMap((e) =>
      e.record.snapshot ? [{ name: e.record.snapshot.object, digest: e.record.snapshot.digest }] : [],
    );
  }

  /** Every object of `kind` the log names still reads and hashes to the digest it records. */
  async function intact(kind: Kind): Promise<boolean> {
    const objects = await logged(kind);
    if (objects.length === 0) return false;
    for (const o of objects) {
      const bytes = await readStored(kind, o.name).catch(() => null);
      if (bytes === null || !bytesEqual(sha256(bytes), o.digest)) return false;
    }
    return true;
  }

  /** Messages of `kind`'s stream. */
  async function messages(kind: Kind): Promise<number> {
    const jsm = await jetstreamManager(f.coord.transport.connection, { checkAPI: false });
    return (await jsm.streams.info(streamOf(kind))).state.messages;
  }

  /** The auditor's live audit verifies: every aggregate read and re-hashed, nothing wrong. */
  async function auditVerifies(): Promise<boolean> {
    const r = await cohort(
      'audit',
      'verify',
      '--config',
      f.dep.configPath,
      '--member',
      'auditor-1',
      '--json',
    );
    if (r.stdout === '') return false;
    const report = JSON.parse(r.stdout) as AuditReport;
    const commits = report.rounds.filter((x) => x.outcome === 'commit').length;
    return (
      r.status === 0 && report.problems.length === 0 && report.checked.aggregates >= commits && commits > 0
    );
  }

  /** Runs the coordinator through one more round; whether it committed. */
  async function oneMoreRound(): Promise<boolean> {
    rounds++;
    const summary = await f.startCoordinator({ rounds, switchWaitMs: 5000 }).done;
    return summary.rounds.at(-1)?.commit === true;
  }

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 1, sites: 4, overrides: OVERRIDES });
    await f.startAggregator('agg-1');
    for (const s of ['site-1', 'site-2', 'site-3']) await f.startAgent(s);
    rounds = 3;
    const summary = await f.runCoordinator(rounds);
    expect(summary.committed).toBe(3);
    hostile = await f.member(f.dep.coordinator);
    nc = hostile.transport.connection;
    expect((await logged('aggregates')).length).toBe(3);
    expect((await logged('snapshots')).length).toBeGreaterThanOrEqual(3);
  }, 180_000);

  afterAll(async () => {
    if (joiner !== undefined && joiner.running === false) console.error(joiner.output);
    await f?.stop();
  });

  /** One publish with `Nats-Rollup: all` on a subject of `kind`'s store; the facts after it. */
  async function rollUp(kind: Kind) {
    const js = jetstream(nc, { checkAPI: false, timeout: 3000 });
    const before = await messages(kind);
    const answer = await attempt(
      js.publish(recordSubject(kind, 'rollup-probe'), new Uint8Array(8), { headers: rollup('all') }),
    );
    const after = await messages(kind);
    return [
      refusedAs('rollup not permitted', answer, 'the stream'),
      holds('the store keeps every message', after === before && before > 0),
      holds(
        `every ${kind === 'aggregates' ? 'aggregate' : 'snapshot'} the log names still reads and hashes to the digest it records`,
        await intact(kind),
      ),
    ];
  }

  /** Another object under the name of a stored one of `kind`, three ways; the facts after them. */
  async function replace(kind: Kind, name: string) {
    const js = jetstream(nc, { checkAPI: false, timeout: 3000 });
    const junk = new Uint8Array(64).fill(9);
    // As the store's own client writes an object.
    const put = await attempt(
      STREAMS
        ? (api['writeOnceObjectWriter'] as Writer)(nc, storeOf(kind)).put(name, junk)
        : new Objm(js).open(oldBucket(kind)).then((os) => os.putBlob({ name }, junk)),
    );
    // A message on its record's subject: with `Nats-Rollup: sub` (which keeps only the new one),
    // and without.
    const sub = await attempt(js.publish(recordSubject(kind, name), junk, { headers: rollup('sub') }));
    const plain = await attempt(js.publish(recordSubject(kind, name), junk));
    return [
      refusedAs('OBJECT_EXISTS', put, 'the coordinator’s own writer'),
      refusedAs('rollup not permitted', sub, 'the stream'),
      refusedAs('maximum messages per subject exceeded', plain, 'the stream'),
      holds('the name still reads the bytes whose digest the log records', await intact(kind)),
    ];
  }

  it('3: it cannot roll the aggregates store up', async () => {
    ledger.record(
      3,
      '`Nats-Rollup: all` on a subject of the aggregates store (one such message cut the old object store to itself)',
      await rollUp('aggregates'),
    );
  }, 60_000);

  it('3: it cannot put another object under the name of a stored aggregate', async () => {
    const facts = await replace('aggregates', 'round-1');
    ledger.record(
      3,
      'another object under the name of a stored aggregate (`round-1`): its writer, then a message on the object’s record subject with `Nats-Rollup: sub` and without',
      [...facts, holds('the auditor’s live audit verifies every aggregate', await auditVerifies())],
    );
  }, 60_000);

  it('3: it cannot hide a stored aggregate, nor delete or purge messages', async () => {
    const js = jetstream(nc, { checkAPI: false, timeout: 3000 });
    const answers = [
      // The old store's delete marker (a meta record `deleted: true`, rolled up on its subject).
      await attempt(new Objm(js).open(oldBucket('aggregates')).then((os) => os.delete('round-2'))),
    ];
    for (const call of ['STREAM.MSG.DELETE', 'STREAM.PURGE', 'STREAM.DELETE']) {
      answers.push(
        await attempt(
          nc.request(`$JS.API.${call}.${streamOf('aggregates')}`, JSON.stringify({ seq: 1 }), {
            timeout: 3000,
          }),
        ),
      );
    }
    ledger.record(3, 'hide a stored aggregate (an object store delete marker), or delete or purge messages', [
      holds('each refused by nats-server (permissions violation)', answers.every(refusedByServer)),
      holds('every aggregate the log names still reads and hashes to its digest', await intact('aggregates')),
    ]);
  }, 60_000);

  it('7: it cannot roll the snapshots store up', async () => {
    ledger.record(
      7,
      '`Nats-Rollup: all` on a subject of the snapshots store (one such message cut the old object store to itself)',
      await rollUp('snapshots'),
    );
  }, 60_000);

  it('7: it cannot replace a stored snapshot; a site joining afterwards starts from the latest', async () => {
    const snapshots = await logged('snapshots');
    const latest = snapshots.at(-1)!;
    const facts = await replace('snapshots', latest.name);
    const height = Math.max(
      ...(await f.logEntries()).flatMap((e) => (e.record.snapshot ? [e.record.snapshot.height] : [])),
    );
    const head = (await f.decisions()).filter((d) => d.commit).at(-1)!;
    joiner = f.spawn('agent', JOINER, ['--set', 'log.level=info']);
    const joinedEvent = () => joiner!.events.find((e) => e.msg === 'joined from a snapshot');
    // At the head, and its log line read (its output is read as it comes).
    const atHead = await waitFor(
      'the joiner at the head',
      () => f.storeHead(JOINER)?.hash === hex(head.commitHash) && joinedEvent() !== undefined,
      120_000,
    ).then(
      () => true,
      () => false,
    );
    const joined = joinedEvent();
    if (!atHead || Number(joined?.height) !== height) console.error(joiner.output);
    const committed = await oneMoreRound();
    ledger.record(
      7,
      'another snapshot under the name of the latest stored one: its writer, then a message on the object’s record subject with `Nats-Rollup: sub` and without',
      [
        ...facts,
        holds(
          'a site joining afterwards starts from the latest snapshot and reaches the head',
          atHead && Number(joined?.height) === height,
        ),
        honestRoundsCommit(committed),
      ],
    );
  }, 180_000);

  it('the attack table in docs/security.md is the one observed', () => {
    ledger.verify();
  });
});

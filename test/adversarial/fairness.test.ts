// Issue 22, break 13: fairness. One member (site-5, with its own NATS user and signing key) tries
// to take more than its share of what every member shares, in a live federation over a real
// nats-server run with the limits `cohort nats config` writes, while four honest sites train:
//   - the reassembly buffer of a subscription (the coordinator's snapshot subject, where one
//     site's flood of incomplete chunks used to evict another site's snapshot in progress);
//   - nats-server itself (connections, subscriptions);
//   - an aggregator's intake (a block from a sender it is not assigned, blocks of future rounds).
// Each attack states its outcome as checked facts; the table in docs/security.md is written from
// them (COHORT_WRITE_ATTACKS=1 rewrites it, otherwise it must be the one observed).
import { connect as netConnect } from 'node:net';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { type ControlBodies, FRAME_KIND, frame, openControl } from '../../src/protocol/index.ts';
import { maxContributionFrameBytes } from '../../src/round/index.ts';
import type { AggregatorService } from '../../src/services/aggregator/index.ts';
import type { CoordinatorHandle, RoundSummary } from '../../src/services/coordinator/index.ts';
import { type MemberContext, memberConnectOptions } from '../../src/services/index.ts';
import { CONTRIBUTION_HEADER_BYTES } from '../../src/services/store/index.ts';
import {
  federationServerLimits,
  type NatsServerLimits,
  renderServerLimits,
} from '../../src/transport/server-config.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { AttackLedger, counted, holds, refusedAs, unchanged } from './attack-ledger.ts';
import { rawPublish, rawRequest } from './hostile-client.ts';

const F = 'fairness';
const HOSTILE = 'site-5';
const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 6000,
    voteTimeoutMs: 6000,
    minContributors: 3,
    quorum: 6,
  },
  learning: { model: 'logreg', trainLimit: 2500, testLimit: 200, epochs: 1, batchSize: 10 },
  log: { level: 'error' },
};

const ledger = new AttackLedger('fairness', [
  'Issue 22 item',
  'Attack by a member with a site’s credentials (site-5) on what every member shares',
  'Outcome',
]);

/** A protobuf varint. */
function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/**
 * A framed "block" whose header fields name `round` and `signer` (ParameterBlock fields 7 and 8)
 * and whose body is otherwise no ParameterBlock (a 4 KiB junk ciphertext). Without `encoding`
 * (field 14) decoding it refuses it `BAD_HEADER`, so a refusal for any other reason was made
 * before decoding it; with an empty one its header decodes (what a sender must pass to be held
 * for a RoundOpen by the code before the fix).
 */
function junkBlock(round: number, signer: string, encoding = false): Uint8Array {
  const name = [...Buffer.from(signer)];
  const junk = new Array<number>(4096).fill(0x5a);
  const body = [0x0a, ...varint(junk.length), ...junk, 0x38, ...varint(round), 0x42, name.length, ...name];
  if (encoding) body.push(0x72, 0x00);
  return frame(FRAME_KIND.block, Uint8Array.from(body));
}

/** The `-ERR` lines nats-server sends a plain TCP client before it would start TLS. */
function plainErrors(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1');
    let out = '';
    const done = () =>
      resolve(
        out
          .split('\r\n')
          .filter((l) => l.startsWith('-ERR'))
          .join(' | '),
      );
    socket.on('data', (d) => {
      out += d.toString('latin1');
      if (out.includes('-ERR')) socket.destroy();
    });
    socket.on('close', done);
    socket.on('error', () => undefined);
    socket.setTimeout(5000, () => socket.destroy());
  });
}

describe('fairness: one member against everyone’s share', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  const decisions: RoundSummary[] = [];
  const aggregators = new Map<string, AggregatorService>();
  let hostile: MemberContext;
  const opens: ControlBodies['round-open'][] = [];
  const s = () => f.coord.subjects;
  const committedAfter = (round: number) => decisions.some((d) => d.round > round && d.commit);
  const lastRound = () => decisions.at(-1)?.round ?? 0;
  const rejected = (reason: string) => coordinator.stats().rejectedByReason[reason] ?? 0;

  let limits: NatsServerLimits;

  beforeAll(async () => {
    // The limits `cohort nats config` renders for this federation: its 9 users (coordinator, two
    // aggregators, five sites, an auditor) and its largest unchunked message (a contribution).
    const ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
    limits = federationServerLimits({
      users: 9,
      largestMessageBytes: maxContributionFrameBytes(ckks.maxCiphertextBytes) + CONTRIBUTION_HEADER_BYTES,
    });
    f = await Federation.create(F, {
      aggregators: 2,
      sites: 5,
      overrides: OVERRIDES,
      natsConfig: renderServerLimits(limits),
    });
    for (const a of f.dep.aggregators) aggregators.set(a, await f.startAggregator(a));
    for (const site of f.dep.sites.filter((id) => id !== HOSTILE)) await f.startAgent(site);
    hostile = await f.member(HOSTILE);
    await hostile.transport
      .subscribe(s().roundOpen, async (m) => {
        opens.push(openControl(m.data, 'round-open', hostile.keys).body);
      })
      .ready();
    coordinator = f.startCoordinator({
      rounds: 10_000, // until the suite stops it
      switchWaitMs: 2000,
      onEvent: (e) => {
        if (e.type === 'decision') decisions.push(e.summary);
      },
    });
    await waitFor('a first committed round', () => decisions.some((d) => d.commit), 60_000);
  }, 120_000);

  afterAll(async () => {
    await f?.stop();
  });

  it('13: a flood of incomplete snapshots evicts only the flooding site’s own', async () => {
    const honest = await f.member('site-1'); // site-1's own credentials, on a second connection
    const piece = new Uint8Array(1024).fill(1);
    const reasons = ['TRANSPORT_REASSEMBLY_MEMORY', 'TRANSPORT_REASSEMBLY_SENDER_SHARE'];
    const before = Object.fromEntries(reasons.map((r) => [r, rejected(r)]));
    const evicted = () => reasons.reduce((n, r) => n + rejected(r) - before[r]!, 0);
    // site-1 starts a snapshot of two chunks: the first is in, the second is on its way.
    rawPublish(honest.transport.connection, s().snapshot('site-1'), piece, {
      id: 'honest-snapshot',
      chunk: '0/2',
      length: 2048,
    });
    await honest.transport.flush();
    // site-5 floods first chunks of 200 snapshots it never finishes.
    const flood = 200;
    for (let i = 0; i < flood; i++) {
      rawPublish(hostile.transport.connection, s().snapshot(HOSTILE), piece, {
        id: `flood-${i}`,
        chunk: '0/2',
        length: 2048,
      });
    }
    await hostile.transport.flush();
    // Whatever the bound, at least 200 − 64 incomplete messages were dropped to keep within it.
    await waitFor('the evictions of the flood', () => evicted() >= flood - 64, 10_000);
    const answer = await rawRequest(
      honest.transport.connection,
      s().snapshot('site-1'),
      new Uint8Array(1024).fill(2),
      { id: 'honest-snapshot', chunk: '1/2', length: 2048 },
    );
    const after = Object.fromEntries(reasons.map((r) => [r, rejected(r)]));
    ledger.record(
      13,
      `flood the coordinator’s snapshot subject with the first chunks of ${flood} snapshots it never finishes, while site-1’s snapshot is half sent`,
      [
        holds(
          'site-1’s snapshot completes and reaches the coordinator’s handler (answered, not lost)',
          answer !== 'timeout',
        ),
        counted(
          'TRANSPORT_REASSEMBLY_SENDER_SHARE',
          before['TRANSPORT_REASSEMBLY_SENDER_SHARE']!,
          after['TRANSPORT_REASSEMBLY_SENDER_SHARE']!,
          flood - 64,
        ),
        unchanged(
          'TRANSPORT_REASSEMBLY_MEMORY',
          before['TRANSPORT_REASSEMBLY_MEMORY']!,
          after['TRANSPORT_REASSEMBLY_MEMORY']!,
        ),
      ],
    );
  }, 60_000);

  it('13: many connections and subscriptions with one member’s credentials are refused by nats-server', async () => {
    const options = { ...memberConnectOptions(f.dep.config, HOSTILE), reconnect: false, timeout: 5000 };
    const held: NatsConnection[] = [];
    let refusal = '';
    for (let i = 0; i < 300 && refusal === ''; i++) {
      try {
        held.push(await connect(options));
      } catch (err) {
        refusal = (err as Error).message;
      }
    }
    const opened = held.length;
    // nats-server answers a connection beyond its limit before the TLS handshake: read it raw.
    const serverSaid = refusal === '' ? '' : await plainErrors(f.dep.nats.port);
    for (const c of held) await c.close().catch(() => undefined);
    // Subscriptions on one connection: every one it may take hears a RoundOpen, no more.
    const nc = await connect(options);
    let subscriptionRefused = '';
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === 'error') subscriptionRefused = String(st.error?.message ?? '');
      }
    })();
    // Deliveries per RoundOpen (by its bytes): under load a second one may land in the window.
    const heard = new Map<string, number>();
    const tried = 300;
    for (let i = 0; i < tried; i++) {
      nc.subscribe(s().roundOpen, {
        callback: (_err, msg) => {
          const key = Buffer.from(msg.data).toString('base64');
          heard.set(key, (heard.get(key) ?? 0) + 1);
        },
      });
    }
    await nc.flush();
    const since = opens.length;
    await waitFor('the next RoundOpen', () => opens.length > since && heard.size > 0, 30_000);
    await nc.flush();
    await new Promise((r) => setTimeout(r, 500));
    const heardOne = [...heard.values()][0];
    await nc.close();
    const round = lastRound();
    await waitFor('a later committed round', () => committedAfter(round), 60_000);
    ledger.record(13, 'open connections with site-5’s credentials until refused (up to 300)', [
      refusedAs('maximum connections exceeded', serverSaid, 'nats-server'),
      holds(
        `refused once the server held \`max_connections\` (${limits.maxConnections}: 4 per user and 16) connections, all members’ together`,
        opened < limits.maxConnections,
      ),
      holds('honest rounds commit afterwards', committedAfter(round)),
    ]);
    ledger.record(13, `subscribe ${tried} times to the RoundOpen broadcast on one connection`, [
      refusedAs('maximum subscriptions exceeded', subscriptionRefused, 'nats-server'),
      holds(
        `the next RoundOpen reached ${limits.maxSubscriptions} of them (\`max_subscriptions\`, per connection)`,
        heardOne === limits.maxSubscriptions,
      ),
    ]);
  }, 120_000);

  it('13: an aggregator refuses a block of a sender it is not assigned, and future rounds’, from the header', async () => {
    const agg = aggregators.get('agg-1')!;
    const count = (reason: string) => agg.stats().rejections[reason] ?? 0;
    const nc = hostile.transport.connection;
    const subject = s().update('agg-1', HOSTILE);
    await waitFor('a RoundOpen', () => opens.length > 0, 30_000);
    const current = opens.at(-1)!.round;
    const before = { wrong: count('WRONG_CONTEXT'), bad: count('BAD_HEADER'), malformed: count('MALFORMED') };
    // site-5 is never assigned (it sends no heartbeat): a block of this round, junk past its header.
    const unassigned = await rawRequest(nc, subject, junkBlock(current, HOSTILE), { id: 'unassigned' });
    const mid = { wrong: count('WRONG_CONTEXT'), bad: count('BAD_HEADER'), malformed: count('MALFORMED') };
    ledger.record(
      13,
      'a block of the current round to an aggregator that site-5 is not assigned to, its body past the header junk',
      [
        refusedAs('BLOCK_WRONG_CONTEXT', unassigned, 'agg-1'),
        holds('from its header: the body is never decoded', /not assigned/.test(unassigned)),
        counted('agg-1 WRONG_CONTEXT', before.wrong, mid.wrong),
        unchanged('agg-1 BAD_HEADER', before.bad, mid.bad),
        unchanged('agg-1 MALFORMED', before.malformed, mid.malformed),
      ],
    );

    // Ten blocks at once for a round a thousand ahead, then, as a round opens, ten for the next one.
    const far = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        rawRequest(
          nc,
          subject,
          junkBlock(opens.at(-1)!.round + 1000, HOSTILE, true),
          { id: `far-${i}` },
          10_000,
        ),
      ),
    );
    const since = opens.length;
    await waitFor('a RoundOpen', () => opens.length > since, 30_000);
    const upcoming = opens.at(-1)!.round + 1;
    const next = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        rawRequest(nc, subject, junkBlock(upcoming, HOSTILE, true), { id: `next-${i}` }, 10_000),
      ),
    );
    const after = { wrong: count('WRONG_CONTEXT'), bad: count('BAD_HEADER'), malformed: count('MALFORMED') };
    ledger.record(13, 'ten blocks at once for a round a thousand rounds ahead of the aggregator’s', [
      refusedAs(
        'BLOCK_WRONG_CONTEXT',
        far.every((a) => /^BLOCK_WRONG_CONTEXT /.test(a)) ? far[0] : far.join(' | '),
        'agg-1',
      ),
      holds(
        'each on arrival, none held for a RoundOpen (more than one round ahead)',
        far.every((a) => /more than one round ahead/.test(a)),
      ),
    ]);
    ledger.record(13, 'ten blocks at once for the next round (before its RoundOpen)', [
      holds(
        'at most one frame of a sender waits for its RoundOpen: 9 of 10 are refused on arrival',
        next.filter((a) => /already waits/.test(a)).length === 9,
      ),
      counted('agg-1 WRONG_CONTEXT', mid.wrong, after.wrong, 20),
      unchanged('agg-1 BAD_HEADER', before.bad, after.bad),
    ]);
    const round = lastRound();
    await waitFor('a later committed round', () => committedAfter(round), 60_000);
  }, 120_000);

  it('the fairness table in docs/security.md is the one observed', () => {
    ledger.verify();
  });
});

// A hostile member sets the NATS reply subject of what it sends (a confused deputy): the responder
// (the coordinator, an aggregator) would publish its answer there with the rights nats-server's
// `allow_responses` gives it, whatever the subject, a JetStream API call or the log subject
// included. Every subject a site or an aggregator may send a request on is tried against every
// subject the answer must never reach; an admin connection watches those subjects, and nothing may
// arrive there. Responders answer only under the requester's own inbox prefix, and count the rest.
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AggregatorService } from '../../src/services/aggregator/index.ts';
import type { CoordinatorHandle } from '../../src/services/coordinator/index.ts';
import type { MemberContext } from '../../src/services/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { AttackLedger, counted, holds } from './attack-ledger.ts';
import { rawPublish } from './hostile-client.ts';

const F = 'replies';
const ledger = new AttackLedger('reply-subjects', [
  'Item',
  'Attack: a request whose reply subject is not the sender’s inbox',
  'Outcome',
]);

describe('reply subjects chosen by a hostile member', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  let aggregator: AggregatorService;
  let site: MemberContext;
  let agg2: MemberContext;
  let admin: NatsConnection;
  /** Every message seen on a subject no answer may reach, by subject. */
  const landed: string[] = [];
  /**
   * Where an answer must never go: the JetStream API (delete or purge the log), the log subject
   * itself (an unsigned entry would fence the coordinator), a broadcast, another member's inbox.
   */
  const targets = () => {
    const s = f.coord.subjects;
    return [
      `$JS.API.STREAM.DELETE.${s.logStream}`,
      `$JS.API.STREAM.PURGE.${s.logStream}`,
      s.log,
      s.decision,
      `_INBOX.${F}.site-2.stolen`,
    ];
  };

  beforeAll(async () => {
    f = await Federation.create(F, {
      aggregators: 2,
      sites: 3,
      admin: true,
      overrides: { log: { level: 'fatal' } },
    });
    admin = await connect(f.dep.admin!);
    for (const watched of targets()) {
      admin.subscribe(watched, {
        callback: (_e, m) => {
          landed.push(m.subject);
        },
      });
    }
    await admin.flush();
    coordinator = f.startCoordinator({ idle: true });
    aggregator = await f.startAggregator('agg-1');
    site = await f.member('site-1');
    agg2 = await f.member('agg-2');
    // The coordinator's log exists, holding its start record (its claim of the log: its own
    // append, not anything an attack caused), before anything is tried.
    await waitFor('the log stream with the start record', async () =>
      (await jetstreamManager(f.coord.transport.connection)).streams
        .info(f.coord.subjects.logStream)
        .then((i) => i.state.messages >= 1)
        .catch(() => false),
    );
    await admin.flush();
    landed.length = 0;
  }, 120_000);

  afterAll(async () => {
    await admin?.close();
    await f?.stop();
  });

  it('1: no responder answers on a reply subject outside the requester’s inbox', async () => {
    const s = f.coord.subjects;
    const jsm = await jetstreamManager(f.coord.transport.connection);
    const logBefore = (await jsm.streams.info(s.logStream)).state.messages;
    const targets_ = targets();
    // Every subject a site or an aggregator may send a request on, with its responder.
    const senders: { who: MemberContext; subject: string; counter: () => number }[] = [
      ...[s.heartbeat('site-1'), s.vote('site-1'), s.switched('site-1'), s.snapshot('site-1')].map(
        (subject) => ({ who: site, subject, counter: () => refusedByCoordinator() }),
      ),
      { who: site, subject: s.update('agg-1', 'site-1'), counter: () => refusedByAggregator() },
      { who: agg2, subject: s.partial('agg-2'), counter: () => refusedByCoordinator() },
      { who: agg2, subject: s.heartbeat('agg-2'), counter: () => refusedByCoordinator() },
      { who: agg2, subject: s.subpartial('agg-1', 'agg-2'), counter: () => refusedByAggregator() },
    ];
    const refusedByCoordinator = () => coordinator.stats().rejectedByReason['TRANSPORT_REPLY_REFUSED'] ?? 0;
    const refusedByAggregator = () => aggregator.stats().transportDrops['REPLY_REFUSED'] ?? 0;
    const before = { coordinator: refusedByCoordinator(), aggregator: refusedByAggregator() };
    let n = 0;
    for (const { who, subject } of senders) {
      for (const reply of targets_) {
        rawPublish(who.transport.connection, subject, new Uint8Array(300).fill(7), {
          id: `deputy-${n++}`,
          reply,
        });
      }
    }
    await site.transport.flush();
    await agg2.transport.flush();
    const tried = senders.length * targets_.length;
    const refused = () =>
      refusedByCoordinator() - before.coordinator + (refusedByAggregator() - before.aggregator);
    await waitFor('every request counted as refused', () => refused() >= tried, 20_000).catch(
      () => undefined,
    );
    // Whatever a responder would have sent has had time to land.
    await new Promise((r) => setTimeout(r, 1000));
    const logAfter = await jsm.streams.info(s.logStream).then(
      (i) => i.state.messages,
      () => -1,
    );
    ledger.record(
      1,
      `junk on each of the ${senders.length} request subjects a site or an aggregator may use, with reply subjects \`$JS.API.STREAM.DELETE.<log>\`, \`$JS.API.STREAM.PURGE.<log>\`, the log subject, the decision broadcast, another member’s inbox`,
      [
        holds('nothing is published on any of those subjects', landed.length === 0),
        holds('the log stream keeps every entry', logAfter === logBefore),
        counted('TRANSPORT_REPLY_REFUSED', before.coordinator, refusedByCoordinator(), 1),
        counted('aggregator REPLY_REFUSED', before.aggregator, refusedByAggregator(), 1),
        holds('every one of the requests is refused before any handler', refused() === tried),
      ],
    );
    expect(landed, landed.join('\n')).toEqual([]);
  }, 60_000);

  it('an honest request is still answered', async () => {
    // The operator's rollback request comes from the coordinator's own user: its inbox is allowed.
    const before = coordinator.stats().rejectedByReason['TRANSPORT_REPLY_REFUSED'] ?? 0;
    const answer = await f.coord.transport
      .request(f.coord.subjects.rollbackRequest, new Uint8Array(10), { maxRetry: 0, timeoutMs: 3000 })
      .then(
        () => 'answered',
        (err: { code?: string }) => err.code ?? 'error',
      );
    // Junk is refused by the handler, and the refusal comes back: the request was answered.
    expect(answer).toBe('TRANSPORT_REMOTE');
    expect(coordinator.stats().rejectedByReason['TRANSPORT_REPLY_REFUSED'] ?? 0).toBe(before);
  });

  it('the attack table in docs/security.md is the one observed', () => {
    ledger.verify();
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectTransport,
  federationAuthorization,
  federationSubjects,
  federationUsers,
  type InboundMessage,
  type NatsTransport,
  TransportError,
} from '../../src/transport/index.ts';
import { type NatsServerHandle, startNatsServer } from '../helpers/nats-server.ts';

const F = 'f1';
const S = federationSubjects(F);
// Quotes, backslashes, `$` and `#` must survive the conf file.
const PASSWORDS = {
  coordinator: 'coord-secret-1',
  agg1: 'agg "one" \\ $x #1',
  'site-a': 'site-a-$ecret',
  'site-b': 'site-b-secret',
  auditor: 'auditor-secret',
} as const;

const spec = {
  federation: F,
  coordinator: { id: 'coordinator', password: PASSWORDS.coordinator },
  aggregators: [{ id: 'agg1', password: PASSWORDS.agg1 }],
  sites: [
    { id: 'site-a', password: PASSWORDS['site-a'] },
    { id: 'site-b', password: PASSWORDS['site-b'] },
  ],
  auditors: [{ id: 'auditor', password: PASSWORDS.auditor }],
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const bytes = (s: string) => new TextEncoder().encode(s);

describe('federationUsers', () => {
  it('gives a site only its own subjects', () => {
    const site = federationUsers(spec).find((u) => u.user === 'site-a')!;
    expect(site.publish.allow).toEqual([
      'cohort.f1.update.*.site-a',
      'cohort.f1.vote.site-a',
      'cohort.f1.heartbeat.site-a',
      'cohort.f1.switched.site-a',
      'cohort.f1.snapshot.site-a',
      '_INBOX.>',
      // Catch-up: read-only access (stream info, get message) to the log and the object stores.
      '$JS.API.STREAM.INFO.COHORT_F1',
      '$JS.API.STREAM.MSG.GET.COHORT_F1',
      '$JS.API.STREAM.INFO.OBJ_cohort-f1-aggregates',
      '$JS.API.STREAM.MSG.GET.OBJ_cohort-f1-aggregates',
      '$JS.API.STREAM.INFO.OBJ_cohort-f1-snapshots',
      '$JS.API.STREAM.MSG.GET.OBJ_cohort-f1-snapshots',
    ]);
    expect(site.subscribe.allow).toEqual([
      'cohort.f1.round.open',
      'cohort.f1.prepare',
      'cohort.f1.decision',
      '_INBOX.f1.site-a.>',
    ]);
    const agg = federationUsers(spec).find((u) => u.user === 'agg1')!;
    expect(agg.subscribe.allow).toContain('cohort.f1.update.agg1.>');
    expect(agg.publish.allow).toContain('cohort.f1.partial.agg1');
  });

  it('rejects bad ids, duplicate ids and unsafe passwords', () => {
    expect(() => federationUsers({ ...spec, sites: [{ id: 'a.b', password: 'long-enough' }] })).toThrow(
      /site\.id/,
    );
    expect(() => federationUsers({ ...spec, sites: [{ id: 'agg1', password: 'long-enough' }] })).toThrow(
      /two members/,
    );
    expect(() => federationUsers({ ...spec, sites: [{ id: 's', password: 'bad\npassword' }] })).toThrow(
      /password/,
    );
    expect(() => federationSubjects('f.1')).toThrow(/federation/);
    expect(() => S.update('agg1', 'site>')).toThrow(/site/);
    expect(federationAuthorization(spec)).toContain('password: "agg \\"one\\" \\\\ $x #1"');
  });
});

describe('NATS permissions of a federation', () => {
  let server: NatsServerHandle;
  let aggregator: NatsTransport;
  let siteA: NatsTransport;
  let siteB: NatsTransport;
  const asyncErrors: TransportError[] = [];

  const as = (user: keyof typeof PASSWORDS, onError?: (e: TransportError) => void) =>
    connectTransport({
      servers: [server.url],
      name: user,
      user,
      pass: PASSWORDS[user],
      inboxPrefix: S.inboxPrefix(user),
      timeoutMs: 1000,
      maxRetry: 1,
      ...(onError ? { onError } : {}),
    });

  beforeAll(async () => {
    server = await startNatsServer({ users: federationUsers(spec) });
    aggregator = await as('agg1');
    siteA = await as('site-a', (e) => asyncErrors.push(e));
    siteB = await as('site-b');
  });

  afterAll(async () => {
    await aggregator?.close();
    await siteA?.close();
    await siteB?.close();
    await server?.stop();
  });

  it('lets a site publish and request on its own update subject', async () => {
    const got: InboundMessage[] = [];
    const sub = aggregator.subscribe(S.updatesFor('agg1'), async (m) => {
      got.push(m);
      return bytes('ack');
    });
    await sub.ready();
    await siteA.publish(S.update('agg1', 'site-a'), bytes('update-a'));
    const ack = await siteA.request(S.update('agg1', 'site-a'), bytes('update-a2'));
    expect(new TextDecoder().decode(ack)).toBe('ack');
    await sleep(50);
    expect(got.map((m) => m.subject)).toEqual([S.update('agg1', 'site-a'), S.update('agg1', 'site-a')]);
    await sub.unsubscribe();
  });

  it("refuses a site publishing on another site's update subject", async () => {
    const got: InboundMessage[] = [];
    const sub = aggregator.subscribe(S.updatesFor('agg1'), async (m) => {
      got.push(m);
    });
    await sub.ready();
    const before = asyncErrors.length;
    const err = await siteA.publish(S.update('agg1', 'site-b'), bytes('forged')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).code).toBe('TRANSPORT_PERMISSION');
    expect((err as TransportError).details).toMatchObject({
      operation: 'publish',
      subject: S.update('agg1', 'site-b'),
    });
    // A request on it is refused too (the -ERR arrives before the PONG of the confirming flush).
    await expect(siteA.request(S.update('agg1', 'site-b'), bytes('forged'))).rejects.toMatchObject({
      code: 'TRANSPORT_PERMISSION',
    });
    await aggregator.flush();
    await sleep(100);
    expect(got).toHaveLength(0);
    // The violation is also reported through onError, and the connection stays usable.
    expect(asyncErrors.slice(before).map((e) => e.code)).toContain('TRANSPORT_PERMISSION');
    expect(siteA.stats().permissionErrors).toBeGreaterThanOrEqual(2);
    await siteA.publish(S.heartbeat('site-a'), bytes('alive'));
    await sub.unsubscribe();
  });

  it("refuses a site subscribing to every update, so it never sees another site's update", async () => {
    const stolen: InboundMessage[] = [];
    const spy = siteA.subscribe(`cohort.${F}.update.>`, async (m) => {
      stolen.push(m);
    });
    await expect(spy.ready()).rejects.toMatchObject({ code: 'TRANSPORT_PERMISSION' });
    const ended = await spy.closed;
    expect(ended?.code).toBe('TRANSPORT_PERMISSION');

    const got: InboundMessage[] = [];
    const sub = aggregator.subscribe(S.updatesFor('agg1'), async (m) => {
      got.push(m);
    });
    await sub.ready();
    await siteB.publish(S.update('agg1', 'site-b'), bytes('update-b'));
    await aggregator.flush();
    await sleep(100);
    expect(got.map((m) => new TextDecoder().decode(m.data))).toEqual(['update-b']);
    expect(stolen).toHaveLength(0);
    await sub.unsubscribe();
  });

  it('refuses a wrong password', async () => {
    await expect(
      connectTransport({
        servers: [server.url],
        name: 'x',
        user: 'site-a',
        pass: 'wrong-password',
        timeoutMs: 1000,
      }),
    ).rejects.toMatchObject({ code: 'TRANSPORT_CONNECT' });
  });
});

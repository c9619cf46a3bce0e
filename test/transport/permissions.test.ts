// The federation's NATS users (NKEY, least privilege per role) on a real nats-server that requires
// mutual TLS: each role connects with its real credentials and is refused what it must not do.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { createUser } from '@nats-io/nkeys';
import { connect, type NatsConnection, nkeyAuthenticator } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CohortError } from '../../src/errors/index.ts';
import { contributionWriter } from '../../src/services/aggregator/index.ts';
import { ensureLogStream } from '../../src/services/federation-log/index.ts';
import {
  createFederationTls,
  generateMemberNatsKeys,
  issueMemberCertificate,
  memberNatsPaths,
} from '../../src/services/index.ts';
import { ensureContributionStream, readStoredContribution } from '../../src/services/store/index.ts';
import {
  connectTransport,
  federationAuthorization,
  federationSubjects,
  federationUsers,
  type InboundMessage,
  type NatsTransport,
  natsAuthOptions,
  TransportError,
} from '../../src/transport/index.ts';
import { rejection } from '../helpers/error-code.ts';
import { type NatsServerHandle, startNatsServer } from '../helpers/nats-server.ts';

const F = 'f1';
const S = federationSubjects(F);
const MEMBERS = ['coordinator', 'agg1', 'site-a', 'site-b', 'auditor'] as const;
type Member = (typeof MEMBERS)[number];

const dir = mkdtempSync(join(tmpdir(), 'cohort-perm-'));
const nkeys = {} as Record<Member, string>;
const { ca, server: serverTls } = createFederationTls(join(dir, 'server'), {
  hosts: ['127.0.0.1', 'localhost'],
});
for (const id of MEMBERS) {
  const { nkey, tlsPublicKeyPem } = generateMemberNatsKeys(dir, id);
  issueMemberCertificate(ca, id, tlsPublicKeyPem, memberNatsPaths(dir, id).tlsCert);
  nkeys[id] = nkey;
}

const spec = {
  federation: F,
  coordinator: { id: 'coordinator', nkey: nkeys.coordinator },
  aggregators: [{ id: 'agg1', nkey: nkeys.agg1 }],
  sites: [
    { id: 'site-a', nkey: nkeys['site-a'] },
    { id: 'site-b', nkey: nkeys['site-b'] },
  ],
  auditors: [{ id: 'auditor', nkey: nkeys.auditor }],
};

const tlsFiles = (id: Member) => ({
  ca: serverTls.ca,
  cert: memberNatsPaths(dir, id).tlsCert,
  key: memberNatsPaths(dir, id).tlsKey,
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const bytes = (s: string) => new TextEncoder().encode(s);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('federationUsers', () => {
  const users = federationUsers(spec);
  const user = (id: string) => users.find((u) => u.user === id)!;

  it('gives a site only its own subjects, no reply right and no responses', () => {
    const site = user('site-a');
    expect(site.nkey).toBe(nkeys['site-a']);
    expect(site.publish.allow).toEqual([
      'cohort.f1.update.*.site-a',
      'cohort.f1.vote.site-a',
      // Threshold keys: its decryption shares, when it is asked for them.
      'cohort.f1.share.site-a',
      // Threshold keys: its deal and ready when the key epoch is re-shared.
      'cohort.f1.epoch.site-a',
      'cohort.f1.heartbeat.site-a',
      'cohort.f1.switched.site-a',
      'cohort.f1.snapshot.site-a',
      // Catch-up: read-only access (stream info, get message) to the log and the write-once stores.
      '$JS.API.STREAM.INFO.COHORT_F1',
      '$JS.API.STREAM.MSG.GET.COHORT_F1',
      '$JS.API.STREAM.INFO.COHORT_F1_AGGREGATES',
      '$JS.API.STREAM.MSG.GET.COHORT_F1_AGGREGATES',
      '$JS.API.STREAM.INFO.COHORT_F1_SNAPSHOTS',
      '$JS.API.STREAM.MSG.GET.COHORT_F1_SNAPSHOTS',
    ]);
    expect(site.subscribe.allow).toEqual([
      'cohort.f1.round.open',
      'cohort.f1.prepare',
      'cohort.f1.share-request',
      'cohort.f1.epoch-request',
      'cohort.f1.decision',
      'cohort.f1.registry',
      '_INBOX.f1.site-a.>',
    ]);
    expect(site.allowResponses).toBeUndefined();
    expect(user('auditor').allowResponses).toBeUndefined();
    expect(user('auditor').subscribe.allow).toEqual(['cohort.f1.registry', '_INBOX.f1.auditor.>']);
    // An auditor reads the log, the aggregates (to re-hash them) and the stored contributions (to
    // re-add them), never snapshots.
    expect(user('auditor').publish.allow).toEqual([
      '$JS.API.STREAM.INFO.COHORT_F1',
      '$JS.API.STREAM.MSG.GET.COHORT_F1',
      '$JS.API.STREAM.INFO.COHORT_F1_AGGREGATES',
      '$JS.API.STREAM.MSG.GET.COHORT_F1_AGGREGATES',
      '$JS.API.STREAM.INFO.COHORT_F1_CONTRIBUTIONS',
      '$JS.API.STREAM.MSG.GET.COHORT_F1_CONTRIBUTIONS',
    ]);
    // A site never reads or writes the stored contributions (docs/security.md).
    for (const subject of site.publish.allow ?? []) expect(subject).not.toMatch(/CONTRIBUTIONS|contribution/);
  });

  it('lets an aggregator store only its own contributions, and read nothing of them', () => {
    expect(user('agg1').publish.allow).toEqual([
      'cohort.f1.partial.agg1',
      // Its partial to whichever aggregator a round's tree makes its parent.
      'cohort.f1.subpartial.*.agg1',
      'cohort.f1.heartbeat.agg1',
      '$JS.API.STREAM.INFO.COHORT_F1',
      '$JS.API.STREAM.MSG.GET.COHORT_F1',
      // A JetStream publish on its own contribution subjects: no API right on that stream.
      'cohort.f1.contribution.agg1.>',
    ]);
    for (const u of users) {
      // Nobody may listen on the contribution subjects as they are written.
      for (const subject of u.subscribe.allow ?? [])
        expect(subject).not.toMatch(/contribution|^cohort\.f1\.>$/);
    }
  });

  it('lets no role publish on _INBOX.>: responders answer through allow_responses', () => {
    for (const u of users) {
      for (const subject of u.publish.allow ?? []) expect(subject.startsWith('_INBOX')).toBe(false);
    }
    expect(user('agg1').allowResponses).toEqual({ max: 1, expiresMs: 60_000 });
    expect(user('coordinator').allowResponses).toEqual({ max: 1, expiresMs: 60_000 });
    const conf = federationAuthorization({ ...spec, responseExpiresMs: 45_000 });
    expect(conf).toContain('allow_responses: { max: 1, expires: "45000ms" }');
    expect(conf).toContain(`nkey: "${nkeys['site-a']}"`);
    expect(conf).not.toMatch(/password|pass:|user:/);
  });

  it('lets every member connect only as a NATS client (allowed_connection_types)', () => {
    for (const u of users) expect(u.allowedConnectionTypes).toEqual(['STANDARD']);
    const conf = federationAuthorization(spec);
    expect(conf.match(/allowed_connection_types: \["STANDARD"\]/g)).toHaveLength(users.length);
  });

  it('narrows the coordinator to the subjects it handles and its own streams', () => {
    const coordinator = user('coordinator');
    expect(coordinator.subscribe.allow).toEqual([
      'cohort.f1.heartbeat.*',
      'cohort.f1.partial.*',
      'cohort.f1.vote.*',
      'cohort.f1.share.*',
      'cohort.f1.epoch.*',
      'cohort.f1.switched.*',
      'cohort.f1.snapshot.*',
      'cohort.f1.admin.rollback',
      'cohort.f1.admin.registry',
      '_INBOX.f1.coordinator.>',
    ]);
    const publish = coordinator.publish.allow ?? [];
    expect(publish).toContain('cohort.f1.log');
    expect(publish).toContain('$KV.cohort-f1-lease.>');
    // It writes its aggregates and snapshots into write-once streams, and holds no object-store right.
    expect(publish).toContain('cohort.f1.aggregate.>');
    expect(publish).toContain('cohort.f1.snapshot-store.>');
    expect(publish.filter((p) => p.startsWith('$O.'))).toEqual([]);
    // It creates the contributions stream (with its retention) and reads it back, but writes nothing there.
    expect(publish).toContain('$JS.API.STREAM.CREATE.COHORT_F1_CONTRIBUTIONS');
    expect(publish).toContain('$JS.API.STREAM.MSG.GET.COHORT_F1_CONTRIBUTIONS');
    expect(publish.filter((p) => p.includes('contribution.'))).toEqual([]);
    expect(publish.filter((p) => p.includes('updates'))).toEqual([]);
    for (const subject of publish) {
      expect(subject).not.toMatch(
        /DELETE\.(COHORT|OBJ|KV)_[^.]*$|PURGE|MSG\.DELETE|^\$JS\.>|^\$KV\.>|^\$O\.>/,
      );
      expect(subject).not.toMatch(/^cohort\.f1\.update/);
    }
  });

  it('rejects bad ids, duplicate ids and bad NKEYs', () => {
    const n = nkeys['site-b'];
    expect(() => federationUsers({ ...spec, sites: [{ id: 'a.b', nkey: n }] })).toThrow(/site\.id/);
    expect(() => federationUsers({ ...spec, sites: [{ id: 'agg1', nkey: n }] })).toThrow(/two members/);
    expect(() => federationUsers({ ...spec, sites: [{ id: 's', nkey: 'password' }] })).toThrow(/NKEY/);
    // A seed, an account key or a corrupted key is not a user's public key.
    expect(() => federationUsers({ ...spec, sites: [{ id: 's', nkey: `S${n.slice(1)}` }] })).toThrow(/NKEY/);
    // One character changed inside the key (not the last, whose low bits may be padding): its CRC fails.
    const corrupted = `${n.slice(0, 10)}${n[10] === 'A' ? 'B' : 'A'}${n.slice(11)}`;
    expect(() => federationUsers({ ...spec, sites: [{ id: 's', nkey: corrupted }] })).toThrow(/NKEY/);
    expect(() => federationSubjects('f.1')).toThrow(/federation/);
    expect(() => S.update('agg1', 'site>')).toThrow(/site/);
  });
});

describe('NATS permissions of a federation over mutual TLS', () => {
  let server: NatsServerHandle;
  let coordinator: NatsTransport;
  let aggregator: NatsTransport;
  let siteA: NatsTransport;
  let siteB: NatsTransport;
  const asyncErrors: TransportError[] = [];

  const as = (id: Member, onError?: (e: TransportError) => void) =>
    connectTransport({
      servers: [server.url],
      name: id,
      tls: tlsFiles(id),
      nkeySeedFile: memberNatsPaths(dir, id).seed,
      inboxPrefix: S.inboxPrefix(id),
      timeoutMs: 1000,
      maxRetry: 1,
      ...(onError ? { onError } : {}),
    });

  /** A bare nats.js connection with `id`'s real credentials. */
  const raw = (id: Member): Promise<NatsConnection> =>
    connect({
      servers: server.url,
      inboxPrefix: S.inboxPrefix(id),
      ...natsAuthOptions({ tls: tlsFiles(id), nkeySeedFile: memberNatsPaths(dir, id).seed }),
    });

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true, tls: serverTls, users: federationUsers(spec) });
    coordinator = await as('coordinator');
    aggregator = await as('agg1');
    siteA = await as('site-a', (e) => asyncErrors.push(e));
    siteB = await as('site-b');
  });

  afterAll(async () => {
    for (const t of [coordinator, aggregator, siteA, siteB]) await t?.close();
    await server?.stop();
  });

  it('serves TLS only, on a tls:// URL', () => {
    expect(server.url).toMatch(/^tls:\/\/127\.0\.0\.1:\d+$/);
  });

  it('lets a site publish and request on its own update subject, answered through allow_responses', async () => {
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

  it("lets the coordinator answer a site's vote request, and an aggregator's partial", async () => {
    const sub = coordinator.subscribe('cohort.f1.vote.*', async () => bytes('vote-ack'));
    const partials = coordinator.subscribe('cohort.f1.partial.*', async () => bytes('partial-ack'));
    await sub.ready();
    await partials.ready();
    expect(new TextDecoder().decode(await siteA.request(S.vote('site-a'), bytes('yes')))).toBe('vote-ack');
    expect(new TextDecoder().decode(await aggregator.request(S.partial('agg1'), bytes('sum')))).toBe(
      'partial-ack',
    );
    await sub.unsubscribe();
    await partials.unsubscribe();
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

  it("refuses a site injecting a reply into another member's inbox, or any _INBOX subject", async () => {
    const victim = await raw('site-b');
    const injected: string[] = [];
    const inbox = victim.subscribe(`${S.inboxPrefix('site-b')}.>`, {
      callback: (_e, m) => {
        injected.push(m.subject);
      },
    });
    await victim.flush();
    for (const subject of [
      `${S.inboxPrefix('site-b')}.abc`,
      '_INBOX.x',
      `${S.inboxPrefix('coordinator')}.r1`,
    ]) {
      await expect(siteA.publish(subject, bytes('forged reply'))).rejects.toMatchObject({
        code: 'TRANSPORT_PERMISSION',
      });
    }
    // An aggregator may answer a request it received, but not write to an inbox unasked.
    await expect(aggregator.publish(`${S.inboxPrefix('site-b')}.abc`, bytes('forged'))).rejects.toMatchObject(
      {
        code: 'TRANSPORT_PERMISSION',
      },
    );
    await victim.flush();
    await sleep(100);
    expect(injected).toEqual([]);
    inbox.unsubscribe();
    await victim.close();
  });

  it("refuses the coordinator every site's update subject and stream deletion or purge", async () => {
    const spy = coordinator.subscribe(`cohort.${F}.update.>`, async () => undefined);
    await expect(spy.ready()).rejects.toMatchObject({ code: 'TRANSPORT_PERMISSION' });
    const one = coordinator.subscribe(S.update('agg1', 'site-a'), async () => undefined);
    await expect(one.ready()).rejects.toMatchObject({ code: 'TRANSPORT_PERMISSION' });

    const nc = await raw('coordinator');
    try {
      // It creates and reads its own log stream…
      const jsm = await jetstreamManager(nc, { timeout: 2000 });
      await ensureLogStream(jsm, { federation: F, replicas: 1, maxBytes: 1 << 20 });
      expect((await jsm.streams.info(S.logStream)).config.name).toBe(S.logStream);
      // …but may not delete or purge it, nor touch a stream that is not its own.
      await expect(jsm.streams.delete(S.logStream)).rejects.toThrow();
      await expect(jsm.streams.purge(S.logStream)).rejects.toThrow();
      await expect(jsm.streams.deleteMessage(S.logStream, 1)).rejects.toThrow();
      await expect(jsm.streams.add({ name: 'OTHER', subjects: ['other.>'] })).rejects.toThrow();
      await expect(jsm.streams.list().next()).rejects.toThrow();
      await expect(nc.request(`$JS.API.STREAM.DELETE.${S.logStream}`, '', { timeout: 1000 })).rejects.toThrow(
        /permission/i,
      );
      expect((await jsm.streams.info(S.logStream)).config.name).toBe(S.logStream);
    } finally {
      await nc.close();
    }
  });

  it('lets the aggregator store its own contributions and the auditor read them, never a site', async () => {
    const coord = await raw('coordinator');
    const agg = await raw('agg1');
    const site = await raw('site-a');
    const auditor = await raw('auditor');
    try {
      const jsm = await jetstreamManager(coord, { timeout: 2000 });
      await ensureContributionStream(jsm, F, { replicas: 1, retentionMs: 3_600_000, maxFrameBytes: 4096 });
      const key = { aggregator: 'agg1', round: 1, attempt: new Uint8Array(16).fill(7), site: 'site-a' };
      const stored = { manifest: bytes('manifest'), blocks: [bytes('block-0')] };
      await contributionWriter(agg, F, 'agg1')(key, stored);
      const got = await readStoredContribution(auditor, F, key, {
        maxFrames: 2,
        maxBytes: 1 << 20,
        timeoutMs: 2000,
      });
      expect(got).toEqual({ status: 'found', frames: [stored.manifest, stored.blocks[0]] });
      // The stream keeps contributions for the configured retention (JetStream max_age, nanoseconds).
      expect((await jsm.streams.info(S.contributionsStream)).config.max_age).toBe(3_600_000 * 1_000_000);
      // A site's user may not read it, nor may it write there; the aggregator may not read it either.
      for (const nc of [site, agg]) {
        await expect(
          readStoredContribution(nc, F, key, { maxFrames: 2, maxBytes: 1 << 20, timeoutMs: 1000 }),
        ).rejects.toThrow(/permission/i);
      }
      await expect(contributionWriter(site, F, 'agg1')({ ...key, round: 2 }, stored)).rejects.toMatchObject({
        code: 'CONTRIBUTION_NOT_STORED',
        message: expect.stringMatching(/permission/i),
      });
      // The aggregator may write only its own subjects: another aggregator's are refused.
      await expect(contributionWriter(agg, F, 'agg2')({ ...key, round: 2 }, stored)).rejects.toThrow(
        /permission/i,
      );
      // Neither the aggregator nor the auditor may delete or purge it.
      for (const nc of [agg, auditor]) {
        await expect(
          nc.request(`$JS.API.STREAM.PURGE.${S.contributionsStream}`, '', { timeout: 1000 }),
        ).rejects.toThrow(/permission/i);
      }
    } finally {
      for (const nc of [coord, agg, site, auditor]) await nc.close();
    }
  });

  it('refuses a plaintext connection', async () => {
    // A raw client that ignores `tls_required` and speaks plaintext: the server never answers PING.
    const answer = await new Promise<string>((resolve) => {
      const sock = new Socket();
      let text = '';
      const done = () => {
        sock.destroy();
        resolve(text);
      };
      sock.setTimeout(3000, done);
      sock.on('data', (d) => {
        text += d.toString('latin1');
        if (text.startsWith('INFO ') && !text.includes('CONNECT_SENT')) {
          text += 'CONNECT_SENT';
          sock.write(`CONNECT {"verbose":false,"pedantic":false,"nkey":"${nkeys['site-a']}"}\r\nPING\r\n`);
        }
      });
      sock.on('close', done);
      sock.on('error', done);
      sock.connect(server.port, '127.0.0.1');
    });
    expect(answer).toMatch(/"tls_required":true/);
    expect(answer).not.toMatch(/PONG/);
    // nats.js without TLS options is refused before it says anything (tls:// needs TLS files)…
    await expect(
      connectTransport({
        servers: [server.url],
        name: 'x',
        nkeySeedFile: memberNatsPaths(dir, 'site-a').seed,
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    // …and bare nats.js with the real NKEY but no client certificate is refused by the server.
    await expect(
      connect({
        servers: server.url.replace('tls://', 'nats://'),
        reconnect: false,
        timeout: 2000,
        ...natsAuthOptions({ nkeySeedFile: memberNatsPaths(dir, 'site-a').seed }),
      }),
    ).rejects.toThrow();
  });

  it('refuses a TLS connection without a client certificate of the federation', async () => {
    await expect(
      connectTransport({
        servers: [server.url],
        name: 'x',
        tls: { ca: serverTls.ca },
        nkeySeedFile: memberNatsPaths(dir, 'site-a').seed,
        timeoutMs: 2000,
      }),
    ).rejects.toMatchObject({ code: 'TRANSPORT_CONNECT' });
  });

  it('refuses a user/password connection and an unknown NKEY', async () => {
    await expect(
      connect({
        servers: server.url,
        user: 'site-a',
        pass: 'site-a-password',
        reconnect: false,
        timeout: 2000,
        ...natsAuthOptions({ tls: tlsFiles('site-a') }),
      }),
    ).rejects.toThrow(/authorization/i);
    const stranger = createUser();
    await expect(
      connect({
        servers: server.url,
        authenticator: nkeyAuthenticator(stranger.getSeed()),
        reconnect: false,
        timeout: 2000,
        ...natsAuthOptions({ tls: tlsFiles('site-a') }),
      }),
    ).rejects.toThrow(/authorization/i);
  });

  it('refuses secret files that group or others can read', async () => {
    const paths = memberNatsPaths(dir, 'auditor');
    for (const secret of [paths.seed, paths.tlsKey]) {
      chmodSync(secret, 0o640);
      try {
        const err = await rejection(as('auditor'), CohortError);
        expect(err.code).toBe('KEY_FILE_PERMISSIONS');
        expect(err.message).toContain(secret);
        expect(err.message).toContain('0o640');
      } finally {
        chmodSync(secret, 0o600);
      }
    }
    await (await as('auditor')).close();
  });

  it('refuses a tls:// URL without TLS files and TLS files with a nats:// URL', async () => {
    await expect(connectTransport({ servers: ['tls://127.0.0.1:1'], name: 'x' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      connectTransport({ servers: ['nats://127.0.0.1:1'], name: 'x', tls: tlsFiles('site-a') }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

// Issue 22, "Model the attacker": the permission matrix. One live federation with its real NATS
// users (mutual TLS, NKEYs, the permissions `federationUsers` renders) and an idle coordinator that
// created its streams. Every member's own user tries every operation of a universe generated from
// the code (permission-probes.ts: every subject of `federationSubjects(F)` for every member in each
// member place, inboxes, the JetStream API of every stream and consumer operation on every stream
// the federation has, KV and object-store subjects, account-wide wildcards), publishing and
// subscribing; the server's answer is what counts. Then what a role may do with what it may publish:
// replies (`allow_responses`) and JetStream headers (`Nats-Rollup`, `Nats-Msg-Id`,
// `Nats-Expected-*`) on the streams it writes; and, for the admin API, every route with each token
// scope. docs/security.md's "Permissions, as observed" is rendered from these observations
// (COHORT_WRITE_ATTACKS=1 writes it, otherwise it is compared cell by cell), and the hand-written
// claims of "What each role can learn" are checked against the same observations. A permission that
// changes changes the tables: the test fails until the docs say so.
import { readFileSync } from 'node:fs';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_SCOPES,
  type AdminScope,
  adminRoutes,
  buildAdminApi,
  coordinatorAdminDeps,
  hashToken,
} from '../../src/admin/index.ts';
import { maxContributionFrameBytes } from '../../src/round/index.ts';
import type { CoordinatorHandle } from '../../src/services/coordinator/index.ts';
import { memberConnectOptions } from '../../src/services/index.ts';
import {
  aggregateStore,
  ensureContributionStream,
  lazyWriteOnceStore,
  readWriteOnceObject,
  snapshotStore,
} from '../../src/services/store/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { markdownTable, SECURITY_DOC, verifySection } from './doc-section.ts';
import {
  collapse,
  display,
  type Observed,
  observe,
  type Probe,
  ProbeConnection,
  permissionUniverse,
  type Role,
  type RoleMatrix,
  roleMatrices,
  type Universe,
} from './permission-probes.ts';

const F = 'perms';
const ROLES: readonly Role[] = ['site', 'aggregator', 'coordinator', 'auditor'];

/** What a JetStream publish answered: `stored`, `duplicate`, or the server's refusal, numbers cut. */
async function jsOutcome(p: Promise<{ duplicate: boolean }>): Promise<string> {
  try {
    return (await p).duplicate ? 'duplicate' : 'stored';
  } catch (err) {
    const m = (err as Error).message.replace(/:\s*\S*$/, '').trim();
    return /permissions violation/i.test(m) ? 'permissions violation' : m;
  }
}

/** `refused by the stream \`why\`` or what else happened, for a table cell. */
const said = (outcome: string) =>
  outcome === 'stored' || outcome === 'duplicate' ? outcome : `refused \`${outcome}\``;

describe('the permission matrix: every role, every operation, observed (issue 22)', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  let admin: NatsConnection;
  let universe: Universe;
  const members = new Map<string, Role>();
  const conns = new Map<string, ProbeConnection>();
  const observed = new Map<string, Observed>();
  const replyRows: string[][] = [];
  const headerRows: string[][] = [];
  let adminTable = '';
  let matrices: Map<Role, RoleMatrix>;

  beforeAll(async () => {
    f = await Federation.create(F, {
      aggregators: 2,
      sites: 3,
      admin: true,
      overrides: { log: { level: 'fatal' } },
    });
    const m = f.dep.config.members!;
    members.set(m.coordinator, 'coordinator');
    for (const a of m.aggregators) members.set(a.id, 'aggregator');
    for (const s of m.sites) members.set(s.id, 'site');
    for (const a of m.auditors ?? []) members.set(a.id, 'auditor');
    expect([...members.values()].filter((r) => r === 'auditor').length).toBeGreaterThan(0);
    admin = await connect(f.dep.admin!);
    // The coordinator, idle, takes its lease and creates the log; then the stores a round would
    // create, through the coordinator's own connection with the settings it uses.
    coordinator = f.startCoordinator({ idle: true });
    const s = f.coord.subjects;
    const jsmAdmin = await jetstreamManager(admin);
    const exists = (name: string) =>
      jsmAdmin.streams.info(name).then(
        () => true,
        () => false,
      );
    await waitFor(
      'the log and the lease',
      async () => (await exists(s.logStream)) && (await exists(`KV_${s.leaseBucket}`)),
    );
    const cfg = f.dep.config;
    await ensureContributionStream(
      await jetstreamManager(f.coord.transport.connection, { checkAPI: false }),
      F,
      {
        replicas: cfg.history.replicas,
        retentionMs: cfg.history.updateRetentionMs,
        maxFrameBytes: maxContributionFrameBytes(f.coord.ckks.maxCiphertextBytes),
      },
    );
    for (const store of [aggregateStore(F), snapshotStore(F)]) {
      await lazyWriteOnceStore(f.coord.transport.connection, store, {
        replicas: cfg.history.replicas,
        maxPayload: f.coord.transport.maxPayload,
      })();
    }
    const onServer = new Set<string>();
    for await (const name of jsmAdmin.streams.names()) onServer.add(name);
    universe = permissionUniverse(F, members, onServer);
    for (const id of members.keys()) {
      conns.set(id, new ProbeConnection(id, await connect(memberConnectOptions(f.dep.config, id))));
    }
  }, 120_000);

  afterAll(async () => {
    for (const c of conns.values()) await c.nc.close().catch(() => undefined);
    await admin?.close();
    await f?.stop();
  });

  it('the universe covers every stream the federation has and every member', () => {
    const labels = universe.streams.filter((r) => r.exists).map((r) => r.label);
    expect(labels).toEqual(
      expect.arrayContaining(['log', 'contributions', 'aggregates', 'snapshots', 'lease']),
    );
    for (const id of members.keys()) {
      expect(universe.probes.some((p) => p.tokens.some((t) => t.kind === 'member' && t.text === id))).toBe(
        true,
      );
    }
  });

  it('every member tries every operation that changes nothing', async () => {
    const safe = universe.probes.filter((p) => !p.destructive);
    for (const [id, conn] of conns) observed.set(id, await observe(conn, safe));
  }, 60_000);

  /**
   * `responder` answers twice a request `requester` sends on `subject` with `reply`; what the server
   * let through, and how many answers `watcher` (subscribed to `reply`) received.
   */
  async function replyTrial(
    responder: string,
    subject: string,
    requester: string,
    reply: string,
    watcher: NatsConnection,
  ): Promise<{ first: boolean; second: boolean; received: number }> {
    const marker = `reply-trial-${Math.random().toString(36).slice(2)}`;
    const r = conns.get(responder)!;
    let received = 0;
    const watch = watcher.subscribe(reply, {
      callback: (_e, msg) => {
        if (msg.string().startsWith(marker)) received++;
      },
    });
    await watcher.flush();
    let request!: (reply: string) => void;
    const got = new Promise<string>((resolve) => {
      request = resolve;
    });
    const sub = r.nc.subscribe(subject, {
      callback: (_e, msg) => {
        if (msg.string() === marker && msg.reply) request(msg.reply);
      },
    });
    await r.settle();
    conns.get(requester)!.nc.publish(subject, marker, { reply });
    await conns.get(requester)!.settle();
    const to = await Promise.race([got, new Promise<string>((res) => setTimeout(() => res(''), 5000))]);
    expect(to, `${responder} got the request on ${subject}`).toBe(reply);
    const answer = async (n: number) => {
      r.nc.publish(to, `${marker}-${n}`);
      return !(await r.settle()).some((v) => v.operation === 'publish' && v.subject === to);
    };
    const first = await answer(1);
    const second = await answer(2);
    await watcher.flush();
    await new Promise((res) => setTimeout(res, 100));
    sub.unsubscribe();
    watch.unsubscribe();
    expect(received, `answers received on ${reply}`).toBe(Number(first) + Number(second));
    return { first, second, received };
  }

  it('replies: who may answer a request, and where (allow_responses)', async () => {
    const s = f.coord.subjects;
    const site = [...members].find(([, r]) => r === 'site')![0];
    const otherSite = [...members].filter(([, r]) => r === 'site')[1]![0];
    const agg = [...members].find(([, r]) => r === 'aggregator')![0];
    const auditor = [...members].find(([, r]) => r === 'auditor')![0];
    const coord = f.dep.coordinator;
    const inbox = (id: string) => `${s.inboxPrefix(id)}.permission-probe`;
    const words = (t: { first: boolean; second: boolean }) =>
      t.first
        ? t.second
          ? 'Both answers allowed'
          : 'One answer allowed (delivered); a second refused (permissions violation)'
        : 'Refused (permissions violation): it may answer nothing';
    const trials: [string, string, string, { first: boolean; second: boolean }][] = [];
    const own = conns.get(site)!.nc;
    trials.push([
      'coordinator',
      `a site’s request on \`heartbeat.<site>\``,
      'the site’s own inbox',
      await replyTrial(coord, s.heartbeat(site), site, inbox(site), own),
    ]);
    trials.push([
      'aggregator',
      `a site’s request on \`update.<self>.<site>\``,
      'the site’s own inbox',
      await replyTrial(agg, s.update(agg, site), site, inbox(site), own),
    ]);
    trials.push([
      'coordinator',
      `a site’s request on \`heartbeat.<site>\``,
      'another site’s inbox (`_INBOX.<F>.<site>.…`), named by the requester',
      await replyTrial(coord, s.heartbeat(site), site, inbox(otherSite), conns.get(otherSite)!.nc),
    ]);
    trials.push([
      'aggregator',
      `a site’s request on \`update.<self>.<site>\``,
      '`$JS.API.STREAM.INFO.<contributions>` (an API it has no right to), named by the requester',
      await replyTrial(agg, s.update(agg, site), site, `$JS.API.STREAM.INFO.${s.contributionsStream}`, admin),
    ]);
    trials.push([
      'site',
      'the coordinator’s `round.open`, sent as a request',
      'the coordinator’s inbox',
      await replyTrial(site, s.roundOpen, coord, inbox(coord), conns.get(coord)!.nc),
    ]);
    trials.push([
      'auditor',
      'the coordinator’s `registry` announcement, sent as a request',
      'the coordinator’s inbox',
      await replyTrial(auditor, s.registry, coord, inbox(coord), conns.get(coord)!.nc),
    ]);
    for (const [role, request, where, t] of trials) replyRows.push([role, request, where, words(t)]);
    // Responders answer only under the requester's own inbox: the server does not enforce it.
    expect(trials[2]![3].first && trials[3]![3].first).toBe(true);
  }, 60_000);

  it('headers on the streams a role may write: Nats-Rollup, Nats-Msg-Id, Nats-Expected-*', async () => {
    const s = f.coord.subjects;
    const [agg1, agg2] = [...members].filter(([, r]) => r === 'aggregator').map(([id]) => id);
    const jsm = await jetstreamManager(admin);
    const count = async (stream: string) => (await jsm.streams.info(stream)).state.messages;
    const hdr = (k: string, v: string) => {
      const h = natsHeaders();
      h.set(k, v);
      return h;
    };

    // An aggregator on its own subjects of the contributions stream.
    const js2 = jetstream(conns.get(agg2!)!.nc, { checkAPI: false });
    const js1 = jetstream(conns.get(agg1!)!.nc, { checkAPI: false });
    const own = (n: string) => `cohort.${F}.contribution.${agg2}.9.00.${n}.0`;
    const before = await count(s.contributionsStream);
    const tries: [string, string][] = [
      [
        '`Nats-Rollup: all`',
        await jsOutcome(js2.publish(own('ra'), 'x', { headers: hdr('Nats-Rollup', 'all') })),
      ],
      [
        '`Nats-Rollup: sub`',
        await jsOutcome(js2.publish(own('rs'), 'x', { headers: hdr('Nats-Rollup', 'sub') })),
      ],
      [
        '`Nats-Expected-Last-Sequence: 999999`',
        await jsOutcome(js2.publish(own('el'), 'x', { expect: { lastSequence: 999_999 } })),
      ],
      [
        '`Nats-Expected-Last-Subject-Sequence: 999999`',
        await jsOutcome(js2.publish(own('es'), 'x', { expect: { lastSubjectSequence: 999_999 } })),
      ],
      [
        '`Nats-Expected-Stream: <log>`',
        await jsOutcome(js2.publish(own('et'), 'x', { expect: { streamName: s.logStream } })),
      ],
      [
        '`Nats-Expected-Last-Msg-Id: …`',
        await jsOutcome(js2.publish(own('ei'), 'x', { expect: { lastMsgID: 'permission-probe' } })),
      ],
    ];
    for (const [header, outcome] of tries) {
      headerRows.push([
        'aggregator',
        `${header} on its own subjects of the contributions stream`,
        said(outcome),
      ]);
    }
    // Message ids: an aggregator's id acts on its own messages; honest writers set none.
    const id1 = await jsOutcome(js2.publish(own('id1'), 'x', { msgID: 'permission-probe-id' }));
    const id2 = await jsOutcome(js2.publish(own('id2'), 'x', { msgID: 'permission-probe-id' }));
    const honest = await jsOutcome(
      js1.publish(`cohort.${F}.contribution.${agg1}.9.00.id.0`, 'x', { expect: { lastSubjectSequence: 0 } }),
    );
    const after = await count(s.contributionsStream);
    headerRows.push([
      'aggregator',
      '`Nats-Msg-Id` X on one of its own subjects, X again on another, then another aggregator stores a contribution as its writer does (no id, `Nats-Expected-Last-Subject-Sequence: 0`)',
      `${said(id1)}, then ${said(id2)}; the other aggregator’s: ${said(honest)}`,
    ]);
    // Every header refused before anything was stored; ids act on the sender's own messages only.
    for (const [header, outcome] of tries) expect(outcome, header).not.toMatch(/^(stored|duplicate)$/);
    expect([id1, id2, honest]).toEqual(['stored', 'duplicate', 'stored']);
    expect(after, 'the contributions stream holds only what was stored').toBe(before + 2);

    // The coordinator on the log subject (its appends are fenced by Nats-Expected-Last-Sequence).
    const jsc = jetstream(conns.get(f.dep.coordinator)!.nc, { checkAPI: false });
    const logBefore = await count(s.logStream);
    const logTries: [string, string][] = [
      [
        '`Nats-Rollup: all`',
        await jsOutcome(jsc.publish(s.log, 'x', { headers: hdr('Nats-Rollup', 'all') })),
      ],
      [
        '`Nats-Rollup: sub`',
        await jsOutcome(jsc.publish(s.log, 'x', { headers: hdr('Nats-Rollup', 'sub') })),
      ],
      [
        '`Nats-Expected-Last-Sequence: 999999`',
        await jsOutcome(jsc.publish(s.log, 'x', { expect: { lastSequence: 999_999 } })),
      ],
      [
        '`Nats-Expected-Last-Subject-Sequence: 999999`',
        await jsOutcome(jsc.publish(s.log, 'x', { expect: { lastSubjectSequence: 999_999 } })),
      ],
      [
        '`Nats-Expected-Last-Msg-Id: …`',
        await jsOutcome(jsc.publish(s.log, 'x', { expect: { lastMsgID: 'permission-probe' } })),
      ],
      [
        '`Nats-Expected-Stream: <contributions>`',
        await jsOutcome(jsc.publish(s.log, 'x', { expect: { streamName: s.contributionsStream } })),
      ],
    ];
    for (const [header, outcome] of logTries)
      headerRows.push(['coordinator', `${header} on the log subject`, said(outcome)]);
    for (const [header, outcome] of logTries) expect(outcome, header).not.toMatch(/^(stored|duplicate)$/);
    expect(await count(s.logStream), 'the log keeps every entry and gains none').toBe(logBefore);

    // The coordinator on its write-once object streams (aggregates, snapshots): it writes every
    // object there, so it is the one that could replace or roll one up.
    for (const store of [aggregateStore(F), snapshotStore(F)]) {
      const label = store.kind;
      const sentinel = new Uint8Array(64).fill(1);
      const objects = await lazyWriteOnceStore(f.coord.transport.connection, store, {
        replicas: f.dep.config.history.replicas,
      })();
      await objects.put('permission-sentinel', sentinel);
      const n = await count(store.stream);
      const header = store.frameSubject('permission-sentinel', 0);
      const seq = (await jsm.streams.getMessage(store.stream, { last_by_subj: header }))!.seq;
      const storeTries: [string, string][] = [
        [
          `another object under the name of one it stored (its writer: new frames, then a new header)`,
          await objects.put('permission-sentinel', new Uint8Array(64).fill(2)).then(
            () => 'stored',
            (err: Error & { code?: string }) => err.code ?? err.message,
          ),
        ],
        [
          'a second message on the header subject of a stored object, with no expectation',
          await jsOutcome(jsc.publish(header, 'x')),
        ],
        [
          '`Nats-Expected-Last-Subject-Sequence` naming the stored header’s own sequence, on its subject',
          await jsOutcome(jsc.publish(header, 'x', { expect: { lastSubjectSequence: seq } })),
        ],
        [
          '`Nats-Rollup: all` on a new subject',
          await jsOutcome(
            jsc.publish(store.frameSubject('permission-probe', 0), 'x', {
              headers: hdr('Nats-Rollup', 'all'),
            }),
          ),
        ],
        [
          '`Nats-Rollup: sub` on the header subject of a stored object',
          await jsOutcome(jsc.publish(header, 'x', { headers: hdr('Nats-Rollup', 'sub') })),
        ],
      ];
      const left = await count(store.stream);
      const reads = await readWriteOnceObject(admin, store, 'permission-sentinel', { maxBytes: 1024 });
      const kept = reads !== null && Buffer.from(reads).equals(sentinel);
      for (const [attempt, outcome] of storeTries) {
        headerRows.push([
          'coordinator',
          `${attempt}, in the ${label} stream, which holds an object`,
          `${said(outcome)}; the stream keeps its ${n} messages${kept ? ' and the object reads as stored' : ''}`,
        ]);
        expect(outcome, attempt).not.toMatch(/^(stored|duplicate)$/);
      }
      expect(left, `the ${label} stream keeps every message and gains none`).toBe(n);
      expect(kept, `the ${label} object reads as stored`).toBe(true);
    }
  }, 60_000);

  it('the admin API: every route with each scope’s token, and without one', async () => {
    const tokens = Object.fromEntries(
      ADMIN_SCOPES.map((scope) => [scope, `permission-matrix-${scope}`]),
    ) as Record<AdminScope, string>;
    const app: FastifyInstance = buildAdminApi(
      coordinatorAdminDeps({ handle: coordinator, member: f.coord, config: f.dep.config }),
      {
        tokens: ADMIN_SCOPES.map((scope) => ({
          id: scope,
          sha256: hashToken(tokens[scope]),
          scopes: [scope],
        })),
        rateLimit: { perIp: 100_000, perToken: 100_000, sensitive: 100_000 },
      },
    );
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
      const callers: [string, string | undefined][] = [
        ...ADMIN_SCOPES.map((scope) => [scope, tokens[scope]] as [string, string]),
        ['none', undefined],
        ['unknown', 'permission-matrix-unknown'],
      ];
      const rows: string[][] = [];
      const routes = [...adminRoutes(app)].sort((a, b) =>
        a.url === b.url ? a.method.localeCompare(b.method) : a.url.localeCompare(b.url),
      );
      expect(routes.length).toBeGreaterThan(10);
      const least: Record<string, string> = {};
      for (const route of routes) {
        // A query field no route takes: a caller let through gets 400 before any handler runs.
        const url = `${base}${route.url.replace(/:[A-Za-z]+/g, 'x').replace(/\*/g, 'x')}?permission_probe=1`;
        const cells: string[] = [];
        for (const [, token] of callers) {
          const res = await fetch(url, {
            method: route.method,
            headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
          });
          await res.arrayBuffer();
          expect(res.status, `${route.method} ${route.url}`).not.toBe(429);
          expect(res.status, `${route.method} ${route.url}: a handler ran`).toBeGreaterThanOrEqual(400);
          cells.push(res.status === 401 || res.status === 403 ? String(res.status) : '✓');
        }
        // An unknown token is no token.
        expect(cells[4], `${route.method} ${route.url}`).toBe(cells[3]);
        rows.push([`\`${route.method} ${route.url}\``, ...cells.slice(0, 4)]);
        const allowed = ['admin', 'operator', 'auditor', 'public'].filter((_, i) => cells[i] === '✓');
        least[`${route.method} ${route.url}`] = allowed.at(-1) ?? 'nobody';
        // Scopes nest: admin ⊇ operator ⊇ auditor ⊇ no token.
        for (let i = 0; i < 4; i++) {
          if (cells[i] !== '✓')
            expect(cells.slice(i).includes('✓'), `${route.method} ${route.url}`).toBe(false);
        }
      }
      adminTable = markdownTable(
        [
          'Admin API route',
          '`admin` token',
          '`operator` token',
          '`auditor` token',
          'no token or an unknown one',
        ],
        rows,
      );
      // docs/admin-api.md's route table states the same scopes.
      const doc = readFileSync(new URL('../../docs/admin-api.md', import.meta.url), 'utf8');
      const documented = [
        ...doc.matchAll(/^\|\s*`(GET|POST|PUT|DELETE|PATCH) ([^`?]+)[^`]*`\s*\|\s*([a-z]+)/gm),
      ];
      expect(documented.length).toBeGreaterThan(10);
      for (const [, method, path, scope] of documented) {
        const key = `${method} ${path!.replace(/\{([A-Za-z]+)\}/g, ':$1')}`;
        expect(least[key], `docs/admin-api.md: ${key} is ${scope}`).toBe(scope);
      }
    } finally {
      await app.close();
    }
  }, 60_000);

  it('last, every member tries the operations that would delete or change a stream', async () => {
    const destructive = universe.probes.filter((p) => p.destructive);
    for (const [id, conn] of conns) {
      for (const [p, allowed] of await observe(conn, destructive)) observed.get(id)!.set(p, allowed);
    }
    matrices = roleMatrices(universe, observed);
    expect([...matrices.keys()].sort()).toEqual([...ROLES].sort());
  }, 60_000);

  /** The allowed operations of `role` among `probes` matching `which`, as few patterns. */
  function allowedPatterns(role: Role, op: Probe['op'], which: (p: Probe) => boolean): string[] {
    const m = matrices.get(role)!;
    const self = m.members[0]!;
    const probed = new Set<string>();
    const allowed = new Set<string>();
    for (const p of universe.probes) {
      if (p.op !== op || !which(p)) continue;
      const d = display(p, self, universe.members);
      probed.add(d);
      if (m.cells.get(`${op} ${d}`) === true) allowed.add(d);
    }
    return collapse(allowed, probed);
  }

  const code = (xs: readonly string[]) => (xs.length === 0 ? '—' : xs.map((x) => `\`${x}\``).join(', '));

  /** The JetStream API calls a role may make, grouped by the streams they apply to. */
  function apiCell(role: Role): string {
    const m = matrices.get(role)!;
    const byStreams = new Map<string, string[]>();
    for (const [operation, streams] of [...m.api].sort(([a], [b]) => a.localeCompare(b))) {
      const key = [...streams].sort().join(', ');
      byStreams.set(key, [...(byStreams.get(key) ?? []), operation]);
    }
    const parts = [...byStreams].map(([streams, ops]) =>
      streams === '' ? code(ops) : `${code(ops)} on ${streams}`,
    );
    const subs = allowedPatterns(role, 'subscribe', (p) => p.family === 'jetstream-api');
    if (subs.length > 0) parts.push(`subscribe ${code(subs)}`);
    return parts.length === 0 ? 'none' : parts.join('; ');
  }

  function roleRow(role: Role): string[] {
    const m = matrices.get(role)!;
    const fed = (p: Probe) => p.family === 'federation';
    const other = (p: Probe) =>
      p.family === 'inbox' || p.family === 'jetstream-data' || p.family === 'account';
    const others = [
      ...allowedPatterns(role, 'publish', other).map((x) => `publish \`${x}\``),
      ...allowedPatterns(role, 'subscribe', other).map((x) => `subscribe \`${x}\``),
    ];
    const { publish, subscribe } = m.counts;
    return [
      `${role} (${m.members.join(', ')})`,
      code(allowedPatterns(role, 'publish', fed)),
      code(allowedPatterns(role, 'subscribe', fed)),
      others.length === 0 ? '—' : others.join(', '),
      apiCell(role),
      `${publish[1] - publish[0]} of ${publish[1]} publishes, ${subscribe[1] - subscribe[0]} of ${subscribe[1]} subscriptions`,
    ];
  }

  it('docs/security.md’s permission tables are the ones observed', () => {
    const legend = universe.streams
      .map(
        (r) =>
          `\`<${r.label}>\` ${r.kind === 'stream' ? 'stream' : r.kind === 'kv' ? 'KV bucket' : 'object store'} \`${(r.bucket ?? r.name).replace(F, '<F>').replace(F.toUpperCase(), '<F>')}\`${r.exists ? '' : ' (no longer created)'}`,
      )
      .join(', ');
    const roles = markdownTable(
      [
        'Role (members probed)',
        'May publish under `cohort.<F>.`',
        'May subscribe under `cohort.<F>.`',
        'Inboxes, KV and object-store subjects',
        'JetStream API',
        'Denied, of all tried',
      ],
      ROLES.map(roleRow),
    );
    const text = [
      `Streams: ${legend}. \`*\`: every member tried in that place; \`…\`: a token the probe chose.`,
      '',
      roles,
      '',
      markdownTable(['Responder', 'Request', 'Answer on', 'nats-server'], replyRows),
      '',
      markdownTable(['Role', 'Publish with', 'nats-server'], headerRows),
      '',
      adminTable,
    ].join('\n');
    verifySection('permissions', text);
  });

  /** Allowed subscriptions of `role` (displayed) that start with one of `prefixes`. */
  const subscribes = (role: Role, ...prefixes: string[]) =>
    [...matrices.get(role)!.cells].filter(
      ([k, v]) => v && k.startsWith('subscribe ') && prefixes.some((p) => k.slice(10).startsWith(p)),
    );
  const apiOn = (role: Role, stream: string) =>
    [...matrices.get(role)!.api]
      .filter(([, streams]) => streams.includes(stream))
      .map(([op]) => op)
      .sort();
  const allowedPublishes = (role: Role) =>
    [...matrices.get(role)!.cells].filter(([k, v]) => v && k.startsWith('publish ')).map(([k]) => k.slice(8));

  it('only the coordinator writes the aggregates and snapshots streams; sites read both, auditors the aggregates', () => {
    const writes = (role: Role) =>
      allowedPublishes(role).filter((p) => p.startsWith('aggregate.') || p.startsWith('snapshot-store.'));
    expect(writes('coordinator').sort()).toEqual([
      'aggregate.<object>.<frame>',
      'snapshot-store.<object>.<frame>',
    ]);
    for (const role of ['site', 'aggregator', 'auditor'] as const) expect(writes(role), role).toEqual([]);
    for (const role of ROLES) {
      expect(subscribes(role, 'aggregate.', 'snapshot-store.', '>'), role).toEqual([]);
      expect(
        allowedPublishes(role).filter((p) => p.startsWith('$O.')),
        role,
      ).toEqual([]);
    }
    expect(apiOn('coordinator', 'aggregates')).toEqual(['STREAM.CREATE', 'STREAM.INFO', 'STREAM.MSG.GET']);
    expect(apiOn('coordinator', 'snapshots')).toEqual(['STREAM.CREATE', 'STREAM.INFO', 'STREAM.MSG.GET']);
    expect(apiOn('site', 'aggregates')).toEqual(['STREAM.INFO', 'STREAM.MSG.GET']);
    expect(apiOn('site', 'snapshots')).toEqual(['STREAM.INFO', 'STREAM.MSG.GET']);
    expect(apiOn('auditor', 'aggregates')).toEqual(['STREAM.INFO', 'STREAM.MSG.GET']);
    expect(apiOn('auditor', 'snapshots')).toEqual([]);
    expect(apiOn('aggregator', 'aggregates')).toEqual([]);
    expect(apiOn('aggregator', 'snapshots')).toEqual([]);
    // The object stores that held them before are no one's.
    for (const role of ROLES) {
      for (const old of ['legacyAggregates', 'legacySnapshots'])
        expect(apiOn(role, old), `${role} ${old}`).toEqual([]);
    }
  });

  it('the claims of “What each role can learn” hold in the matrix', () => {
    const text = (
      readFileSync(SECURITY_DOC, 'utf8').split('## What each role can learn')[1]?.split('\n## ')[0] ?? ''
    ).replace(/\s+/g, ' ');
    const readOnly = (ops: string[]) =>
      ops.length > 0 && ops.every((op) => op === 'STREAM.INFO' || op === 'STREAM.MSG.GET');
    const claims: [string, boolean][] = [
      [
        'RoundOpen, PREPARE (the summed ciphertexts), decisions, the log, the aggregates and snapshots (read only)',
        ['round.open', 'prepare', 'decision'].every((b) => subscribes('site', b).length === 1) &&
          ['log', 'aggregates', 'snapshots'].every((st) => readOnly(apiOn('site', st))) &&
          !allowedPublishes('site').some(
            (p) =>
              p === 'log' ||
              p.startsWith('aggregate.') ||
              p.startsWith('snapshot-store.') ||
              p.startsWith('$O.') ||
              p.startsWith('$KV.'),
          ),
      ],
      [
        'its NATS user may not subscribe to update subjects nor read the contributions stream',
        subscribes('site', 'update.', 'contribution.', '>').length === 0 &&
          apiOn('site', 'contributions').length === 0,
      ],
      [
        'The ciphertexts of the sites assigned to it',
        subscribes('aggregator', 'update.').every(([k]) => k.startsWith('subscribe update.<self>.')) &&
          subscribes('aggregator', 'update.').length > 0,
      ],
      [
        'it writes only its own contribution subjects and reads none',
        allowedPublishes('aggregator')
          .filter((p) => p.startsWith('contribution.'))
          .every((p) => p.startsWith('contribution.<self>.')) &&
          allowedPublishes('aggregator').some((p) => p.startsWith('contribution.<self>.')) &&
          subscribes('aggregator', 'contribution.', '>').length === 0 &&
          apiOn('aggregator', 'contributions').length === 0,
      ],
      [
        'It may read the stored contributions (the contributions stream), never subscribe to update or contribution subjects',
        readOnly(apiOn('coordinator', 'contributions').filter((op) => op !== 'STREAM.CREATE')) &&
          subscribes('coordinator', 'update.', 'contribution.', '>').length === 0,
      ],
      [
        'The signed federation log, the stored aggregates and the stored contributions (read only: to re-add each sum)',
        ['log', 'aggregates', 'contributions'].every((st) => readOnly(apiOn('auditor', st))),
      ],
      [
        'no snapshots, no leases, nothing it can write',
        apiOn('auditor', 'snapshots').length === 0 &&
          apiOn('auditor', 'lease').length === 0 &&
          allowedPublishes('auditor').every((p) => /^\$JS\.API\.STREAM\.(INFO|MSG\.GET)\.<\w+>$/.test(p)),
      ],
      [
        "Transport permissions keep updates off every site's subjects and off the coordinator's",
        subscribes('site', 'update.', 'contribution.').length === 0 &&
          subscribes('coordinator', 'update.', 'contribution.').length === 0,
      ],
    ];
    for (const [claim, holds] of claims) {
      expect(text.includes(claim), `docs/security.md no longer says: ${claim}`).toBe(true);
      expect(holds, `docs/security.md says "${claim}", the matrix disagrees`).toBe(true);
    }
  });
});

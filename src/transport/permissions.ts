import { fromPublic } from '@nats-io/nkeys';
import { InvalidArgumentError } from '../errors/index.ts';
import { assertSubjectToken, federationSubjects, readOnlyStreamSubjects } from './subjects.ts';

/** Subjects a user may (`allow`) or may not (`deny`) use; an absent list places no limit of its kind. */
export interface NatsPermissionSet {
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
}

/**
 * nats-server's `allow_responses`: a user that receives a request may publish `max` replies to
 * its reply subject within `expiresMs`, and nothing else on reply subjects (no `_INBOX.>` right).
 */
export interface NatsResponsePermission {
  readonly max: number;
  readonly expiresMs: number;
}

/**
 * Kinds of client connection nats-server 2.9.10 tells apart for `allowed_connection_types`
 * (`IN_PROCESS` is for embedded servers only; `STANDARD` is a NATS client over TCP/TLS).
 */
export const NATS_CONNECTION_TYPES = Object.freeze(['STANDARD', 'WEBSOCKET', 'LEAFNODE', 'MQTT'] as const);

/** One of {@link NATS_CONNECTION_TYPES}. */
export type NatsConnectionType = (typeof NATS_CONNECTION_TYPES)[number];

/** One user of a nats-server `authorization` block: an NKEY user, no password. */
export interface NatsUser {
  /** Who the user is (a member id): written as a comment and used in error messages. */
  readonly user: string;
  /** The user's public NKEY (`U…`); the client proves it holds the seed by signing the server's nonce. */
  readonly nkey: string;
  readonly publish: NatsPermissionSet;
  readonly subscribe: NatsPermissionSet;
  /** Replies to requests it receives; absent: it may not reply to anything. */
  readonly allowResponses?: NatsResponsePermission;
  /**
   * The only kinds of connection the user may open (`allowed_connection_types`, the one per-user
   * connection setting nats-server 2.9.10 takes in a configuration file); absent: any kind.
   */
  readonly allowedConnectionTypes?: readonly NatsConnectionType[];
}

/** A member and the public NKEY of its NATS user (`<id>.nk.pub`). */
export interface MemberCredential {
  readonly id: string;
  readonly nkey: string;
}

/** The members of one federation whose NATS users to generate. */
export interface FederationAuthorizationSpec {
  readonly federation: string;
  readonly coordinator: MemberCredential;
  /**
   * Aggregators. Each may also be a parent of others in a round whose tree is deeper than one
   * level (RoundOpen's `parents`, chosen per round), so every aggregator may send its partial to
   * any aggregator and receive partials from any: `subpartial.*.<self>` / `subpartial.<self>.*`.
   */
  readonly aggregators?: readonly MemberCredential[];
  readonly sites?: readonly MemberCredential[];
  /**
   * Read-only members: they may read the log stream, the aggregates stream (ciphertexts of sums,
   * which `cohort audit verify` re-hashes) and the contributions stream, and subscribe to their
   * inbox and the registry announcements, and publish nothing else.
   */
  readonly auditors?: readonly MemberCredential[];
  /**
   * How long a responder may answer a request it received (`allow_responses.expires`); default
   * 60000 ms, above the longest request timeout of the services (30 s for a snapshot).
   */
  readonly responseExpiresMs?: number;
}

/**
 * What a member may connect with: a NATS client over TLS only. No member uses a websocket, MQTT or
 * leafnode connection, so none may open one even where an operator enables such a listener (each
 * has its own TLS and authentication settings).
 */
export const MEMBER_CONNECTION_TYPES: readonly NatsConnectionType[] = Object.freeze(['STANDARD']);

/** Default `allow_responses.expires` of {@link federationUsers}. */
export const DEFAULT_RESPONSE_EXPIRES_MS = 60_000;

/** Throws `INVALID_ARGUMENT` unless `nkey` is a valid public NKEY of a user (`U…`). */
export function assertUserNkey(name: string, nkey: unknown): asserts nkey is string {
  let ok = typeof nkey === 'string' && /^U[A-Z2-7]{55}$/.test(nkey);
  if (ok) {
    try {
      fromPublic(nkey as string);
    } catch {
      ok = false;
    }
  }
  if (!ok) {
    throw new InvalidArgumentError(
      `${name} must be a public user NKEY (U followed by 55 base32 characters)`,
      {
        details: { name },
      },
    );
  }
}

/**
 * The JetStream API subjects that the single writer of `stream` needs, and no more: create it and
 * read its info (`STREAM.CREATE`, `STREAM.INFO`: what `ensureLogStream`, `ensureStream` and
 * `Kvm.create` send) and read a message (`STREAM.MSG.GET`: the log reader, `kv.get`, the
 * write-once object writer reading back a frame it finds stored). Never `STREAM.DELETE`,
 * `STREAM.PURGE`, `STREAM.MSG.DELETE`, `STREAM.UPDATE` or consumers: the coordinator neither
 * watches nor lists.
 */
function streamWriterSubjects(stream: string): string[] {
  return [...readOnlyStreamSubjects(stream), `$JS.API.STREAM.CREATE.${stream}`];
}

/**
 * The NATS users of a federation, least privilege per role (docs/security.md, "Permissions, as
 * observed"). No role may publish on `_INBOX.>`: responders answer through `allow_responses` (one
 * reply per request received, within {@link FederationAuthorizationSpec.responseExpiresMs}), so no
 * member can inject a reply into another member's inbox.
 * - a site publishes only its own update, vote, share, epoch, heartbeat, switched and snapshot subjects
 *   (the coordinator and its aggregator answer its requests), and subscribes only to round.open,
 *   prepare, share-request, epoch-request, decision, the registry announcements and its own inbox, so it never receives another
 *   site's update; for catch-up
 *   it may read (stream info and get-message, nothing else) the log and the aggregates and
 *   snapshots streams; it answers no request;
 * - an aggregator subscribes to the updates and child aggregators' partials addressed to it
 *   (`update.<self>.>`, `subpartial.<self>.*`) and answers them, and to the registry announcements;
 *   it publishes its partial (a request to the coordinator, `partial.<self>`, or to a parent
 *   aggregator, `subpartial.<parent>.<self>`: its own name is always the last token) and its
 *   heartbeat, may read the log stream (its registry changes), and stores the site updates it sums
 *   on its own subjects of the contributions stream (`contribution.<self>.>`: a JetStream publish,
 *   acknowledged to its inbox; no JetStream API right on that stream, so it can neither read
 *   another aggregator's contributions nor delete, purge or roll up; the stream makes each subject
 *   write-once and caps a message at one frame);
 * - the coordinator subscribes to the heartbeat, partial, vote, share, epoch, switched and snapshot
 *   subjects and the rollback and registry request subjects, and answers them; it publishes
 *   round.open, prepare, share-request, epoch-request, decision, the registry announcements and (as the operator's `cohort versions rollback` and
 *   `cohort registry enroll|rotate|revoke`) the admin requests, appends to the log
 *   subject, writes its objects on the subjects of its write-once aggregates and snapshots
 *   streams (`aggregate.>`, `snapshot-store.>`: a JetStream publish; the streams refuse a second
 *   message on a subject, rollups, deletes and purges), and uses the JetStream API of its own
 *   streams only: the log, the aggregates and snapshots streams, the contributions stream
 *   (created with its retention and write-once subjects; it writes nothing there, it reads
 *   contributions back for a robust rule) and the lease bucket (create, info, get message; never
 *   delete, purge, update or consumers), plus `$KV.<lease>.>` and `$JS.API.INFO` (the account
 *   check of `jetstreamManager`); no object store (`$O.>`) at all;
 * - an auditor subscribes to its inbox and the registry announcements and may only read the log
 *   stream, the aggregates stream and the contributions stream (info and get-message: to re-add each
 *   round's contributions; never snapshots or leases). Sites may not read the contributions
 *   stream (a site holds the CKKS secret key), nor may any role subscribe to its subjects.
 * Every member may connect only as a NATS client (`allowed_connection_types: ["STANDARD"]`). How
 * many connections and subscriptions it may open, and how large a message, nats-server 2.9.10
 * bounds only server-wide: see `federationServerLimits` (server-config.ts).
 * Member ids must be unique across roles (they name heartbeat subjects and users).
 */
export function federationUsers(spec: FederationAuthorizationSpec): NatsUser[] {
  if (typeof spec !== 'object' || spec === null) {
    throw new InvalidArgumentError('spec must be an object', { details: { name: 'spec' } });
  }
  const s = federationSubjects(spec.federation);
  const expiresMs = spec.responseExpiresMs ?? DEFAULT_RESPONSE_EXPIRES_MS;
  if (!Number.isInteger(expiresMs) || expiresMs < 100 || expiresMs > 3_600_000) {
    throw new InvalidArgumentError(`responseExpiresMs must be an integer in [100, 3600000] ms`, {
      details: { name: 'responseExpiresMs' },
    });
  }
  const responder: NatsResponsePermission = { max: 1, expiresMs };
  const users: NatsUser[] = [];
  const ids = new Set<string>();
  const add = (
    role: string,
    m: MemberCredential,
    publish: NatsPermissionSet,
    subscribe: NatsPermissionSet,
    answers: boolean,
  ) => {
    assertSubjectToken(`${role}.id`, m?.id);
    assertUserNkey(`${role}[${m.id}].nkey`, m.nkey);
    if (ids.has(m.id)) {
      throw new InvalidArgumentError(`${role}.id ${m.id} is used by two members`, {
        details: { name: `${role}.id`, value: m.id },
      });
    }
    ids.add(m.id);
    users.push({
      user: m.id,
      nkey: m.nkey,
      publish,
      subscribe,
      ...(answers ? { allowResponses: responder } : {}),
      allowedConnectionTypes: MEMBER_CONNECTION_TYPES,
    });
  };
  const ownInbox = (id: string) => `${s.inboxPrefix(id)}.>`;
  // `cohort.F.heartbeat.*` from `heartbeat(id)`: the subject with its last (member) token a wildcard.
  const anyMember = (subject: (id: string) => string) => `${subject('_').slice(0, -1)}*`;
  assertSubjectToken('coordinator.id', spec.coordinator?.id);
  const coordinatorStreams = [
    s.logStream,
    s.aggregatesStream,
    s.snapshotsStream,
    s.contributionsStream,
    `KV_${s.leaseBucket}`,
  ];
  add(
    'coordinator',
    spec.coordinator,
    {
      allow: [
        s.roundOpen,
        s.prepare,
        s.shareRequest,
        s.epochRequest,
        s.decision,
        s.rollbackRequest,
        s.registryRequest,
        s.registry,
        s.log,
        // Its objects: a JetStream publish on the write-once streams' own subjects.
        s.aggregates,
        s.snapshotStore,
        '$JS.API.INFO',
        ...coordinatorStreams.flatMap(streamWriterSubjects),
        `$KV.${s.leaseBucket}.>`,
      ],
    },
    {
      allow: [
        anyMember(s.heartbeat),
        anyMember(s.partial),
        anyMember(s.vote),
        anyMember(s.share),
        anyMember(s.epoch),
        anyMember(s.switched),
        anyMember(s.snapshot),
        s.rollbackRequest,
        s.registryRequest,
        ownInbox(spec.coordinator.id),
      ],
    },
    true,
  );
  for (const a of spec.aggregators ?? []) {
    assertSubjectToken('aggregator.id', a?.id);
    add(
      'aggregator',
      a,
      {
        allow: [
          s.partial(a.id),
          // Its own partial to whichever aggregator a round makes its parent.
          `cohort.${spec.federation}.subpartial.*.${a.id}`,
          s.heartbeat(a.id),
          ...readOnlyStreamSubjects(s.logStream),
          // Its own contributions only: a JetStream publish needs no API right.
          s.contributionsOf(a.id),
        ],
      },
      {
        allow: [
          s.updatesFor(a.id),
          s.subpartialsFor(a.id),
          s.roundOpen,
          s.prepare,
          s.decision,
          s.registry,
          ownInbox(a.id),
        ],
      },
      true,
    );
  }
  for (const site of spec.sites ?? []) {
    assertSubjectToken('site.id', site?.id);
    add(
      'site',
      site,
      {
        allow: [
          `cohort.${spec.federation}.update.*.${site.id}`,
          s.vote(site.id),
          s.share(site.id),
          s.epoch(site.id),
          s.heartbeat(site.id),
          s.switched(site.id),
          s.snapshot(site.id),
          ...readOnlyStreamSubjects(s.logStream),
          ...readOnlyStreamSubjects(s.aggregatesStream),
          ...readOnlyStreamSubjects(s.snapshotsStream),
        ],
      },
      {
        allow: [
          s.roundOpen,
          s.prepare,
          s.shareRequest,
          s.epochRequest,
          s.decision,
          s.registry,
          ownInbox(site.id),
        ],
      },
      false,
    );
  }
  for (const au of spec.auditors ?? []) {
    assertSubjectToken('auditor.id', au?.id);
    add(
      'auditor',
      au,
      {
        allow: [
          ...readOnlyStreamSubjects(s.logStream),
          ...readOnlyStreamSubjects(s.aggregatesStream),
          ...readOnlyStreamSubjects(s.contributionsStream),
        ],
      },
      { allow: [s.registry, ownInbox(au.id)] },
      false,
    );
  }
  return users;
}

/** A conf-file double-quoted string: backslash and quote escaped, nothing expanded. */
function quote(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function renderSet(set: NatsPermissionSet): string {
  const parts: string[] = [];
  if (set.allow !== undefined) parts.push(`allow: [${set.allow.map(quote).join(', ')}]`);
  if (set.deny !== undefined) parts.push(`deny: [${set.deny.map(quote).join(', ')}]`);
  return `{ ${parts.join(', ')} }`;
}

/** `60000ms`: a Go duration nats-server parses. */
function duration(ms: number): string {
  return `${ms}ms`;
}

/**
 * Renders `users` as a nats-server `authorization { users = [...] }` block of NKEY users (no
 * password), every value quoted, so the text can be embedded in a server configuration as is.
 * Each user's permissions carry `allow_responses` when it answers requests, and its
 * `allowed_connection_types` when it has them.
 */
export function renderAuthorization(users: readonly NatsUser[]): string {
  const lines = ['authorization {', '  users = ['];
  const keys = new Set<string>();
  for (const u of users) {
    if (typeof u.user !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(u.user)) {
      throw new InvalidArgumentError(
        `user ${JSON.stringify(String(u.user))} must be a subject-token-like name`,
        {
          details: { name: 'user' },
        },
      );
    }
    assertUserNkey(`nkey of ${u.user}`, u.nkey);
    if (keys.has(u.nkey)) {
      throw new InvalidArgumentError(`nkey of ${u.user} is used by another user`, {
        details: { name: 'nkey', user: u.user },
      });
    }
    keys.add(u.nkey);
    for (const subject of [
      ...(u.publish.allow ?? []),
      ...(u.publish.deny ?? []),
      ...(u.subscribe.allow ?? []),
      ...(u.subscribe.deny ?? []),
    ]) {
      if (!/^[A-Za-z0-9_$.*>-]{1,1024}$/.test(subject)) {
        throw new InvalidArgumentError(
          `permission subject ${JSON.stringify(subject)} of ${u.user} is not safe`,
          {
            details: { name: 'subject', user: u.user },
          },
        );
      }
    }
    const types = u.allowedConnectionTypes;
    if (
      types !== undefined &&
      (!Array.isArray(types) ||
        types.length === 0 ||
        types.some((t) => !(NATS_CONNECTION_TYPES as readonly string[]).includes(t)))
    ) {
      throw new InvalidArgumentError(
        `allowedConnectionTypes of ${u.user} must be a non-empty list of ${NATS_CONNECTION_TYPES.join(', ')}`,
        { details: { name: 'allowedConnectionTypes', user: u.user } },
      );
    }
    const responses = u.allowResponses;
    if (responses !== undefined) {
      if (
        !Number.isInteger(responses.max) ||
        responses.max < 1 ||
        responses.max > 1_000_000 ||
        !Number.isInteger(responses.expiresMs) ||
        responses.expiresMs < 1 ||
        responses.expiresMs > 86_400_000
      ) {
        throw new InvalidArgumentError(`allowResponses of ${u.user} must have integer max and expiresMs`, {
          details: { name: 'allowResponses', user: u.user },
        });
      }
    }
    lines.push(
      `    # ${u.user}`,
      '    {',
      `      nkey: ${quote(u.nkey)}`,
      ...(types === undefined ? [] : [`      allowed_connection_types: [${types.map(quote).join(', ')}]`]),
      '      permissions: {',
      `        publish: ${renderSet(u.publish)}`,
      `        subscribe: ${renderSet(u.subscribe)}`,
      ...(responses === undefined
        ? []
        : [
            `        allow_responses: { max: ${responses.max}, expires: ${quote(duration(responses.expiresMs))} }`,
          ]),
      '      }',
      '    }',
    );
  }
  lines.push('  ]', '}');
  return `${lines.join('\n')}\n`;
}

/** {@link renderAuthorization} of {@link federationUsers}: the conf block of a whole federation. */
export function federationAuthorization(spec: FederationAuthorizationSpec): string {
  return renderAuthorization(federationUsers(spec));
}

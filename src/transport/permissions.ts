import { InvalidArgumentError } from '../errors/index.ts';
import { hasControlCharacter } from './subject-check.ts';
import {
  assertSubjectToken,
  federationSubjects,
  objectStreamName,
  readOnlyStreamSubjects,
} from './subjects.ts';

/** Subjects a user may (`allow`) or may not (`deny`) use; an absent list places no limit of its kind. */
export interface NatsPermissionSet {
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
}

/** One user of a nats-server `authorization` block. */
export interface NatsUser {
  readonly user: string;
  readonly password: string;
  readonly publish: NatsPermissionSet;
  readonly subscribe: NatsPermissionSet;
}

/** A member and the password of its NATS user (plain text or a bcrypt hash, as nats-server accepts). */
export interface MemberCredential {
  readonly id: string;
  readonly password: string;
}

/** The members of one federation whose NATS users to generate. */
export interface FederationAuthorizationSpec {
  readonly federation: string;
  readonly coordinator: MemberCredential;
  /** Aggregators; `children` names the child aggregators whose partials this one sums (tree depth > 1). */
  readonly aggregators?: readonly (MemberCredential & { readonly children?: readonly string[] })[];
  readonly sites?: readonly MemberCredential[];
  /** Read-only members: they may subscribe to the decision log subject and their inbox, and publish nothing. */
  readonly auditors?: readonly MemberCredential[];
}

function assertPassword(name: string, password: unknown): asserts password is string {
  // Control characters cannot be written safely in a conf string; the rest is escaped.
  if (
    typeof password !== 'string' ||
    password.length < 8 ||
    password.length > 1024 ||
    hasControlCharacter(password)
  ) {
    throw new InvalidArgumentError(`${name} must be 8-1024 characters without control characters`, {
      details: { name },
    });
  }
}

/**
 * The NATS users of a federation, least privilege per role (DESIGN §6, §10):
 * - a site publishes only its own update, vote, heartbeat, switched and snapshot subjects and
 *   replies (`_INBOX.>`), and subscribes only to round.open, prepare, decision and its own inbox,
 *   so it never receives another site's update; for catch-up it may read (stream info and
 *   get-message, nothing else) the log and the aggregate and snapshot object stores;
 * - an aggregator subscribes to the updates addressed to it (and its children's partials), and
 *   publishes its partial, its heartbeat and replies;
 * - the coordinator may use every subject of the federation, replies, and the JetStream,
 *   KV and object store APIs (`$JS.>`, `$KV.>`, `$O.>`);
 * - an auditor subscribes to the log subject and its inbox and may only read the log stream.
 * Member ids must be unique across roles (they name heartbeat subjects and users).
 */
export function federationUsers(spec: FederationAuthorizationSpec): NatsUser[] {
  if (typeof spec !== 'object' || spec === null) {
    throw new InvalidArgumentError('spec must be an object', { details: { name: 'spec' } });
  }
  const s = federationSubjects(spec.federation);
  const users: NatsUser[] = [];
  const ids = new Set<string>();
  const add = (
    role: string,
    m: MemberCredential,
    publish: NatsPermissionSet,
    subscribe: NatsPermissionSet,
  ) => {
    assertSubjectToken(`${role}.id`, m?.id);
    assertPassword(`${role}[${m.id}].password`, m.password);
    if (ids.has(m.id)) {
      throw new InvalidArgumentError(`${role}.id ${m.id} is used by two members`, {
        details: { name: `${role}.id`, value: m.id },
      });
    }
    ids.add(m.id);
    users.push({ user: m.id, password: m.password, publish, subscribe });
  };
  const ownInbox = (id: string) => `${s.inboxPrefix(id)}.>`;
  add(
    'coordinator',
    spec.coordinator,
    { allow: [s.all, '_INBOX.>', '$JS.>', '$KV.>', '$O.>'] },
    { allow: [s.all, '_INBOX.>', '$JS.>', '$KV.>', '$O.>'] },
  );
  for (const a of spec.aggregators ?? []) {
    assertSubjectToken('aggregator.id', a?.id);
    const children = (a.children ?? []).map((c, i) => {
      assertSubjectToken(`aggregator[${a.id}].children[${i}]`, c);
      return s.partial(c);
    });
    add(
      'aggregator',
      a,
      { allow: [s.partial(a.id), s.heartbeat(a.id), '_INBOX.>'] },
      { allow: [s.updatesFor(a.id), ...children, s.roundOpen, s.prepare, s.decision, ownInbox(a.id)] },
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
          s.heartbeat(site.id),
          s.switched(site.id),
          s.snapshot(site.id),
          '_INBOX.>',
          ...readOnlyStreamSubjects(s.logStream),
          ...readOnlyStreamSubjects(objectStreamName(s.aggregatesBucket)),
          ...readOnlyStreamSubjects(objectStreamName(s.snapshotsBucket)),
        ],
      },
      { allow: [s.roundOpen, s.prepare, s.decision, ownInbox(site.id)] },
    );
  }
  for (const au of spec.auditors ?? []) {
    assertSubjectToken('auditor.id', au?.id);
    add('auditor', au, { allow: readOnlyStreamSubjects(s.logStream) }, { allow: [s.log, ownInbox(au.id)] });
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

/**
 * Renders `users` as a nats-server `authorization { users = [...] }` block, every value
 * quoted, so the text can be embedded in a server configuration as is.
 */
export function renderAuthorization(users: readonly NatsUser[]): string {
  const lines = ['authorization {', '  users = ['];
  for (const u of users) {
    assertPassword(`password of ${u.user}`, u.password);
    if (typeof u.user !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(u.user)) {
      throw new InvalidArgumentError(
        `user ${JSON.stringify(String(u.user))} must be a subject-token-like name`,
        {
          details: { name: 'user' },
        },
      );
    }
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
    lines.push(
      '    {',
      `      user: ${quote(u.user)}`,
      `      password: ${quote(u.password)}`,
      '      permissions: {',
      `        publish: ${renderSet(u.publish)}`,
      `        subscribe: ${renderSet(u.subscribe)}`,
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

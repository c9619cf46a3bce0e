// The universe of NATS operations a member could try, generated from the code, and a prober that
// observes which of them a live nats-server allows a member's own user.
//
// Subjects come from `federationSubjects(F)`: every subject it holds, and every subject builder
// called with every member id in each member place (own and others'), fixed values elsewhere
// (round 1, attempt `00`, frame 0, object `round-1`); an inbox prefix gives `<prefix>.…` to publish and `<prefix>.>`
// to subscribe. Streams are the ones `federationSubjects` names (the log, contributions, aggregates
// and snapshots streams, and the object-store and KV buckets, as streams `OBJ_<bucket>` /
// `KV_<bucket>`: the object stores no longer created among them) and any other the
// server holds; for each, the JetStream API subjects of every stream and consumer operation, its
// direct gets and acks, and its `$KV.<bucket>.…` / `$O.<bucket>.…` data subjects. A few account-wide
// wildcards (`>`, `$JS.API.>`, `$SYS.>`, `_INBOX.>`…) close the list.
//
// Each publish carries `Nats-Expected-Stream: permission-probe`, so a publish that a stream would
// capture is refused by JetStream (after the permission check) and stores nothing; the JetStream API
// requests carry bodies that make an allowed call fail harmlessly (a stream name that does not match
// its subject, a purge filter that matches nothing, a sequence that does not exist) except
// `STREAM.DELETE`, `STREAM.RESTORE` and `STREAM.LEADER.STEPDOWN`, which have none: those and the other
// destructive calls are marked so the test tries them last.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type NatsConnection,
  headers as natsHeaders,
  PermissionViolationError,
} from '@nats-io/transport-node';
import { expect } from 'vitest';
import { type FederationSubjects, federationSubjects, objectStreamName } from '../../src/transport/index.ts';

/** The roles a federation's NATS users have. */
export type Role = 'coordinator' | 'aggregator' | 'site' | 'auditor';

/** One token of a probe's subject, as the matrix shows it. */
export type Token =
  /** `cohort.<F>`: the federation's prefix, left out of the matrix's subjects. */
  | { readonly kind: 'prefix'; readonly text: string }
  | { readonly kind: 'text'; readonly text: string }
  /** The federation id inside another subject (an inbox prefix). */
  | { readonly kind: 'federation'; readonly text: string }
  /** A member id: `<self>` for the member probing, else the member's role. */
  | { readonly kind: 'member'; readonly text: string }
  /** A builder's argument that is not a member (round, attempt, frame). */
  | { readonly kind: 'param'; readonly text: string; readonly name: string }
  /** A stream or bucket name, shown by its label (`<log>`, `<aggregates>`…). */
  | { readonly kind: 'stream'; readonly text: string; readonly label: string }
  /** A token the probe chose (a consumer name, a message subject): `…`. */
  | { readonly kind: 'free'; readonly text: string };

/** A stream of the federation and what it is. */
export interface StreamRef {
  /** `log`, `contributions`, `aggregates`… (the `federationSubjects` key without `Stream`/`Bucket`). */
  readonly label: string;
  /** The JetStream stream (`COHORT_F`, `OBJ_cohort-F-aggregates`, `KV_cohort-F-lease`). */
  readonly name: string;
  /** A plain stream, a KV bucket or an object store. */
  readonly kind: 'stream' | 'kv' | 'object';
  /** The bucket's name (KV and object stores). */
  readonly bucket?: string;
  /** Whether the server holds it (the updates store, replaced by the contributions stream, does not). */
  readonly exists: boolean;
}

/** Where a probe's subject comes from. */
export type ProbeFamily = 'federation' | 'inbox' | 'jetstream-api' | 'jetstream-data' | 'account';

/** One operation: publish on, or subscribe to, one subject. */
export interface Probe {
  readonly op: 'publish' | 'subscribe';
  readonly subject: string;
  readonly tokens: readonly Token[];
  readonly family: ProbeFamily;
  /** JetStream API: the operation (`STREAM.INFO`…) and the stream's label (none: account-wide). */
  readonly api?: { readonly operation: string; readonly stream?: string };
  /** What a publish carries (a harmless request body for the JetStream API). */
  readonly payload: string;
  /** Tried after everything else (it would delete or change state were it allowed). */
  readonly destructive: boolean;
}

/** The members of a federation and the operations to try with each one's user. */
export interface Universe {
  readonly federation: string;
  readonly members: ReadonlyMap<string, Role>;
  readonly streams: readonly StreamRef[];
  readonly probes: readonly Probe[];
}

/** Values of the subject builders' arguments that are not member ids. */
const FIXED_ARGUMENTS: Readonly<Record<string, string | number>> = {
  round: 1,
  attempt: '00',
  frame: 0,
  object: 'round-1',
};

/** The token a probe chooses where a subject needs one. */
const FREE = 'permission-probe';

/** The parameter names of a subject builder (`update(aggregator, site) {…}`), from its source. */
export function parameterNames(fn: (...args: never[]) => unknown): string[] {
  const m = /^[^(]*\(([^)]*)\)/.exec(fn.toString());
  expect(m, `cannot read the parameters of ${fn.name}`).not.toBeNull();
  return m![1]!
    .split(',')
    .map((p) => p.trim().split(/[\s:=]/)[0]!)
    .filter((p) => p !== '');
}

function cartesian<T>(lists: readonly (readonly T[])[]): T[][] {
  return lists.reduce<T[][]>((acc, list) => acc.flatMap((prefix) => list.map((v) => [...prefix, v])), [[]]);
}

/** `subject` as tokens, its arguments (in order) marked as members or parameters. */
function tokenize(
  subject: string,
  federation: string,
  args: readonly { value: string; name: string; member: boolean }[],
): Token[] {
  const parts = subject.split('.');
  const tokens: Token[] = parts.map((text) => ({ kind: 'text', text }));
  let from = 0;
  if (parts[0] === 'cohort' && parts[1] === federation) {
    tokens[0] = { kind: 'prefix', text: 'cohort' };
    tokens[1] = { kind: 'prefix', text: federation };
    from = 2;
  } else if (parts[0] === '_INBOX' && parts[1] === federation) {
    tokens[1] = { kind: 'federation', text: federation };
    from = 2;
  }
  for (const a of args) {
    const i = parts.indexOf(a.value, from);
    expect(i, `argument ${a.name}=${a.value} not found in ${subject}`).toBeGreaterThanOrEqual(0);
    tokens[i] = a.member ? { kind: 'member', text: a.value } : { kind: 'param', text: a.value, name: a.name };
    from = i + 1;
  }
  return tokens;
}

const hasWildcard = (subject: string) => subject.split('.').some((t) => t === '*' || t === '>');

/** The `federationSubjects` keys that name streams and buckets (`logStream`, `aggregatesBucket`…). */
export function federationStreams(s: FederationSubjects, onServer: ReadonlySet<string>): StreamRef[] {
  const out: StreamRef[] = [];
  for (const [key, value] of Object.entries(s)) {
    if (typeof value !== 'string') continue;
    const stream = /^(.+)Stream$/.exec(key);
    const bucket = /^(.+)Bucket$/.exec(key);
    if (stream) {
      out.push({ label: stream[1]!, name: value, kind: 'stream', exists: onServer.has(value) });
    } else if (bucket) {
      const kv = `KV_${value}`;
      const name = onServer.has(kv) ? kv : objectStreamName(value);
      out.push({
        label: bucket[1]!,
        name,
        kind: name === kv ? 'kv' : 'object',
        bucket: value,
        exists: onServer.has(name),
      });
    }
  }
  for (const name of onServer) {
    if (!out.some((r) => r.name === name)) out.push({ label: name, name, kind: 'stream', exists: true });
  }
  return out;
}

/** JetStream API operations on one stream: the operation, what follows the stream, a body, destructive. */
const STREAM_API: readonly (readonly [string, string, string, boolean])[] = [
  ['STREAM.INFO', '', '', false],
  ['STREAM.MSG.GET', '', '{"seq":1}', false],
  ['STREAM.CREATE', '', `{"name":"${FREE}"}`, false],
  ['STREAM.SNAPSHOT', '', '{}', false],
  ['CONSUMER.CREATE', '', `{"stream_name":"${FREE}"}`, false],
  ['CONSUMER.CREATE', `.${FREE}`, `{"stream_name":"${FREE}"}`, false],
  ['CONSUMER.DURABLE.CREATE', `.${FREE}`, `{"stream_name":"${FREE}"}`, false],
  ['CONSUMER.INFO', `.${FREE}`, '', false],
  ['CONSUMER.MSG.NEXT', `.${FREE}`, '{"batch":1,"no_wait":true}', false],
  ['CONSUMER.LIST', '', '{}', false],
  ['CONSUMER.NAMES', '', '{}', false],
  ['DIRECT.GET', '', '{"seq":1}', false],
  ['DIRECT.GET', `.${FREE}`, '', false],
  ['STREAM.UPDATE', '', `{"name":"${FREE}"}`, true],
  ['STREAM.PURGE', '', `{"filter":"${FREE}.none"}`, true],
  ['STREAM.MSG.DELETE', '', '{"seq":999999999}', true],
  ['CONSUMER.DELETE', `.${FREE}`, '', true],
  ['STREAM.LEADER.STEPDOWN', '', '', true],
  ['STREAM.RESTORE', '', '', true],
  ['STREAM.DELETE', '', '', true],
];

/** Account-wide JetStream API requests. */
const ACCOUNT_API: readonly (readonly [string, string])[] = [
  ['INFO', ''],
  ['STREAM.NAMES', '{}'],
  ['STREAM.LIST', '{}'],
];

/** Account-wide wildcards, to subscribe to. */
const ACCOUNT_WILDCARDS = [
  '>',
  '$JS.API.>',
  '$JS.EVENT.>',
  '$JS.ACK.>',
  '$KV.>',
  '$O.>',
  '$SYS.>',
  '_INBOX.>',
];

/**
 * Every operation to try in federation `federation` whose members are `members`, given the streams
 * the server holds (`onServer`).
 */
export function permissionUniverse(
  federation: string,
  members: ReadonlyMap<string, Role>,
  onServer: ReadonlySet<string>,
): Universe {
  const s = federationSubjects(federation);
  const ids = [...members.keys()];
  const probes: Probe[] = [];
  const add = (
    subject: string,
    tokens: Token[],
    family: ProbeFamily,
    ops: readonly ('publish' | 'subscribe')[],
    extra: { payload?: string; destructive?: boolean; api?: Probe['api'] } = {},
  ) => {
    for (const op of ops) {
      probes.push({
        op,
        subject,
        tokens,
        family,
        payload: extra.payload ?? 'permission probe',
        destructive: extra.destructive ?? false,
        ...(extra.api === undefined ? {} : { api: extra.api }),
      });
    }
  };
  const both = ['publish', 'subscribe'] as const;
  const subscribeOnly = ['subscribe'] as const;

  // Every subject of federationSubjects(F), every builder with every member in each member place.
  for (const value of Object.values(s)) {
    if (typeof value === 'string') {
      if (!value.startsWith(`cohort.${federation}.`)) continue; // names: federation, streams, buckets
      add(value, tokenize(value, federation, []), 'federation', hasWildcard(value) ? subscribeOnly : both);
      continue;
    }
    if (typeof value !== 'function') continue;
    const names = parameterNames(value as (...args: never[]) => unknown);
    const choices = names.map((name) => {
      if (name in FIXED_ARGUMENTS) return [{ name, value: FIXED_ARGUMENTS[name]!, member: false }];
      return ids.map((id) => ({ name, value: id as string | number, member: true }));
    });
    for (const combo of cartesian(choices)) {
      const subject = (value as (...a: (string | number)[]) => string)(...combo.map((c) => c.value));
      const args = combo.map((c) => ({ ...c, value: String(c.value) }));
      if (subject.startsWith('_INBOX.')) {
        // An inbox prefix: what lies under it.
        const base = tokenize(subject, federation, args);
        add(`${subject}.${FREE}`, [...base, { kind: 'free', text: FREE }], 'inbox', ['publish']);
        add(`${subject}.>`, [...base, { kind: 'text', text: '>' }], 'inbox', subscribeOnly);
        continue;
      }
      add(
        subject,
        tokenize(subject, federation, args),
        'federation',
        hasWildcard(subject) ? subscribeOnly : both,
      );
    }
  }

  // The JetStream API of every stream, and its data subjects.
  const streams = federationStreams(s, onServer);
  for (const [operation, body] of ACCOUNT_API) {
    const subject = `$JS.API.${operation}`;
    add(subject, subject.split('.').map(textToken), 'jetstream-api', both, {
      payload: body,
      api: { operation },
    });
  }
  for (const ref of streams) {
    const stream: Token = { kind: 'stream', text: ref.name, label: ref.label };
    for (const [operation, tail, body, destructive] of STREAM_API) {
      const subject = `$JS.API.${operation}.${ref.name}${tail}`;
      const tokens: Token[] = [
        ...`$JS.API.${operation}`.split('.').map(textToken),
        stream,
        ...(tail === '' ? [] : [{ kind: 'free' as const, text: FREE }]),
      ];
      const name = tail === '' ? operation : `${operation}.…`;
      add(subject, tokens, 'jetstream-api', both, {
        payload: body,
        destructive,
        api: { operation: name, stream: ref.label },
      });
    }
    add(
      `$JS.ACK.${ref.name}.>`,
      [textToken('$JS'), textToken('ACK'), stream, textToken('>')],
      'jetstream-data',
      subscribeOnly,
    );
    if (ref.kind === 'kv' || ref.kind === 'object') {
      const bucket: Token = { kind: 'stream', text: ref.bucket!, label: ref.label };
      const root = ref.kind === 'kv' ? '$KV' : '$O';
      add(
        `${root}.${ref.bucket}.>`,
        [textToken(root), bucket, textToken('>')],
        'jetstream-data',
        subscribeOnly,
      );
      const kinds = ref.kind === 'kv' ? [[]] : [['C'], ['M']];
      for (const k of kinds) {
        const subject = [root, ref.bucket!, ...k, FREE].join('.');
        add(
          subject,
          [textToken(root), bucket, ...k.map(textToken), { kind: 'free', text: FREE }],
          'jetstream-data',
          ['publish'],
        );
      }
    }
  }
  for (const subject of ACCOUNT_WILDCARDS) {
    add(subject, subject.split('.').map(textToken), 'account', subscribeOnly);
  }
  const seen = new Set<string>();
  for (const p of probes) {
    const key = `${p.op} ${p.subject}`;
    expect(seen.has(key), `probe ${key} generated twice`).toBe(false);
    seen.add(key);
  }
  return { federation, members, streams, probes };
}

function textToken(text: string): Token {
  return { kind: 'text', text };
}

/** A member's role as a placeholder (`<site>`), or `<self>`. */
function memberPlaceholder(id: string, self: string, members: ReadonlyMap<string, Role>): string {
  return id === self ? '<self>' : `<${members.get(id)}>`;
}

/**
 * How the matrix shows `probe` to `self`: members as `<self>` or their role, streams by label,
 * chosen tokens as `…`, the federation as `<F>`; subjects under `cohort.<F>.` without that prefix.
 */
export function display(probe: Probe, self: string, members: ReadonlyMap<string, Role>): string {
  return probe.tokens
    .flatMap((t) => {
      switch (t.kind) {
        case 'prefix':
          return [];
        case 'federation':
          return ['<F>'];
        case 'member':
          return [memberPlaceholder(t.text, self, members)];
        case 'param':
          return [`<${t.name}>`];
        case 'stream':
          return [`<${t.label}>`];
        case 'free':
          return ['…'];
        default:
          return [t.text];
      }
    })
    .join('.');
}

/** A member's NATS connection, with the permission violations the server reports to it. */
export class ProbeConnection {
  readonly id: string;
  readonly nc: NatsConnection;
  readonly #violations: PermissionViolationError[] = [];

  constructor(id: string, nc: NatsConnection) {
    this.id = id;
    this.nc = nc;
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'error' && s.error instanceof PermissionViolationError) this.#violations.push(s.error);
      }
    })();
  }

  /** Waits until the server answered everything sent so far, then returns the violations it reported meanwhile. */
  async settle(): Promise<PermissionViolationError[]> {
    await this.nc.flush();
    // The -ERR lines come before the PONG; the client hands them to the status iterator.
    await sleep(50);
    return this.#violations.splice(0);
  }

  /** Publishes each probe; the subjects the server refused. */
  async publish(probes: readonly Probe[]): Promise<Set<string>> {
    await this.settle();
    for (const p of probes) {
      const h = natsHeaders();
      h.set('Nats-Expected-Stream', FREE);
      this.nc.publish(p.subject, p.payload, { headers: h });
    }
    const denied = new Set<string>();
    for (const v of await this.settle()) {
      if (v.operation === 'publish') denied.add(v.subject);
    }
    return denied;
  }

  /** Subscribes to each probe's subject (a batch at a time, then unsubscribes); the subjects refused. */
  async subscribe(probes: readonly Probe[], batch = 40): Promise<Set<string>> {
    const denied = new Set<string>();
    await this.settle();
    for (let i = 0; i < probes.length; i += batch) {
      const subs = probes
        .slice(i, i + batch)
        .map((p) => this.nc.subscribe(p.subject, { callback: () => {} }));
      for (const v of await this.settle()) {
        if (v.operation === 'subscription') denied.add(v.subject);
      }
      for (const sub of subs) if (!sub.isClosed()) sub.unsubscribe();
      await this.nc.flush();
    }
    return denied;
  }
}

/** What one member's user may do: each probe, allowed or not. */
export type Observed = Map<Probe, boolean>;

/** Tries `probes` with `conn` (publishes and subscriptions); whether each was allowed. */
export async function observe(conn: ProbeConnection, probes: readonly Probe[]): Promise<Observed> {
  const out: Observed = new Map();
  const pubs = probes.filter((p) => p.op === 'publish');
  const subs = probes.filter((p) => p.op === 'subscribe');
  const deniedPub = await conn.publish(pubs);
  const deniedSub = await conn.subscribe(subs);
  for (const p of pubs) out.set(p, !deniedPub.has(p.subject));
  for (const p of subs) out.set(p, !deniedSub.has(p.subject));
  // Every refusal the server reported names a subject that was tried.
  for (const subject of deniedPub)
    expect(
      pubs.some((p) => p.subject === subject),
      subject,
    ).toBe(true);
  for (const subject of deniedSub)
    expect(
      subs.some((p) => p.subject === subject),
      subject,
    ).toBe(true);
  return out;
}

/** A role's matrix: for each operation and subject as displayed, allowed or not (the same for every member of the role). */
export interface RoleMatrix {
  readonly role: Role;
  readonly members: readonly string[];
  /** `publish <display>` / `subscribe <display>` → allowed. */
  readonly cells: ReadonlyMap<string, boolean>;
  /** Probes and how many were allowed, per member (the same for each). */
  readonly counts: { readonly publish: [number, number]; readonly subscribe: [number, number] };
  /** The JetStream API operations allowed, by operation: the stream labels (`''` account-wide). */
  readonly api: ReadonlyMap<string, readonly string[]>;
}

/**
 * Folds each member's observations into its role's matrix, and checks that every member of a role
 * got the same answer for each displayed operation (else the role's rights would depend on which
 * other member a subject names).
 */
export function roleMatrices(
  universe: Universe,
  observed: ReadonlyMap<string, Observed>,
): Map<Role, RoleMatrix> {
  const out = new Map<Role, RoleMatrix>();
  for (const role of ['site', 'aggregator', 'coordinator', 'auditor'] as const) {
    const ids = [...universe.members].filter(([, r]) => r === role).map(([id]) => id);
    if (ids.length === 0) continue;
    const cells = new Map<string, boolean>();
    let counts: RoleMatrix['counts'] | undefined;
    const api = new Map<string, Set<string>>();
    for (const id of ids) {
      const o = observed.get(id);
      expect(o, `no observations for ${id}`).toBeDefined();
      const c = { publish: [0, 0] as [number, number], subscribe: [0, 0] as [number, number] };
      for (const [probe, allowed] of o!) {
        const key = `${probe.op} ${display(probe, id, universe.members)}`;
        const before = cells.get(key);
        expect(
          before === undefined || before === allowed,
          `${role}s disagree on ${key} (${id}: ${allowed ? 'allowed' : 'denied'} on ${probe.subject})`,
        ).toBe(true);
        cells.set(key, allowed);
        c[probe.op][1]++;
        if (allowed) c[probe.op][0]++;
        if (allowed && probe.op === 'publish' && probe.api !== undefined) {
          const set = api.get(probe.api.operation) ?? new Set<string>();
          set.add(probe.api.stream ?? '');
          api.set(probe.api.operation, set);
        }
      }
      if (counts !== undefined) expect(c, `${id} counts differ from the other ${role}s'`).toEqual(counts);
      counts = c;
    }
    out.set(role, {
      role,
      members: ids,
      cells,
      counts: counts!,
      api: new Map([...api].map(([k, v]) => [k, [...v]])),
    });
  }
  return out;
}

const isVariable = (token: string) =>
  token === '*' || /^<(self|site|aggregator|coordinator|auditor)>$/.test(token);

/** Whether template `t` (which may hold `*` for any member) covers `p` (a probed template). */
function covers(t: readonly string[], p: readonly string[]): boolean {
  return t.length === p.length && t.every((x, i) => x === p[i] || (x === '*' && isVariable(p[i]!)));
}

/**
 * The allowed templates as few patterns: wherever every member placeholder probed in one place is
 * allowed (the rest of the subject equal), that place becomes `*`.
 */
export function collapse(allowed: Iterable<string>, probed: Iterable<string>): string[] {
  const universe = [...probed].map((p) => p.split('.'));
  let current = [...allowed].map((a) => a.split('.'));
  for (let changed = true; changed; ) {
    changed = false;
    search: for (const t of current) {
      for (let i = 0; i < t.length; i++) {
        if (!isVariable(t[i]!) || t[i] === '*') continue;
        const merged = t.map((x, j) => (j === i ? '*' : x));
        const siblings = universe.filter((p) => covers(merged, p));
        if (siblings.length < 2) continue;
        if (!siblings.every((p) => current.some((c) => covers(c, p)))) continue;
        current = [...current.filter((c) => !covers(merged, c)), merged];
        changed = true;
        break search;
      }
    }
  }
  return current.map((t) => t.join('.')).sort();
}

import { InvalidArgumentError } from '../errors/index.ts';
import { hasControlCharacter } from './subject-check.ts';

/** The TLS files of a nats-server (paths as the server will read them). */
export interface NatsServerTlsFiles {
  /** The server's certificate (PEM; SANs must name the hosts clients dial). */
  readonly cert: string;
  /** The server's private key (PEM). */
  readonly key: string;
  /** The federation CA that client certificates must chain to. */
  readonly ca: string;
}

/** What {@link renderServerConfig} writes. */
export interface NatsServerConfigSpec {
  /** `host:port` to listen on; default `0.0.0.0:4222`. */
  readonly listen?: string;
  /** `server_name` (needed by JetStream clusters); omitted when absent. */
  readonly serverName?: string;
  readonly tls: NatsServerTlsFiles;
  /** JetStream store directory; JetStream is off when absent. */
  readonly jetStreamStoreDir?: string;
  /** The `authorization` block (from `federationAuthorization` / `renderAuthorization`). */
  readonly authorization: string;
  /**
   * Largest message, bytes; nats-server's default (1 MiB) when absent. Given with `limits`, it
   * replaces `limits.maxPayload` (an operator's explicit choice).
   */
  readonly maxPayload?: number;
  /** Server-wide limits ({@link federationServerLimits}); nats-server's defaults when absent. */
  readonly limits?: NatsServerLimits;
}

/**
 * What nats-server 2.9.10 limits from a configuration file, measured (test/transport/server-limits.test.ts).
 * All of these are server-wide: a config-file user (`authorization { users }`) takes only `nkey`,
 * `user`, `password`, `permissions` and `allowed_connection_types` (any other field is refused as
 * unknown), so no connection, subscription or payload limit can be set per user. Per-account
 * `limits { max_connections, max_subscriptions, max_payload, max_leafnodes }` exist, but an account
 * is a separate subject space (every subject shared between members, and JetStream, would have to
 * be exported and imported across accounts), so a federation's members share one account and
 * these server-wide settings bound them all.
 */
export interface NatsServerLimits {
  /** `max_connections`: client connections to the server, all users together; one more is refused (`maximum connections exceeded`). */
  readonly maxConnections: number;
  /** `max_subscriptions`: subscriptions of one connection; one more is refused (`maximum subscriptions exceeded`), the connection stays. */
  readonly maxSubscriptions: number;
  /** `max_payload`: bytes of one message (headers included); a larger one closes the connection (`Maximum Payload Violation`). */
  readonly maxPayload: number;
  /** `max_pending`: bytes the server buffers for one connection's outbound messages before closing it as a slow consumer. */
  readonly maxPending: number;
  /** `max_control_line`: bytes of one protocol line (subject, reply, sizes); a longer one closes the connection. */
  readonly maxControlLine: number;
}

/** What the server-wide limits of a federation are sized from. */
export interface FederationLimitsSpec {
  /** NATS users of the federation (its members, and an operator's admin user if any); ≥ 1. */
  readonly users: number;
  /**
   * The largest single NATS message the protocol sends unchunked, bytes: a contribution (one block
   * frame and its JetStream headers). Chunked messages are cut at `max_payload`, so they fit.
   */
  readonly largestMessageBytes: number;
  /** Connections each user may need at once (its service, an operator's command, a restart's overlap); default 4. */
  readonly connectionsPerUser?: number;
}

/** The sizes {@link federationServerLimits} uses beyond its spec. */
export const SERVER_LIMIT_DEFAULTS = Object.freeze({
  connectionsPerUser: 4,
  /** Connections on top of the users' (tools, monitoring, an operator's session). */
  spareConnections: 16,
  /**
   * Subscriptions of one connection: measured over a federation's rounds, the coordinator holds 9
   * (its seven intake subjects and two inboxes), an aggregator or a site 6, each on one connection;
   * 64 leaves room for what a tool or a later version adds.
   */
  maxSubscriptions: 64,
  /** nats-server's own default `max_payload` (1 MiB), kept when the protocol needs less. */
  minPayload: 1024 * 1024,
  /** Bytes one connection may have pending outbound: nats-server's default (64 MiB), at least 8 messages. */
  minPending: 64 * 1024 * 1024,
  /** Protocol line: Cohort's subjects and inbox replies are well under 512 bytes. */
  maxControlLine: 1024,
});

const MAX_PAYLOAD_LIMIT = 64 * 1024 * 1024;

function assertLimit(name: string, value: unknown, min: number, max: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be an integer in [${min}, ${max}], got ${String(value)}`, {
      details: { name },
    });
  }
}

/**
 * The server-wide limits of a federation's nats-server (see {@link NatsServerLimits} for why they
 * are server-wide): `connectionsPerUser` connections per user plus
 * {@link SERVER_LIMIT_DEFAULTS}`.spareConnections`; 64 subscriptions per connection; `max_payload`
 * the largest unchunked message rounded up to KiB, at least nats-server's 1 MiB; `max_pending`
 * eight such messages, at least 64 MiB; a 1 KiB protocol line.
 *
 * @throws InvalidArgumentError when `users` is not an integer in [1, 100000], or
 *   `largestMessageBytes` not one in [1, 64 MiB].
 */
export function federationServerLimits(spec: FederationLimitsSpec): NatsServerLimits {
  if (typeof spec !== 'object' || spec === null) {
    throw new InvalidArgumentError('spec must be an object', { details: { name: 'spec' } });
  }
  const d = SERVER_LIMIT_DEFAULTS;
  assertLimit('users', spec.users, 1, 100_000);
  assertLimit('largestMessageBytes', spec.largestMessageBytes, 1, MAX_PAYLOAD_LIMIT);
  const perUser = spec.connectionsPerUser ?? d.connectionsPerUser;
  assertLimit('connectionsPerUser', perUser, 1, 1000);
  const maxPayload = Math.max(d.minPayload, Math.ceil(spec.largestMessageBytes / 1024) * 1024);
  return {
    maxConnections: spec.users * perUser + d.spareConnections,
    maxSubscriptions: d.maxSubscriptions,
    maxPayload: Math.min(maxPayload, MAX_PAYLOAD_LIMIT),
    maxPending: Math.max(d.minPending, 8 * maxPayload),
    maxControlLine: d.maxControlLine,
  };
}

/** Throws `INVALID_ARGUMENT` naming the field unless `limits` is a well-formed {@link NatsServerLimits}. */
export function assertServerLimits(limits: NatsServerLimits): void {
  if (typeof limits !== 'object' || limits === null) {
    throw new InvalidArgumentError('limits must be an object', { details: { name: 'limits' } });
  }
  assertLimit('limits.maxConnections', limits.maxConnections, 1, 10_000_000);
  assertLimit('limits.maxSubscriptions', limits.maxSubscriptions, 1, 10_000_000);
  assertLimit('limits.maxPayload', limits.maxPayload, 1024, MAX_PAYLOAD_LIMIT);
  assertLimit('limits.maxPending', limits.maxPending, limits.maxPayload, 2 ** 40);
  assertLimit('limits.maxControlLine', limits.maxControlLine, 256, 1024 * 1024);
}

/**
 * The nats-server configuration lines of `limits` (`max_connections`, `max_subscriptions`,
 * `max_payload`, `max_pending`, `max_control_line`), one per line: top-level settings, to append
 * to a configuration that sets none of them.
 */
export function renderServerLimits(limits: NatsServerLimits): string {
  assertServerLimits(limits);
  return [
    '# Server-wide limits (nats-server has no per-user limits in a configuration file).',
    `max_connections: ${limits.maxConnections}`,
    `max_subscriptions: ${limits.maxSubscriptions}`,
    `max_payload: ${limits.maxPayload}`,
    `max_pending: ${limits.maxPending}`,
    `max_control_line: ${limits.maxControlLine}`,
    '',
  ].join('\n');
}

/** A conf-file double-quoted string: backslash and quote escaped, nothing expanded. */
function quote(name: string, text: string): string {
  if (typeof text !== 'string' || text.length === 0 || text.length > 4096 || hasControlCharacter(text)) {
    throw new InvalidArgumentError(`${name} must be a non-empty string without control characters`, {
      details: { name },
    });
  }
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * A nats-server `tls { … }` block that requires TLS of every client connection and a client
 * certificate signed by `ca` (`verify: true`): a plaintext client, or one without a certificate
 * of the federation, is refused before it can authenticate.
 */
export function renderTlsBlock(tls: NatsServerTlsFiles): string {
  return [
    'tls {',
    `  cert_file: ${quote('tls.cert', tls.cert)}`,
    `  key_file: ${quote('tls.key', tls.key)}`,
    `  ca_file: ${quote('tls.ca', tls.ca)}`,
    '  verify: true',
    '  timeout: 2',
    '}',
    '',
  ].join('\n');
}

/**
 * A whole nats-server configuration for one federation: listen address, the server-wide limits
 * ({@link renderServerLimits}) when given, mutual TLS ({@link renderTlsBlock}), JetStream, and the
 * NKEY users with their permissions.
 */
export function renderServerConfig(spec: NatsServerConfigSpec): string {
  const listen = spec.listen ?? '0.0.0.0:4222';
  if (!/^[A-Za-z0-9.:[\]-]{1,255}:\d{1,5}$/.test(listen)) {
    throw new InvalidArgumentError(`listen must be host:port, got ${JSON.stringify(listen)}`, {
      details: { name: 'listen' },
    });
  }
  if (
    spec.maxPayload !== undefined &&
    (!Number.isInteger(spec.maxPayload) || spec.maxPayload < 1024 || spec.maxPayload > MAX_PAYLOAD_LIMIT)
  ) {
    throw new InvalidArgumentError('maxPayload must be an integer in [1024, 64 MiB]', {
      details: { name: 'maxPayload' },
    });
  }
  let limits: string[] = spec.maxPayload === undefined ? [] : [`max_payload: ${spec.maxPayload}`];
  if (spec.limits !== undefined) {
    const payload = spec.maxPayload ?? spec.limits.maxPayload;
    limits = [
      renderServerLimits({
        ...spec.limits,
        maxPayload: payload,
        maxPending: Math.max(spec.limits.maxPending, payload),
      }),
    ];
  }
  return [
    '# nats-server configuration of a Cohort federation (written by `cohort nats config`).',
    `listen: ${quote('listen', listen)}`,
    ...(spec.serverName === undefined ? [] : [`server_name: ${quote('serverName', spec.serverName)}`]),
    ...limits,
    renderTlsBlock(spec.tls),
    ...(spec.jetStreamStoreDir === undefined
      ? []
      : [`jetstream { store_dir: ${quote('jetStreamStoreDir', spec.jetStreamStoreDir)} }`, '']),
    spec.authorization,
  ].join('\n');
}

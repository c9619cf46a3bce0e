import { connect, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { assertServerUrls, type NatsTlsFiles, natsAuthOptions } from './connect-options.ts';
import { NatsTransport } from './nats-transport.ts';
import type { ReplyPolicy } from './reply-policy.ts';
import { assertSubject } from './subject-check.ts';
import { errorMessage, TransportError } from './transport-error.ts';
import { assertReceiveLimits, TRANSPORT_DEFAULTS } from './transport-limits.ts';

/** Options of {@link connectTransport}. */
export interface NatsTransportOptions {
  /** Server URLs (`nats://host:port`), tried in order. */
  readonly servers: readonly string[];
  /** Connection name shown by the server (e.g. `site-a`). */
  readonly name: string;
  /**
   * Reply-inbox prefix (see `FederationSubjects.inboxPrefix`); default `_INBOX`. Replies go to
   * `<inboxPrefix>.<random base>.<random token>`.
   */
  readonly inboxPrefix?: string;
  /** Path of a NATS `.creds` file (JWT + nkey seed; owner-only). */
  readonly credentials?: string;
  /** Path of this member's NKEY user seed (`<id>.nk`, owner-only); see `natsAuthOptions`. */
  readonly nkeySeedFile?: string;
  /** Mutual TLS files; with them every server URL must be `tls://`, without them none may be. */
  readonly tls?: NatsTlsFiles;
  /** Retries of a request after its first attempt; default 5 (config `nats.maxRetry`). */
  readonly maxRetry?: number;
  /** Reply wait per request attempt and publish confirmation wait, ms; default 3000 (`nats.timeoutMs`). */
  readonly timeoutMs?: number;
  /** An incomplete chunked message is dropped this long after its first chunk; default 30000 ms. */
  readonly reassemblyTimeoutMs?: number;
  /**
   * Largest whole message accepted from the wire (declared `Cohort-Length`), per subscription and
   * on the reply inbox unless a subscription sets its own; default 64 MiB + 12 bytes (one wire
   * frame). A larger message is dropped (`OVERSIZE`) on its first chunk.
   */
  readonly maxMessageBytes?: number;
  /** Incomplete messages buffered per subscription; default 64. */
  readonly maxPendingMessages?: number;
  /** Bytes buffered for incomplete messages per subscription (plus 128 per chunk); default 128 MiB. */
  readonly maxPendingBytes?: number;
  /** Messages (with replies) remembered per subscription for de-duplication; default 4096. */
  readonly seenCacheSize?: number;
  /** Errors that reach no caller: permission violations, connection errors, subscription errors. */
  readonly onError?: (err: TransportError) => void;
  /**
   * Where requests received by this transport's subscriptions may be answered (the requester's
   * own inbox; see {@link ReplyPolicy}). Default {@link ANY_INBOX}: any subject under `_INBOX.`.
   * A request with any other reply subject is dropped as `REPLY_REFUSED`, unhandled.
   */
  readonly replyPolicy?: ReplyPolicy;
}

/**
 * Connects to NATS and returns a {@link NatsTransport}. Throws `TRANSPORT_CONNECT` when no
 * server accepts the connection (unreachable, or credentials refused).
 */
export async function connectTransport(options: NatsTransportOptions): Promise<NatsTransport> {
  assertServerUrls(options.servers, options.tls !== undefined);
  if (typeof options.name !== 'string' || options.name.length === 0) {
    throw new InvalidArgumentError('name must be a non-empty string', { details: { name: 'name' } });
  }
  const inboxPrefix = options.inboxPrefix ?? '_INBOX';
  assertSubject('inboxPrefix', inboxPrefix, false);
  if (options.maxRetry !== undefined) assertInteger('maxRetry', options.maxRetry, 0, 100);
  if (options.timeoutMs !== undefined) assertInteger('timeoutMs', options.timeoutMs, 1, 600_000);
  assertReceiveLimits('', options);
  if (options.replyPolicy !== undefined && typeof options.replyPolicy !== 'function') {
    throw new InvalidArgumentError('replyPolicy must be a function', { details: { name: 'replyPolicy' } });
  }
  const opts: NodeConnectionOptions = {
    servers: [...options.servers],
    name: options.name,
    inboxPrefix,
    timeout: options.timeoutMs ?? TRANSPORT_DEFAULTS.timeoutMs,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  };
  const { tls, nkeySeedFile, credentials } = options;
  Object.assign(opts, natsAuthOptions({ tls, nkeySeedFile, credentials }));
  let nc: NatsConnection;
  try {
    nc = await connect(opts);
  } catch (err) {
    throw new TransportError(
      'TRANSPORT_CONNECT',
      `cannot connect to ${options.servers.join(', ')} as ${options.name}: ${errorMessage(err)}`,
      { cause: err, details: { servers: [...options.servers], name: options.name } },
    );
  }
  return new NatsTransport(nc, options, inboxPrefix);
}

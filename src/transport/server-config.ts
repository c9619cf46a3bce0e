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
  /** Largest message, bytes; nats-server's default (1 MiB) when absent. */
  readonly maxPayload?: number;
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
 * A whole nats-server configuration for one federation: listen address, mutual TLS
 * ({@link renderTlsBlock}), JetStream, and the NKEY users with their permissions.
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
    (!Number.isInteger(spec.maxPayload) || spec.maxPayload < 1024 || spec.maxPayload > 64 * 1024 * 1024)
  ) {
    throw new InvalidArgumentError('maxPayload must be an integer in [1024, 64 MiB]', {
      details: { name: 'maxPayload' },
    });
  }
  return [
    '# nats-server configuration of a Cohort federation (written by `cohort nats config`).',
    `listen: ${quote('listen', listen)}`,
    ...(spec.serverName === undefined ? [] : [`server_name: ${quote('serverName', spec.serverName)}`]),
    ...(spec.maxPayload === undefined ? [] : [`max_payload: ${spec.maxPayload}`]),
    renderTlsBlock(spec.tls),
    ...(spec.jetStreamStoreDir === undefined
      ? []
      : [`jetstream { store_dir: ${quote('jetStreamStoreDir', spec.jetStreamStoreDir)} }`, '']),
    spec.authorization,
  ].join('\n');
}

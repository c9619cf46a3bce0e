import { fromSeed } from '@nats-io/nkeys';
import { credsAuthenticator, type NodeConnectionOptions, nkeyAuthenticator } from '@nats-io/transport-node';
// The signature module's key file reader: it refuses a secret file that group or others can read.
import { readKeyFile } from '../../crypto/signature/key-file-io.ts';
import { InvalidArgumentError } from '../errors/index.ts';

/** PEM files of a mutual-TLS connection (paths). */
export interface NatsTlsFiles {
  /** CA certificate(s) that the server's certificate must chain to; default: the system's CAs. */
  readonly ca?: string;
  /** This member's client certificate (with `key`). */
  readonly cert?: string;
  /** This member's client private key (with `cert`): refused unless owner-only (0600). */
  readonly key?: string;
}

/** How a client authenticates to nats-server: every field a path; secrets are mode-checked. */
export interface NatsAuthFiles {
  /** TLS: the client then requires TLS of every server. */
  readonly tls?: NatsTlsFiles;
  /** NKEY user seed (`SU…`, as `cohort nats keys` writes `<id>.nk`). */
  readonly nkeySeedFile?: string;
  /** NATS `.creds` file (user JWT + NKEY seed), for operator/JWT deployments. */
  readonly credentials?: string;
}

/** The connection fields that {@link natsAuthOptions} fills. */
export type NatsAuthOptions = Pick<NodeConnectionOptions, 'tls' | 'authenticator'>;

const URL_RE = /^(nats|tls|ws|wss):\/\/\S+$/;

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

function assertPath(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(`${name} must be a non-empty path`, { details: { name } });
  }
}

/**
 * Checks the server URLs against the TLS choice: every URL must be a NATS URL; with TLS every URL
 * must be `tls://`, and a `tls://` URL without TLS options is refused (the client would otherwise
 * fall back to a plaintext connection to a server that offers no TLS).
 *
 * @throws InvalidArgumentError naming the offending `servers[i]`.
 */
export function assertServerUrls(servers: readonly string[], tls: boolean): void {
  if (!Array.isArray(servers) || servers.length === 0) {
    throw new InvalidArgumentError('servers must be a non-empty array of NATS URLs', {
      details: { name: 'servers' },
    });
  }
  for (const [i, s] of servers.entries()) {
    if (typeof s !== 'string' || !URL_RE.test(s)) {
      throw new InvalidArgumentError(`servers[${i}] must be a NATS URL, got ${JSON.stringify(String(s))}`, {
        details: { name: `servers[${i}]` },
      });
    }
    if (tls && !s.startsWith('tls://')) {
      throw new InvalidArgumentError(
        `servers[${i}] must be a tls:// URL when TLS files are given, got ${s}`,
        {
          details: { name: `servers[${i}]` },
        },
      );
    }
    if (!tls && s.startsWith('tls://')) {
      throw new InvalidArgumentError(
        `servers[${i}] is ${s} but no TLS files are given (tls.ca, tls.cert, tls.key): refusing to connect in plaintext`,
        { details: { name: `servers[${i}]` } },
      );
    }
  }
}

/**
 * Reads `path` as a secret through the secret-file check (`readKeyFile`): refused, naming the path
 * and what is wrong, when group or others may access it (`KEY_FILE_PERMISSIONS`), when another
 * user than this process's (or root) owns it (`KEY_FILE_OWNER`), or when its folder is writable by
 * group or others or owned by another user (`KEY_FOLDER_PERMISSIONS`).
 */
function readSecret(path: string): Uint8Array {
  return readKeyFile(path, true);
}

/**
 * Builds the TLS and authenticator options of a NATS connection from files. The NKEY seed, the
 * TLS private key and the creds file are read through the secret-file check: a file that group or
 * others may read (`KEY_FILE_PERMISSIONS`), that another user owns (`KEY_FILE_OWNER`) or whose
 * folder others may write (`KEY_FOLDER_PERMISSIONS`) is refused, naming the path. With `tls`,
 * the client requires TLS of the server (nats.js refuses a server that does not offer it) and
 * verifies its certificate against `tls.ca`.
 *
 * @throws InvalidArgumentError for inconsistent options or a malformed seed; CryptoError
 *   `KEY_FILE_UNREADABLE`, `KEY_FILE_PERMISSIONS`, `KEY_FILE_OWNER` or `KEY_FOLDER_PERMISSIONS`
 *   for a file.
 */
export function natsAuthOptions(files: NatsAuthFiles): NatsAuthOptions {
  const out: { -readonly [K in keyof NatsAuthOptions]: NatsAuthOptions[K] } = {};
  if (files.nkeySeedFile !== undefined && files.credentials !== undefined) {
    throw new InvalidArgumentError('give an NKEY seed file or a credentials file, not both', {
      details: { name: 'nkeySeedFile' },
    });
  }
  if (files.tls !== undefined) {
    const { ca, cert, key } = files.tls;
    if ((cert === undefined) !== (key === undefined)) {
      throw new InvalidArgumentError('tls.cert and tls.key must be given together', {
        details: { name: 'tls.cert' },
      });
    }
    const tls: { ca?: string; cert?: string; key?: string } = {};
    if (ca !== undefined) {
      assertPath('tls.ca', ca);
      tls.ca = text(readKeyFile(ca, false));
    }
    if (cert !== undefined && key !== undefined) {
      assertPath('tls.cert', cert);
      assertPath('tls.key', key);
      tls.cert = text(readKeyFile(cert, false));
      const keyBytes = readSecret(key);
      tls.key = text(keyBytes);
      keyBytes.fill(0);
    }
    out.tls = tls;
  }
  if (files.nkeySeedFile !== undefined) {
    const path = files.nkeySeedFile;
    assertPath('nkeySeedFile', path);
    const bytes = readSecret(path);
    // The seed file holds the seed text, possibly with a trailing newline.
    let end = bytes.length;
    while (end > 0 && (bytes[end - 1] === 0x0a || bytes[end - 1] === 0x0d || bytes[end - 1] === 0x20)) end--;
    const seed = bytes.slice(0, end);
    bytes.fill(0);
    try {
      if (seed[0] !== 0x53 || seed[1] !== 0x55) throw new Error('not a user seed (SU…)');
      fromSeed(seed).getPublicKey();
    } catch (cause) {
      seed.fill(0);
      throw new InvalidArgumentError(`${path} does not hold an NKEY user seed`, {
        cause,
        details: { name: 'nkeySeedFile', path },
      });
    }
    out.authenticator = nkeyAuthenticator(seed);
  }
  if (files.credentials !== undefined) {
    assertPath('credentials', files.credentials);
    out.authenticator = credsAuthenticator(readSecret(files.credentials));
  }
  return out;
}

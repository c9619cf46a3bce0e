import { readFileSync } from 'node:fs';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { type CohortConfig, plaintextAdminProblem } from '../config/index.ts';
import { ConfigError } from '../errors/index.ts';
import type { AdminDeps } from './admin-deps.ts';
import type { AdminAuditLimits } from './audit-limits.ts';
import { buildAdminApi } from './build-admin-api.ts';

/** A listening admin API. */
export interface ServedAdminApi {
  readonly app: FastifyInstance;
  /** `http(s)://host:port` it listens on (the bound port when `admin.port` is 0). */
  readonly url: string;
  close(): Promise<void>;
}

function readPem(path: string, field: string): Buffer {
  try {
    return readFileSync(path);
  } catch (cause) {
    throw new ConfigError(
      'CONFIG_UNREADABLE',
      `admin.tls.${field}: cannot read ${path}: ${(cause as Error).message}`,
      {
        cause,
        details: { path: `admin.tls.${field}` },
      },
    );
  }
}

/**
 * The `admin` section as this function reads it: the configuration's, and its `audit` bounds
 * (`AdminAuditLimits`; defaults when absent, e.g. while the configuration schema has no such field).
 */
export type AdminSection = NonNullable<CohortConfig['admin']> & {
  readonly audit?: Partial<AdminAuditLimits>;
};

/**
 * Builds the API from the configuration's `admin` section (tokens, rate limits, audit bounds, TLS
 * files, metrics scope) over `deps` and listens on `admin.host:admin.port`. Plain HTTP (no `admin.tls`)
 * listens only on a loopback host, unless `admin.insecurePlaintextOnNetwork` says otherwise (then
 * `logger` warns at start): the configuration refuses it already, and so does this function for a
 * section built by hand.
 *
 * @throws ConfigError `CONFIG_INVALID` naming `admin.tls` for plain HTTP on a non-loopback host;
 *   `CONFIG_UNREADABLE` naming `admin.tls.cert` or `admin.tls.key` for a file it cannot read.
 */
export async function serveAdminApi(
  admin: AdminSection,
  deps: AdminDeps,
  logger?: FastifyBaseLogger,
): Promise<ServedAdminApi> {
  const clear = plaintextAdminProblem(admin);
  if (clear !== null) {
    throw new ConfigError('CONFIG_INVALID', `admin.tls: ${clear}`, { details: { path: 'admin.tls' } });
  }
  if (admin.tls === undefined && admin.insecurePlaintextOnNetwork === true) {
    logger?.warn(
      { host: admin.host, field: 'admin.insecurePlaintextOnNetwork' },
      'admin API in plain HTTP on a network address: bearer tokens and answers cross the network in clear',
    );
  }
  const tls =
    admin.tls === undefined
      ? undefined
      : { cert: readPem(admin.tls.cert, 'cert'), key: readPem(admin.tls.key, 'key') };
  const app = buildAdminApi(deps, {
    tokens: admin.tokens,
    rateLimit: admin.rateLimit,
    ...(admin.audit === undefined ? {} : { audit: admin.audit }),
    metricsPublic: admin.metricsPublic,
    ...(tls === undefined ? {} : { tls }),
    ...(logger === undefined ? {} : { logger }),
  });
  try {
    await app.listen({ host: admin.host, port: admin.port });
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : admin.port;
  const host = admin.host.includes(':') ? `[${admin.host}]` : admin.host;
  return { app, url: `${tls === undefined ? 'http' : 'https'}://${host}:${port}`, close: () => app.close() };
}

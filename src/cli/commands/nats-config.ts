import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { getCkksContext } from '../../../crypto/ckks/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { ConfigError, InvalidArgumentError } from '../../errors/index.ts';
import { RegistryView } from '../../registry/index.ts';
import {
  federationAuthorizationSpec,
  federationTlsPaths,
  loadPinnedRegistry,
  openMember,
  roleOf,
} from '../../services/index.ts';
import { readLoggedRegistry } from '../../services/logged-registry.ts';
import { federationLimitsFor } from '../../services/nats-limits.ts';
import { federationUsers, renderAuthorization, renderServerConfig } from '../../transport/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

interface NatsConfigFlags extends ConfigFlags {
  config: string;
  out?: string;
  keysDir?: string;
  tlsDir: string;
  listen: string;
  storeDir: string;
  maxPayload?: string;
  as?: string;
}

/**
 * The registry the users are made from: with `as`, the pinned registry and the log's registry
 * changes, read as member `as` (its keys and NATS user); without, the pinned registry alone.
 */
async function registryOf(
  config: CohortConfig,
  as: string | undefined,
  keysDir?: string,
): Promise<RegistryView> {
  if (as === undefined) {
    const signed = loadPinnedRegistry(config);
    if (signed === undefined) {
      throw new ConfigError(
        'CONFIG_INVALID',
        'members.registry: the NATS users are made from the pinned registry',
        {
          details: { path: 'members.registry' },
        },
      );
    }
    return RegistryView.fromRegistry(signed.registry);
  }
  if (roleOf(config, as) === 'aggregator') {
    throw new InvalidArgumentError(
      `--as ${as} is an aggregator, whose NATS user may not read the federation log; use the coordinator, a site or an auditor`,
      { details: { name: 'as' } },
    );
  }
  const member = await openMember(config, as, { keysDir });
  try {
    return await readLoggedRegistry(member);
  } finally {
    await member.close();
  }
}

/**
 * `cohort nats config --config <federation.yaml> --out nats.conf [--as <member>] [--keys-dir d]
 * [--tls-dir d] [--listen host:port] [--store-dir d] [--max-payload n]`: writes the nats-server
 * configuration of the federation: an NKEY user with its role's permissions for every member the
 * signed member registry lists and the configuration names, mutual TLS required (`server.crt`,
 * `server.key.pem`, `ca.crt` of `--tls-dir`, `verify: true`), and JetStream. With `--as`, the
 * registry changes of the federation log (enrollments, NKEY rotations, revocations) are read as
 * that member and applied: a revoked member gets no user. Without `--as` (the first configuration,
 * before any log exists) the pinned registry alone. Members without a user are named on stderr.
 * No secret is written; reload a running nats-server after writing (`nats-server --signal reload`
 * or SIGHUP): it then closes the connections of users it no longer has.
 */
export function registerNatsConfigCommand(nats: Command, ctx: CliContext): void {
  addConfigOptions(
    nats
      .command('config')
      .description('write the nats-server configuration of a federation (NKEY users, permissions, mTLS)')
      .requiredOption('-c, --config <file>', 'federation YAML (members, pinned registry)')
      .option('-o, --out <file>', 'file to write (default: stdout)')
      .option(
        '--as <member>',
        "read the log's registry changes (revocations, enrollments) as this member: coordinator, site or auditor",
      )
      .option(
        '-k, --keys-dir <dir>',
        'keys folder (members <id>.nk.pub; with --as, its keys) (default: members.keysDir)',
      )
      .option('--tls-dir <dir>', 'folder of server.crt, server.key.pem and ca.crt on the server host', 'tls')
      .option('-l, --listen <host:port>', 'client listen address', '0.0.0.0:4222')
      .option('--store-dir <dir>', 'JetStream store directory', 'jetstream')
      .option('--max-payload <bytes>', 'largest message (nats-server default 1 MiB)'),
  ).action(async (flags: NatsConfigFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    const registry = await registryOf(config, flags.as, flags.keysDir);
    const { spec, without } = federationAuthorizationSpec(config, registry, flags.keysDir);
    const tls = federationTlsPaths(resolve(flags.tlsDir));
    const users = federationUsers(spec);
    const text = renderServerConfig({
      listen: flags.listen,
      tls: { cert: tls.serverCert, key: tls.serverKey, ca: tls.caCert },
      jetStreamStoreDir: resolve(flags.storeDir),
      authorization: renderAuthorization(users),
      limits: federationLimitsFor(users.length, await getCkksContext(config.crypto.ckks)),
      ...(flags.maxPayload === undefined ? {} : { maxPayload: Number(flags.maxPayload) }),
    });
    if (flags.as === undefined) {
      ctx.stderr.write(
        'nats config: users from the pinned registry alone; once the log holds registry changes (a revocation, an enrollment), run it with --as <member> and reload nats-server\n',
      );
    }
    for (const w of without) ctx.stderr.write(`nats config: no user for ${w.id}: ${w.why}\n`);
    if (flags.out === undefined) {
      ctx.stdout.write(text);
    } else {
      writeFileSync(flags.out, text, { mode: 0o644 });
      ctx.stdout.write(
        `nats-server configuration: ${flags.out}\nreload a running nats-server to apply it: nats-server --signal reload (or SIGHUP)\n`,
      );
    }
  });
}

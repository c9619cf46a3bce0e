import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { federationAuthorizationSpec, federationTlsPaths } from '../../services/index.ts';
import { federationAuthorization, renderServerConfig } from '../../transport/index.ts';
import type { CliContext } from '../cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../config-options.ts';

interface NatsConfigFlags extends ConfigFlags {
  config: string;
  out?: string;
  keysDir?: string;
  tlsDir: string;
  listen: string;
  storeDir: string;
  maxPayload?: string;
}

/**
 * `cohort nats config --config <federation.yaml> --out nats.conf [--keys-dir d] [--tls-dir d]
 * [--listen host:port] [--store-dir d] [--max-payload n]`: writes the nats-server configuration
 * of the federation: every member an NKEY user (public key from `<keysDir>/<id>.nk.pub`) with its
 * role's permissions, mutual TLS required (`server.crt`, `server.key.pem`, `ca.crt` of
 * `--tls-dir`, `verify: true`), and JetStream. No secret is read or written.
 */
export function registerNatsConfigCommand(nats: Command, ctx: CliContext): void {
  addConfigOptions(
    nats
      .command('config')
      .description('write the nats-server configuration of a federation (NKEY users, permissions, mTLS)')
      .requiredOption('-c, --config <file>', 'federation YAML (members)')
      .option('-o, --out <file>', 'file to write (default: stdout)')
      .option('-k, --keys-dir <dir>', 'folder of the members <id>.nk.pub files (default: members.keysDir)')
      .option('--tls-dir <dir>', 'folder of server.crt, server.key.pem and ca.crt on the server host', 'tls')
      .option('-l, --listen <host:port>', 'client listen address', '0.0.0.0:4222')
      .option('--store-dir <dir>', 'JetStream store directory', 'jetstream')
      .option('--max-payload <bytes>', 'largest message (nats-server default 1 MiB)'),
  ).action((flags: NatsConfigFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    const tls = federationTlsPaths(resolve(flags.tlsDir));
    const text = renderServerConfig({
      listen: flags.listen,
      tls: { cert: tls.serverCert, key: tls.serverKey, ca: tls.caCert },
      jetStreamStoreDir: resolve(flags.storeDir),
      authorization: federationAuthorization(federationAuthorizationSpec(config, flags.keysDir)),
      ...(flags.maxPayload === undefined ? {} : { maxPayload: Number(flags.maxPayload) }),
    });
    if (flags.out === undefined) {
      ctx.stdout.write(text);
    } else {
      writeFileSync(flags.out, text, { mode: 0o644 });
      ctx.stdout.write(`nats-server configuration: ${flags.out}\n`);
    }
  });
}

import type { Command } from 'commander';
import { createFederationTls, federationTlsPaths } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';

interface NatsCaFlags {
  dir: string;
  host: string[];
  days?: string;
  force?: boolean;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/**
 * `cohort nats ca --dir <dir> --host <name|ip>… [--days n] [--force]`: run once by the operator.
 * Creates the federation CA (`ca.crt`, `ca.key.pem` 0600) and nats-server's certificate for the
 * hosts clients dial (`server.crt`, `server.key.pem` 0600). `ca.crt` goes to every member.
 */
export function registerNatsCaCommand(nats: Command, ctx: CliContext): void {
  nats
    .command('ca')
    .description("create the federation's TLS CA and nats-server's certificate (keys 0600)")
    .requiredOption('-d, --dir <dir>', "folder of the operator's TLS files")
    .option('-H, --host <host>', 'a name or IP address clients dial (repeatable)', collect, [])
    .option('--days <n>', 'validity of the server certificate in days (default 825)')
    .option('-f, --force', 'overwrite existing files')
    .action((flags: NatsCaFlags) => {
      const hosts = flags.host.length > 0 ? flags.host : ['127.0.0.1', 'localhost'];
      createFederationTls(flags.dir, {
        hosts,
        ...(flags.days === undefined ? {} : { days: Number(flags.days) }),
        overwrite: flags.force === true,
      });
      const p = federationTlsPaths(flags.dir);
      ctx.stdout.write(
        `CA: ${p.caCert} (give to every member), ${p.caKey} (0600, keep offline)\n` +
          `nats-server: ${p.serverCert}, ${p.serverKey} (0600) for ${hosts.join(', ')}\n`,
      );
    });
}

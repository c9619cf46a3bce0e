import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { InvalidArgumentError } from '../../errors/index.ts';
import { issueMemberCertificate, loadCertificateAuthority } from '../../services/index.ts';
import { assertSubjectToken } from '../../transport/index.ts';
import type { CliContext } from '../context/cli-context.ts';

interface NatsCertFlags {
  caDir: string;
  member: string;
  publicKey: string;
  out: string;
  days?: string;
}

/**
 * `cohort nats cert --ca-dir <dir> --member <id> --public-key <id>.tls.pub --out <id>.tls.crt
 * [--days n]`: the operator certifies a member's TLS public key as a client of the federation.
 */
export function registerNatsCertCommand(nats: Command, ctx: CliContext): void {
  nats
    .command('cert')
    .description("issue a member's TLS client certificate from its <id>.tls.pub")
    .requiredOption('--ca-dir <dir>', 'folder holding ca.crt and ca.key.pem')
    .requiredOption('-m, --member <id>', 'member id (the certificate common name)')
    .requiredOption('-p, --public-key <file>', "the member's <id>.tls.pub")
    .requiredOption('-o, --out <file>', 'certificate to write (<id>.tls.crt)')
    .option('--days <n>', 'validity in days (default 825)')
    .action((flags: NatsCertFlags) => {
      assertSubjectToken('--member', flags.member);
      let publicKey: string;
      try {
        publicKey = readFileSync(flags.publicKey, 'utf8');
      } catch (cause) {
        throw new InvalidArgumentError(`--public-key: cannot read ${flags.publicKey}`, {
          cause,
          details: { name: 'public-key' },
        });
      }
      issueMemberCertificate(
        loadCertificateAuthority(flags.caDir),
        flags.member,
        publicKey,
        flags.out,
        flags.days === undefined ? undefined : Number(flags.days),
      );
      ctx.stdout.write(`certificate: ${flags.out} (client ${flags.member})\n`);
    });
}

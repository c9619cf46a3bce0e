import type { Command } from 'commander';
import { generateMemberNatsKeys, memberNatsPaths } from '../../services/index.ts';
import { assertSubjectToken } from '../../transport/index.ts';
import type { CliContext } from '../context/cli-context.ts';

interface NatsKeysFlags {
  member: string;
  dir: string;
  force?: boolean;
}

/**
 * `cohort nats keys --member <id> [--dir keys] [--force]`: run by each member on its own host.
 * Writes its NKEY user (`<id>.nk` seed 0600, `<id>.nk.pub`) and TLS client key (`<id>.tls.key`
 * 0600, `<id>.tls.pub`); prints the public NKEY. Only the two public files go to the operator.
 */
export function registerNatsKeysCommand(nats: Command, ctx: CliContext): void {
  nats
    .command('keys')
    .description("generate a member's NKEY user and TLS client key (secrets 0600; hand over the .pub files)")
    .requiredOption('-m, --member <id>', 'member id (as in members of the federation config)')
    .option('-d, --dir <dir>', 'keys folder (members.keysDir)', 'keys')
    .option('-f, --force', 'overwrite existing files')
    .action((flags: NatsKeysFlags) => {
      assertSubjectToken('--member', flags.member);
      const { nkey } = generateMemberNatsKeys(flags.dir, flags.member, flags.force === true);
      const p = memberNatsPaths(flags.dir, flags.member);
      ctx.stdout.write(
        `nkey: ${nkey}\nsecret: ${p.seed} (0600), ${p.tlsKey} (0600)\n` +
          `hand to the operator: ${p.nkey}, ${p.tlsPublicKey}\n` +
          `install the certificate you get back as ${p.tlsCert}, and the federation's ca.crt in ${flags.dir}\n`,
      );
    });
}

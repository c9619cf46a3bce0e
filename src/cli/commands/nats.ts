import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerNatsCaCommand } from './nats-ca.ts';
import { registerNatsCertCommand } from './nats-cert.ts';
import { registerNatsConfigCommand } from './nats-config.ts';
import { registerNatsKeysCommand } from './nats-keys.ts';

/**
 * `cohort nats …`: NATS credentials and server configuration for a deployment by hand (`keys` at
 * each member, `ca` and `cert` at the operator's CA, `config` for nats-server).
 */
export function registerNatsCommand(program: Command, ctx: CliContext): void {
  const nats = program
    .command('nats')
    .description('NATS credentials (NKEY, mutual TLS) and the nats-server configuration of a federation');
  registerNatsKeysCommand(nats, ctx);
  registerNatsCaCommand(nats, ctx);
  registerNatsCertCommand(nats, ctx);
  registerNatsConfigCommand(nats, ctx);
}

import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerRegistryChangeCommands } from './registry-change.ts';
import { registerRegistryCreateCommand } from './registry-create.ts';
import { registerRegistryShowCommand } from './registry-show.ts';

/**
 * `cohort registry …`: the signed member registry (docs/key-ceremony.md): `create` and `show` the
 * registry file the officer signs and members pin by hash; `enroll`, `rotate`, `revoke`: officer-signed
 * changes the coordinator logs.
 */
export function registerRegistryCommand(program: Command, ctx: CliContext): void {
  const registry = program
    .command('registry')
    .description('the signed member registry: create, show, and enroll / rotate / revoke members');
  registerRegistryCreateCommand(registry, ctx);
  registerRegistryShowCommand(registry, ctx);
  registerRegistryChangeCommands(registry, ctx);
}

import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerKeysDataCreateCommand } from './keys-data-create.ts';
import { registerKeysDataWrapCommand } from './keys-data-wrap.ts';

/** `cohort keys data …`: `create` and `wrap` of the federation data key (snapshot encryption). */
export function registerKeysDataCommand(keys: Command, ctx: CliContext): void {
  const data = keys
    .command('data')
    .description('the federation data key that encrypts model snapshots: create it, wrap it for a site');
  registerKeysDataCreateCommand(data, ctx);
  registerKeysDataWrapCommand(data, ctx);
}

import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerKeysCkksCreateCommand } from './keys-ckks-create.ts';
import { registerKeysCkksUnwrapCommand } from './keys-ckks-unwrap.ts';
import { registerKeysCkksWrapCommand } from './keys-ckks-wrap.ts';

/** `cohort keys ckks …`: `create`, `wrap` and `unwrap` of the federation's CKKS secret key. */
export function registerKeysCkksCommand(keys: Command, ctx: CliContext): void {
  const ckks = keys
    .command('ckks')
    .description("the federation's CKKS secret key: create it, wrap it for a site, unwrap it at the site");
  registerKeysCkksCreateCommand(ckks, ctx);
  registerKeysCkksWrapCommand(ckks, ctx);
  registerKeysCkksUnwrapCommand(ckks, ctx);
}

import type { Command } from 'commander';
import type { CliContext } from '../cli-context.ts';
import { registerKeysCkksCommand } from './keys-ckks.ts';
import { registerKeysKemCommand } from './keys-kem.ts';
import { registerKeysShowCommand } from './keys-show.ts';
import { registerKeysSigningCommand } from './keys-signing.ts';

/** `cohort keys …`: the key ceremony's tools (`signing`, `kem`, `ckks`, `show`). */
export function registerKeysCommand(program: Command, ctx: CliContext): void {
  const keys = program
    .command('keys')
    .description('key ceremony: generate signing and KEM keys, create and wrap the CKKS secret key');
  registerKeysSigningCommand(keys, ctx);
  registerKeysKemCommand(keys, ctx);
  registerKeysCkksCommand(keys, ctx);
  registerKeysShowCommand(keys, ctx);
}

import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerKeysCkksCommand } from './keys-ckks.ts';
import { registerKeysDataCommand } from './keys-data.ts';
import { registerKeysKemCommand } from './keys-kem.ts';
import { registerKeysShowCommand } from './keys-show.ts';
import { registerKeysSigningCommand } from './keys-signing.ts';
import { registerKeysThresholdCommand } from './keys-threshold.ts';

/** `cohort keys …`: the key ceremony's tools (`signing`, `kem`, `ckks`, `data`, `show`). */
export function registerKeysCommand(program: Command, ctx: CliContext): void {
  const keys = program
    .command('keys')
    .description(
      'key ceremony: generate signing and KEM keys, create and wrap the CKKS secret key and the data key',
    );
  registerKeysSigningCommand(keys, ctx);
  registerKeysKemCommand(keys, ctx);
  registerKeysCkksCommand(keys, ctx);
  registerKeysDataCommand(keys, ctx);
  registerKeysThresholdCommand(keys, ctx);
  registerKeysShowCommand(keys, ctx);
}

import type { Command } from 'commander';
import type { CliContext } from './context/cli-context.ts';

/**
 * Adds one top-level command (with its subcommands) to `program`. Each command lives in its
 * own file under `src/cli/commands/` and exports one registrar, listed in `program.ts`.
 */
export type CommandRegistrar = (program: Command, ctx: CliContext) => void;

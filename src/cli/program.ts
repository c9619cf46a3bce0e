import { Command } from 'commander';
import type { CommandRegistrar } from './command-registrar.ts';
import { registerAdminCommand } from './commands/admin.ts';
import { registerAgentCommand } from './commands/agent.ts';
import { registerAggregatorCommand } from './commands/aggregator.ts';
import { registerAuditCommand } from './commands/audit.ts';
import { registerCodecCommand } from './commands/codec-demo.ts';
import { registerConfigCommand } from './commands/config.ts';
import { registerCoordinatorCommand } from './commands/coordinator.ts';
import { registerDataCommand } from './commands/data.ts';
import { registerDemoCommand } from './commands/demo.ts';
import { registerKeysCommand } from './commands/keys.ts';
import { registerNatsCommand } from './commands/nats.ts';
import { registerRegistryCommand } from './commands/registry.ts';
import { registerSimulateCommand } from './commands/simulate.ts';
import { registerStatusCommand } from './commands/status.ts';
import { registerSwarmCommand } from './commands/swarm.ts';
import { registerVersionCommand } from './commands/version.ts';
import { registerVersionsCommand } from './commands/versions.ts';
import { type CliContext, processContext } from './context/cli-context.ts';
import { packageVersion } from './context/package-version.ts';

/** Top-level commands, in help order. To add a command, write `commands/<name>.ts` and list its registrar here. */
const COMMANDS: readonly CommandRegistrar[] = [
  registerVersionCommand,
  registerConfigCommand,
  registerKeysCommand,
  registerNatsCommand,
  registerRegistryCommand,
  registerCodecCommand,
  registerDataCommand,
  registerSimulateCommand,
  registerDemoCommand,
  registerCoordinatorCommand,
  registerAggregatorCommand,
  registerAgentCommand,
  registerSwarmCommand,
  registerVersionsCommand,
  registerAuditCommand,
  registerStatusCommand,
  registerAdminCommand,
];

/**
 * Builds the `cohort` command-line program. Commander's own exits are turned into thrown
 * `CommanderError`s (`exitOverride`) and its output goes to `ctx`, so the program can run
 * in-process; {@link runCli} maps errors to exit codes.
 */
export function createProgram(ctx: CliContext = processContext()): Command {
  const program = new Command('cohort')
    .description(
      'Cohort: federated learning with quantized, CKKS-encrypted, lattice-signed updates over NATS',
    )
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => {
        ctx.stdout.write(s);
      },
      writeErr: (s) => {
        ctx.stderr.write(s);
      },
    });
  for (const register of COMMANDS) register(program, ctx);
  return program;
}

import { Command } from 'commander';
import type { CommandRegistrar } from './command-registrar.ts';
import { type CliContext, processContext } from './context/cli-context.ts';
import { packageVersion } from './context/package-version.ts';

/**
 * A top-level command: its name and one-line summary (what `cohort --help` lists), and how to
 * load its registrar. Only the command being run is loaded, so `cohort --version` and
 * `cohort --help` import none of them (no node-seal, NATS or Fastify at start).
 */
export interface LazyCommand {
  readonly name: string;
  /** Must equal the description the registrar gives the command (a test checks it). */
  readonly summary: string;
  load(): Promise<CommandRegistrar>;
}

/** Top-level commands, in help order. To add a command, write `commands/<name>.ts` and list it here. */
export const COMMANDS: readonly LazyCommand[] = [
  {
    name: 'version',
    summary: 'print the Cohort and Node.js versions',
    load: async () => (await import('./commands/version.ts')).registerVersionCommand,
  },
  {
    name: 'config',
    summary: 'validate and inspect federation config files',
    load: async () => (await import('./commands/config.ts')).registerConfigCommand,
  },
  {
    name: 'keys',
    summary:
      'key ceremony: generate signing and KEM keys, create and wrap the CKKS secret key and the data key',
    load: async () => (await import('./commands/keys.ts')).registerKeysCommand,
  },
  {
    name: 'nats',
    summary: 'NATS credentials (NKEY, mutual TLS) and the nats-server configuration of a federation',
    load: async () => (await import('./commands/nats.ts')).registerNatsCommand,
  },
  {
    name: 'registry',
    summary: 'the signed member registry: create, show, and enroll / rotate / revoke members',
    load: async () => (await import('./commands/registry.ts')).registerRegistryCommand,
  },
  {
    name: 'codec',
    summary: 'the secure update codec',
    load: async () => (await import('./commands/codec-demo.ts')).registerCodecCommand,
  },
  {
    name: 'data',
    summary: 'site data files: split MNIST into per-site folders, check IDX, .npy and CSV files',
    load: async () => (await import('./commands/data.ts')).registerDataCommand,
  },
  {
    name: 'simulate',
    summary: 'simulate a federation in one process and write metrics (JSONL), a summary and a plot',
    load: async () => (await import('./commands/simulate.ts')).registerSimulateCommand,
  },
  {
    name: 'demo',
    summary:
      'run a federation: nats-server, coordinator, aggregators and agents as processes, MNIST 2NN (he mode unless --mode plain)',
    load: async () => (await import('./commands/demo.ts')).registerDemoCommand,
  },
  {
    name: 'coordinator',
    summary: 'run the round coordinator: membership, round open, prepare, decide (2PC) and the decision log',
    load: async () => (await import('./commands/coordinator.ts')).registerCoordinatorCommand,
  },
  {
    name: 'aggregator',
    summary: "run an aggregator: verify and sum its sites' encrypted updates each round",
    load: async () => (await import('./commands/aggregator.ts')).registerAggregatorCommand,
  },
  {
    name: 'agent',
    summary: 'run a site agent: train on the local shard, send encrypted updates, vote, switch models',
    load: async () => (await import('./commands/agent.ts')).registerAgentCommand,
  },
  {
    name: 'swarm',
    summary: 'run many site agents in one process (scale tests): each its own keys and connection',
    load: async () => (await import('./commands/swarm.ts')).registerSwarmCommand,
  },
  {
    name: 'versions',
    summary: 'model versions from the verified federation log: log, show, diff, export, rollback',
    load: async () => (await import('./commands/versions.ts')).registerVersionsCommand,
  },
  {
    name: 'audit',
    summary: 'verify the federation log as an auditor: verify (live or a bundle), export a bundle',
    load: async () => (await import('./commands/audit.ts')).registerAuditCommand,
  },
  {
    name: 'status',
    summary: "print the federation at a glance from the coordinator's admin API",
    load: async () => (await import('./commands/status.ts')).registerStatusCommand,
  },
  {
    name: 'admin',
    summary: "the coordinator's admin API (docs/admin-api.md)",
    load: async () => (await import('./commands/admin.ts')).registerAdminCommand,
  },
];

/**
 * The top-level command `argv` runs (`[node, script, ...args]`): the first argument that is not
 * an option, or the one after `help`; undefined when there is none.
 */
export function commandOf(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words[1] : words[0];
}

/**
 * Builds the `cohort` command-line program for `argv`: the command it runs is loaded and
 * registered whole; every other one is listed by name and summary only (loaded with no `argv`:
 * every command whole). Commander's own exits are turned into thrown `CommanderError`s
 * (`exitOverride`) and its output goes to `ctx`, so the program can run in-process;
 * {@link runCli} maps errors to exit codes.
 */
export async function createProgram(
  ctx: CliContext = processContext(),
  argv?: readonly string[],
): Promise<Command> {
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
  const wanted = argv === undefined ? undefined : commandOf(argv);
  for (const c of COMMANDS) {
    if (argv === undefined || c.name === wanted) (await c.load())(program, ctx);
    else program.command(c.name).description(c.summary);
  }
  return program;
}

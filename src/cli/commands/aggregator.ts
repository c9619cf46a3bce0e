import type { Command } from 'commander';
import { InvalidArgumentError } from '../../errors/index.ts';
import { startAggregator } from '../../services/aggregator/index.ts';
import { openMember, roleOf } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

interface AggregatorFlags extends ConfigFlags {
  config: string;
  member: string;
}

/**
 * `cohort aggregator --config <file> --member <id>`: runs one aggregator (verifies its sites'
 * blocks, sums them under CKKS, sends the signed partial to the coordinator, heartbeats) until
 * SIGINT or SIGTERM, then stops and closes its NATS connection.
 */
export function registerAggregatorCommand(program: Command, ctx: CliContext): void {
  addConfigOptions(
    program
      .command('aggregator')
      .description("run an aggregator: verify and sum its sites' encrypted updates each round")
      .requiredOption('-c, --config <file>', 'federation YAML config')
      .requiredOption('-m, --member <id>', "this aggregator's member id"),
  ).action(async (flags: AggregatorFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    const role = roleOf(config, flags.member);
    if (role !== 'aggregator') {
      throw new InvalidArgumentError(`--member ${flags.member} is the ${role}, not an aggregator`);
    }
    const member = await openMember(config, flags.member);
    try {
      const service = await startAggregator(member);
      const signal = await waitForSignal();
      member.log.info({ signal, stats: service.stats() }, 'aggregator shutting down');
      await service.stop();
    } finally {
      await member.close();
    }
  });
}

/** Resolves with the name of the first SIGINT or SIGTERM. */
function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

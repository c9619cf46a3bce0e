import type { Command } from 'commander';
import { InvalidArgumentError } from '../../errors/index.ts';
import { createAggregatorMetrics } from '../../metrics/index.ts';
import { type AggregatorService, startAggregator } from '../../services/aggregator/index.ts';
import { openMember, roleOf } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';
import {
  addMetricsOptions,
  type MetricsFlags,
  metricsListen,
  startMetricsEndpoint,
  statsOnceStarted,
} from '../context/metrics-options.ts';

interface AggregatorFlags extends ConfigFlags, MetricsFlags {
  config: string;
  member: string;
}

/**
 * `cohort aggregator --config <file> --member <id>`: runs one aggregator (verifies its sites'
 * blocks, sums them under CKKS, sends the signed partial to the coordinator, heartbeats) until
 * SIGINT or SIGTERM, then stops and closes its NATS connection. With `--metrics-port` it serves
 * its metrics at `GET /metrics` (docs/metrics.md).
 */
export function registerAggregatorCommand(program: Command, ctx: CliContext): void {
  addConfigOptions(
    addMetricsOptions(
      program
        .command('aggregator')
        .description("run an aggregator: verify and sum its sites' encrypted updates each round")
        .requiredOption('-c, --config <file>', 'federation YAML config')
        .requiredOption('-m, --member <id>', "this aggregator's member id"),
    ),
  ).action(async (flags: AggregatorFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    const role = roleOf(config, flags.member);
    if (role !== 'aggregator') {
      throw new InvalidArgumentError(`--member ${flags.member} is the ${role}, not an aggregator`);
    }
    const listen = metricsListen(flags);
    const member = await openMember(config, flags.member);
    let service: AggregatorService | undefined;
    // Only a served endpoint has its metrics made: without one, nothing is timed.
    const metrics =
      listen &&
      createAggregatorMetrics({
        stats: statsOnceStarted('the aggregator', () => service),
        transportStats: () => member.transport.stats(),
      });
    try {
      service = await startAggregator(member, { cryptoTimings: metrics?.timings });
      let endpoint: Awaited<ReturnType<typeof startMetricsEndpoint>> | undefined;
      try {
        endpoint = metrics && listen && (await startMetricsEndpoint(metrics, listen, ctx, member.log));
      } catch (err) {
        await service.stop();
        throw err;
      }
      const signal = await waitForSignal();
      member.log.info({ signal, stats: service.stats() }, 'aggregator shutting down');
      await endpoint?.close();
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

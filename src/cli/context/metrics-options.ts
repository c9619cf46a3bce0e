import type { Command } from 'commander';
import type { Logger } from 'pino';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  addProcessMetrics,
  type MemberMetrics,
  type MetricsListen,
  type MetricsServer,
  serveMetrics,
} from '../../metrics/index.ts';
import type { CliContext } from './cli-context.ts';
import { packageVersion } from './package-version.ts';

/** The `--metrics-*` flags of a member command. */
export interface MetricsFlags {
  metricsPort?: string;
  metricsHost: string;
}

/** Adds `--metrics-port` and `--metrics-host` (default loopback) to a member command. */
export function addMetricsOptions(command: Command): Command {
  return command
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics at GET /metrics on this port (0: any free port)',
    )
    .option(
      '--metrics-host <host>',
      'address the metrics endpoint binds (it has no token: loopback, or a network only Prometheus reaches)',
      '127.0.0.1',
    );
}

/**
 * Where the metrics endpoint listens, or undefined without `--metrics-port`. Checked before the
 * member connects: a bad port fails the command at once, naming the flag.
 */
export function metricsListen(flags: MetricsFlags): MetricsListen | undefined {
  if (flags.metricsPort === undefined) return undefined;
  const port = Number(flags.metricsPort);
  if (!/^\d+$/.test(flags.metricsPort) || !Number.isInteger(port) || port > 65_535) {
    throw new InvalidArgumentError(
      `--metrics-port is ${JSON.stringify(flags.metricsPort)}, expects a port 0..65535`,
    );
  }
  return { host: flags.metricsHost, port };
}

/**
 * The `stats` reader of a member's metrics, made before its service starts: the service's stats
 * once `service()` returns it; before, a scrape fails naming `what` (no scrape happens then: the
 * endpoint listens only after the start).
 */
export function statsOnceStarted<S>(what: string, service: () => { stats(): S } | undefined): () => S {
  return () => {
    const started = service();
    if (started === undefined) throw new Error(`${what} has not started`);
    return started.stats();
  };
}

/**
 * Serves `metrics` (with `cohort_build_info` and the process metrics) at `listen`, and says where
 * on stderr and in the log (`metrics served`).
 */
export async function startMetricsEndpoint(
  metrics: MemberMetrics,
  listen: MetricsListen,
  ctx: CliContext,
  log: Logger,
): Promise<MetricsServer> {
  addProcessMetrics(metrics.registry, packageVersion());
  const server = await serveMetrics(metrics, listen, (err) => log.error({ err }, 'metrics scrape failed'));
  log.info({ url: server.url }, 'metrics served');
  ctx.stderr.write(`metrics on ${server.url}\n`);
  return server;
}

import type { Command } from 'commander';
import { loadSiteConfig } from '../../config/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { createSiteMetrics } from '../../metrics/index.ts';
import { type AgentOptions, loadContractData, startAgent } from '../../services/agent/index.ts';
import { openMember } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';
import {
  addMetricsOptions,
  type MetricsFlags,
  metricsListen,
  startMetricsEndpoint,
  statsOnceStarted,
} from '../context/metrics-options.ts';

interface AgentFlags extends ConfigFlags, MetricsFlags {
  config: string;
  member: string;
  evaluate?: boolean;
  siteConfig?: string;
}

/**
 * `cohort agent --config <file> --member <id> [--site-config <file>] [--evaluate]`: runs a site
 * agent (train, send, vote, switch) until SIGINT or SIGTERM. Logs JSON lines; `--evaluate` scores
 * every committed model on the MNIST test set and reports the accuracy in its `switched` message.
 * With `--site-config`, the site's own data files are read and checked against the federation's
 * data contract before the agent connects: a violation ends it with the error (exit status 2)
 * without ever joining. Without it the site trains on its IID share of MNIST. With
 * `--metrics-port` it serves its metrics at `GET /metrics` (docs/metrics.md).
 */
export function registerAgentCommand(program: Command, ctx: CliContext): void {
  addConfigOptions(
    addMetricsOptions(
      program
        .command('agent')
        .description(
          'run a site agent: train on the local shard, send encrypted updates, vote, switch models',
        )
        .requiredOption('-c, --config <file>', 'federation YAML (members, round, learning)')
        .requiredOption('-m, --member <id>', 'this site’s id (one of members.sites)')
        .option('--evaluate', 'evaluate each committed model on the MNIST test set', false)
        .option(
          '--site-config <file>',
          'this site’s own YAML (data files, validation split, trainer), checked against the data contract',
        ),
    ),
  ).action(async (flags: AgentFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    const listen = metricsListen(flags);
    const site = siteOptions(config, flags, ctx);
    const member = await openMember(config, flags.member);
    let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
    // Only a served endpoint has its metrics made: without one, nothing is timed.
    const metrics =
      listen &&
      createSiteMetrics({
        stats: statsOnceStarted('the agent', () => agent),
        transportStats: () => member.transport.stats(),
      });
    const options: AgentOptions = {
      evaluate: flags.evaluate === true,
      ...(metrics === undefined ? {} : { cryptoTimings: metrics.timings }),
      ...site,
    };
    try {
      agent = await startAgent(member, options);
    } catch (err) {
      await member.close();
      throw err;
    }
    let endpoint: Awaited<ReturnType<typeof startMetricsEndpoint>> | undefined;
    try {
      endpoint = metrics && listen && (await startMetricsEndpoint(metrics, listen, ctx, member.log));
    } catch (err) {
      await agent.stop();
      await member.close();
      throw err;
    }
    ctx.stderr.write(`agent ${flags.member} ${agent.state}; stop with Ctrl-C\n`);
    let done!: () => void;
    const signalled = new Promise<void>((resolve) => {
      done = resolve;
      process.on('SIGINT', done);
      process.on('SIGTERM', done);
    });
    const halted = await Promise.race([signalled.then(() => undefined), agent.halted]);
    process.off('SIGINT', done);
    process.off('SIGTERM', done);
    await endpoint?.close();
    await agent.stop();
    await member.close();
    if (halted !== undefined) throw halted;
  });
}

/**
 * With `--site-config`: the site configuration and its data, read and checked against the data
 * contract now, before any connection (the member's id is checked against `members.sites` first).
 */
function siteOptions(
  config: ReturnType<typeof loadConfigWithFlags>,
  flags: AgentFlags,
  ctx: CliContext,
): Pick<AgentOptions, 'siteConfig' | 'siteData'> {
  if (flags.siteConfig === undefined) return {};
  const sites = config.members?.sites.map((s) => s.id) ?? [];
  if (!sites.includes(flags.member)) {
    throw new InvalidArgumentError(`${flags.member} is not one of members.sites (${sites.join(', ')})`);
  }
  const siteConfig = loadSiteConfig(flags.siteConfig, { env: flags.env === false ? {} : ctx.env });
  const siteData = loadContractData(config, siteConfig);
  const validation = siteData.validation === null ? 'no' : String(siteData.validation.count);
  ctx.stderr.write(
    `site data of ${flags.member} fits the data contract: ${siteData.train.count} training rows, ${validation} validation rows (${siteData.files.join(', ')})\n`,
  );
  return { siteConfig, siteData };
}

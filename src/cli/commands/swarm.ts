import type { Command } from 'commander';
import { CohortError, InvalidArgumentError } from '../../errors/index.ts';
import { parseSiteList, type SwarmFailure, startSwarm } from '../../services/swarm/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

interface SwarmFlags extends ConfigFlags {
  config: string;
  sites: string;
  syntheticRows?: string;
  concurrency: string;
}

/** A positive integer flag, or `INVALID_ARGUMENT` naming it. */
function positiveInt(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`${flag} must be a positive integer, got ${value}`);
  return n;
}

/**
 * `cohort swarm --config <file> --sites site-1..site-256 [--synthetic-rows N] [--concurrency K]`:
 * runs many real site agents in one process (each with its own keys and NATS connection, all
 * sharing the process's SEAL runtime) until SIGINT or SIGTERM, for scale tests and the round
 * benchmark. Writes one JSON line to stdout once every member started or failed
 * (`{"event":"swarm-ready",…}`), one per failure (`swarm-failure`) and one when stopped
 * (`swarm-stopped`); ends with `SWARM_MEMBERS_FAILED` when a member failed to start or halted.
 */
export function registerSwarmCommand(program: Command, ctx: CliContext): void {
  addConfigOptions(
    program
      .command('swarm')
      .description('run many site agents in one process (scale tests): each its own keys and connection')
      .requiredOption('-c, --config <file>', 'federation YAML config')
      .requiredOption('--sites <list>', 'site ids and ranges, e.g. site-1..site-256 or site-1,site-3')
      .option('--synthetic-rows <n>', 'train on n synthetic rows per site (needs a tabular data contract)')
      .option('--concurrency <n>', 'members started at the same time', '8'),
  ).action(async (flags: SwarmFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    const members = parseSiteList(flags.sites);
    const line = (o: Record<string, unknown>) => ctx.stdout.write(`${JSON.stringify(o)}\n`);
    let stopRequested = false;
    let wake!: () => void;
    const signalled = new Promise<void>((resolve) => {
      wake = () => {
        stopRequested = true;
        resolve();
      };
    });
    process.on('SIGINT', wake);
    process.on('SIGTERM', wake);
    try {
      const swarm = await startSwarm(config, {
        members,
        concurrency: positiveInt('--concurrency', flags.concurrency),
        ...(flags.syntheticRows === undefined
          ? {}
          : { syntheticRows: positiveInt('--synthetic-rows', flags.syntheticRows) }),
        onFailure: (f: SwarmFailure) => line({ event: 'swarm-failure', ...f }),
      });
      line({
        event: 'swarm-ready',
        members: members.length,
        started: swarm.agents.size,
        failed: swarm.failures.length,
        startMs: Math.round(swarm.startMs),
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
      });
      ctx.stderr.write(`swarm: ${swarm.agents.size} of ${members.length} agents running; stop with Ctrl-C\n`);
      if (!stopRequested) await signalled;
      await swarm.stop();
      const agents = [...swarm.agents.values()].map((a) => a.stats());
      line({
        event: 'swarm-stopped',
        started: swarm.agents.size,
        failed: swarm.failures.length,
        commits: agents.reduce((s, a) => s + a.commits, 0),
        votesYes: agents.reduce((s, a) => s + a.votesYes, 0),
        votesNo: agents.reduce((s, a) => s + a.votesNo, 0),
      });
      if (swarm.failures.length > 0) {
        throw new CohortError(
          'SWARM_MEMBERS_FAILED',
          `${swarm.failures.length} of ${members.length} swarm members failed (first: ${swarm.failures[0]!.member}: ${swarm.failures[0]!.error})`,
        );
      }
    } finally {
      process.off('SIGINT', wake);
      process.off('SIGTERM', wake);
    }
  });
}

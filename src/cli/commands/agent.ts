import type { Command } from 'commander';
import { startAgent } from '../../services/agent/index.ts';
import { openMember } from '../../services/index.ts';
import type { CliContext } from '../cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../config-options.ts';

interface AgentFlags extends ConfigFlags {
  config: string;
  member: string;
  evaluate?: boolean;
}

/**
 * `cohort agent --config <file> --member <id> [--evaluate]`: runs a site agent (train, send,
 * vote, switch) until SIGINT or SIGTERM. Logs JSON lines; `--evaluate` scores every committed
 * model on the MNIST test set and reports the accuracy in its `switched` message.
 */
export function registerAgentCommand(program: Command, ctx: CliContext): void {
  addConfigOptions(
    program
      .command('agent')
      .description('run a site agent: train on the local shard, send encrypted updates, vote, switch models')
      .requiredOption('-c, --config <file>', 'federation YAML (members, round, learning)')
      .requiredOption('-m, --member <id>', 'this site’s id (one of members.sites)')
      .option('--evaluate', 'evaluate each committed model on the MNIST test set', false),
  ).action(async (flags: AgentFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    const member = await openMember(config, flags.member);
    let agent: Awaited<ReturnType<typeof startAgent>>;
    try {
      agent = await startAgent(member, { evaluate: flags.evaluate === true });
    } catch (err) {
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
    await agent.stop();
    await member.close();
    if (halted !== undefined) throw halted;
  });
}

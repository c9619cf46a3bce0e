import type { Command } from 'commander';
import type { RobustRule } from '../../../federation/index.ts';
import { runDemo } from '../../demo/run-demo.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { CliContext } from '../context/cli-context.ts';

function int(name: string, raw: string, min: number, max: number): number {
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new InvalidArgumentError(`--${name} ${raw} must be an integer in [${min}, ${max}]`);
  }
  return v;
}

function positive(name: string, raw: string): number {
  const v = Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new InvalidArgumentError(`--${name} ${raw} must be a number > 0`);
  return v;
}

/** `cohort demo`: the demo federation as separate processes over NATS (the README's main command). */
export function registerDemoCommand(program: Command, ctx: CliContext): void {
  program
    .command('demo')
    .description(
      'run a federation: nats-server, coordinator, aggregators and agents as processes, MNIST 2NN (he mode unless --mode plain)',
    )
    .option('--rounds <n>', 'rounds to run', '5')
    .option(
      '--sites <n>',
      'site agents, at least 3 (round.minContributors: no aggregate of fewer is decrypted)',
      '4',
    )
    .option('--aggregators <n>', 'aggregators', '2')
    .option('--train-limit <n>', 'training rows shared by the sites (default all 60,000)')
    .option('--keep', 'keep the working folder (keys, logs, models)', false)
    .option('--epsilon <e>', 'differential privacy: the ε budget, calibrated for --rounds (docs/privacy.md)')
    .option('--clip-norm <c>', 'with --epsilon: the L2 norm each update is clipped to', '0.05')
    .option('--mode <mode>', 'he (encrypted updates) or plain (signed plaintext updates)', 'he')
    .option(
      '--keys <keys>',
      'he mode: threshold (no site holds the key; t sites decrypt together) or shared (one key wrapped to every site)',
      'threshold',
    )
    .option(
      '--rule <rule>',
      'plain mode: robust aggregation, median | trimmed-mean (25% per side) | multi-krum (f = 1, needs --sites ≥ 5)',
    )
    .action(
      async (o: {
        rounds: string;
        sites: string;
        aggregators: string;
        trainLimit?: string;
        keep: boolean;
        epsilon?: string;
        clipNorm: string;
        mode: string;
        keys: string;
        rule?: string;
      }) => {
        const code = await runDemo(
          {
            rounds: int('rounds', o.rounds, 1, 1000),
            sites: int('sites', o.sites, 3, 64),
            aggregators: int('aggregators', o.aggregators, 1, 16),
            keep: o.keep,
            mode: demoMode(o.mode),
            keys: demoKeys(o.keys),
            ...(o.rule === undefined ? {} : { aggregation: demoRule(o.rule, o.mode) }),
            ...(o.trainLimit === undefined
              ? {}
              : { trainLimit: int('train-limit', o.trainLimit, 100, 60_000) }),
            ...(o.epsilon === undefined
              ? {}
              : {
                  privacy: {
                    epsilon: positive('epsilon', o.epsilon),
                    clipNorm: positive('clip-norm', o.clipNorm),
                  },
                }),
          },
          ctx.stdout,
          ctx.stderr,
        );
        if (code !== 0) process.exitCode = code;
      },
    );
}

function demoMode(mode: string): 'he' | 'plain' {
  if (mode !== 'he' && mode !== 'plain') {
    throw new InvalidArgumentError(`--mode ${JSON.stringify(mode)}: must be he or plain`);
  }
  return mode;
}

function demoKeys(keys: string): 'shared' | 'threshold' {
  if (keys !== 'shared' && keys !== 'threshold') {
    throw new InvalidArgumentError(`--keys ${JSON.stringify(keys)}: must be threshold or shared`);
  }
  return keys;
}

/** The robust rule `--rule` names, with the demo's settings. */
function demoRule(rule: string, mode: string): RobustRule {
  if (mode !== 'plain')
    throw new InvalidArgumentError('--rule needs --mode plain (a robust rule reads every update)');
  switch (rule) {
    case 'median':
      return { name: 'median' };
    case 'trimmed-mean':
      return { name: 'trimmed-mean', trimFraction: 0.25 };
    case 'multi-krum':
      return { name: 'multi-krum', byzantine: 1 };
    default:
      throw new InvalidArgumentError(
        `--rule ${JSON.stringify(rule)}: must be median, trimmed-mean or multi-krum`,
      );
  }
}

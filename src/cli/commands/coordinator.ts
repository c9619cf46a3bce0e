import type { Command } from 'commander';
import { coordinatorAdminDeps, type ServedAdminApi, serveAdminApi } from '../../admin/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { EvaluationBody } from '../../protocol/index.ts';
import {
  type CoordinatorEvent,
  type RoundSummary,
  startCoordinator,
} from '../../services/coordinator/index.ts';
import { openMember } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';
import { coordinatorAdminServices } from './coordinator-admin.ts';

interface CoordinatorFlags extends ConfigFlags {
  config: string;
  member?: string;
  rounds?: string;
  leaseWait?: string;
  idle?: boolean;
}

/** `1.2 MB`-style size. */
function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The per-round line: round, contributors, decision, commit hash prefix, bytes, time. */
export function formatRoundLine(s: RoundSummary): string {
  const decision = s.commit
    ? `${s.kind === 'rollback' ? 'ROLLBACK COMMIT' : 'COMMIT'} ${s.commitHash?.slice(0, 12)} (height ${s.height})`
    : `ABORT (${s.reason})`;
  const line = `round ${s.round}: ${s.contributors}/${s.participants} contributors, ${decision}, sites sent ${formatBytes(s.uploadBytes)}, aggregate ${formatBytes(s.aggregateBytes)}, ${(s.durationMs / 1000).toFixed(1)} s`;
  return s.evaluation === null ? line : `${line}\n  ${formatEvaluation(s.evaluation)}`;
}

/**
 * A federated evaluation's line: accuracy and mean loss over the validation rows of the round's
 * participants, of the model the round started from (the parent commit).
 */
export function formatEvaluation(e: EvaluationBody): string {
  const model = Buffer.from(e.model).toString('hex').slice(0, 12);
  if (e.examples === 0) return `federated evaluation of ${model}: no validation rows`;
  const accuracy = ((100 * e.correct) / e.examples).toFixed(2);
  const loss = (e.lossSum / e.examples).toFixed(4);
  return `federated evaluation of ${model}: accuracy ${accuracy}% (${e.correct}/${e.examples}), loss ${loss}`;
}

/**
 * `cohort coordinator --config <file> [--rounds n] [--idle]`: runs the federation's rounds over
 * NATS (the coordinator of docs/round-protocol.md), printing one line per decided round (on
 * stderr: stdout is the JSON log alone), and exits 0 after the last round (`--rounds`, else
 * `round.count`; rounds already in the decision log count). With `--idle` it runs only `--rounds` (none when absent), then waits for runs started
 * through the admin API until interrupted. With an `admin` section it serves the admin API
 * (docs/admin-api.md) while it runs and prints `admin API listening on <url>`.
 */
export function registerCoordinatorCommand(program: Command, ctx: CliContext): void {
  addConfigOptions(
    program
      .command('coordinator')
      .description(
        'run the round coordinator: membership, round open, prepare, decide (2PC) and the decision log',
      )
      .requiredOption('-c, --config <file>', 'federation YAML')
      .option('--member <id>', 'member id (default: members.coordinator)')
      .option('--rounds <n>', 'stop after round n (default: round.count; 0 runs until interrupted)')
      .option(
        '--lease-wait <ms>',
        "wait this long for another coordinator's lease to expire (default 2 × history.leaseMs; a standby passes a large value)",
      )
      .option('--idle', 'after --rounds (none by default), wait for runs started through the admin API'),
  ).action(async (flags: CoordinatorFlags) => {
    const config = loadConfigWithFlags(flags.config, flags, ctx);
    let rounds: number | undefined;
    if (flags.rounds !== undefined) {
      rounds = Number(flags.rounds);
      if (!Number.isInteger(rounds) || rounds < 0)
        throw new InvalidArgumentError(`--rounds ${flags.rounds} must be an integer ≥ 0`);
    }
    let leaseWaitMs: number | undefined;
    if (flags.leaseWait !== undefined) {
      leaseWaitMs = Number(flags.leaseWait);
      if (!Number.isInteger(leaseWaitMs) || leaseWaitMs < 0)
        throw new InvalidArgumentError(`--lease-wait ${flags.leaseWait} must be an integer ≥ 0 (ms)`);
    }
    if (flags.idle === true && config.admin === undefined) {
      throw new InvalidArgumentError(
        '--idle needs an admin section: runs are started through the admin API',
        {
          details: { name: 'idle' },
        },
      );
    }
    const member = flags.member ?? config.members?.coordinator ?? 'coordinator';
    const mctx = await openMember(config, member);
    const services = config.admin === undefined ? undefined : coordinatorAdminServices(config, mctx);
    // Human lines go to stderr: stdout is the JSON log alone (jq, pino-pretty).
    const say = (s: string) => ctx.stderr.write(`${s}\n`);
    const onEvent = (e: CoordinatorEvent) => {
      services?.onEvent(e);
      if (e.type === 'started') {
        say(
          `coordinator ${member}: federation ${config.federation.id}, head ${e.head.slice(0, 12)} (height ${e.height}), next round ${e.round}`,
        );
      } else if (e.type === 'recovered') {
        say(
          e.action === 'aborted-open-round'
            ? `recovered: round ${e.round} was left undecided by a previous run; aborted`
            : `recovered: re-announced the decision of round ${e.round}`,
        );
      } else if (e.type === 'excluded') {
        say(`round ${e.round}: ${e.member} excluded (${e.reason})`);
      } else if (e.type === 'readmitted') {
        say(`${e.member} readmitted`);
      } else if (e.type === 'snapshot') {
        say(`snapshot of height ${e.height} stored (${e.site}, ${e.bytes} bytes)`);
      } else if (e.type === 'decision') {
        say(formatRoundLine(e.summary));
      } else if (e.type === 'robust' && (e.dropped.length > 0 || e.clipped > 0)) {
        say(
          `round ${e.round}: ${e.rule} kept ${e.kept.length} updates` +
            (e.dropped.length > 0 ? `, left out ${e.dropped.join(', ')}` : '') +
            (e.clipped > 0 ? `, scaled ${e.clipped} down to the norm bound` : ''),
        );
      } else if (e.type === 'privacy-budget') {
        say(
          `privacy budget: ε ${e.epsilon.toFixed(4)} spent of ${e.budget}; one more round could pass it: no more training rounds`,
        );
      } else if (e.type === 'switched' && e.testAccuracy !== undefined) {
        say(
          `round ${e.round}: ${e.member} switched in ${e.latencyMs} ms, test accuracy ${(e.testAccuracy * 100).toFixed(2)}%`,
        );
      }
    };
    const handle = startCoordinator(mctx, {
      ...(rounds === undefined ? {} : { rounds }),
      ...(leaseWaitMs === undefined ? {} : { leaseWaitMs }),
      ...(flags.idle === true ? { idle: true } : {}),
      onEvent,
      ...(services === undefined ? {} : { cryptoTimings: services.timings }),
    });
    services?.attach(handle);
    const interrupt = () => void handle.stop();
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    let api: ServedAdminApi | undefined;
    try {
      if (config.admin !== undefined) {
        const deps = coordinatorAdminDeps({
          handle,
          member: mctx,
          config,
          ...(services === undefined
            ? {}
            : {
                metrics: services.metrics,
                exportAuditBundle: services.exportAuditBundle,
                verifyLog: services.verifyLog,
              }),
          ...(config.admin.modelStore === undefined ? {} : { modelStore: config.admin.modelStore }),
        });
        try {
          api = await serveAdminApi(config.admin, deps, mctx.log.child({ component: 'admin-api' }));
        } catch (err) {
          await handle.stop();
          throw err;
        }
        say(`admin API listening on ${api.url}`);
      }
      const summary = await handle.done;
      const lat = summary.switchLatency;
      const latency =
        lat.count > 0
          ? `switch latency P50 ${lat.p50Ms} ms, P99 ${lat.p99Ms} ms (${lat.count} switches)`
          : 'no switches reported';
      const accuracy =
        summary.testAccuracy === undefined
          ? ''
          : `, test accuracy ${(summary.testAccuracy * 100).toFixed(2)}%`;
      const privacy =
        summary.privacy === undefined
          ? ''
          : `; privacy ε ${summary.privacy.epsilon.toFixed(4)} spent (δ ${summary.privacy.delta})`;
      say(
        `${summary.stopped ? 'stopped' : 'done'}: ${summary.rounds.length} rounds, ${summary.committed} committed, ${summary.aborted} aborted; head ${summary.head.slice(0, 12)} (height ${summary.height}); ${latency}${accuracy}${privacy}`,
      );
    } finally {
      process.off('SIGINT', interrupt);
      process.off('SIGTERM', interrupt);
      await api?.close().catch(() => undefined);
      await mctx.close();
    }
  });
}

import type { Command } from 'commander';
import { InvalidArgumentError } from '../../errors/index.ts';
import { type RollbackOutcome, resolveRef, waitForRollbackOutcome } from '../../history/index.ts';
import { sealControl } from '../../protocol/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { commitLabel, hex, printable } from './versions-format.ts';
import { addVersionsOptions, finding, type VersionsFlags, withVersionsSession } from './versions-session.ts';

interface RollbackFlags extends VersionsFlags {
  reason?: string;
  wait?: boolean;
}

/** Poll interval of `--wait`, ms. */
export const ROLLBACK_POLL_MS = 500;

/** Slack added to a round's deadline and vote timeout for `--wait`, ms. */
export const ROLLBACK_WAIT_SLACK_MS = 30_000;

/** `COMMIT <hash> height <h> (round r)` or `ABORT round r: <reason>`. */
export function rollbackOutcomeLine(outcome: RollbackOutcome): string {
  if (outcome.outcome === 'commit') {
    return `COMMIT ${hex(outcome.commit.commit.hash)} height ${outcome.commit.commit.height} (round ${outcome.round.round})`;
  }
  return `ABORT round ${outcome.round.round}: ${printable(outcome.round.decision.reason) || '(no reason)'}`;
}

/**
 * `cohort versions rollback <ref> --config <file> [--member <id>] [--reason <text>] [--wait]`: asks
 * the coordinator to roll the federation back to an earlier commit of the verified chain (refs as
 * in `versions show`; not the head). Run on the coordinator's host with its identity (`--member`
 * defaults to `members.coordinator`): signs a `rollback-request` (federation, target, now, reason)
 * with that key and sends it as a request on `cohort.<F>.admin.rollback`; prints the coordinator's
 * JSON reply `{"queued":true,"target":"<hex>","height":<n>}` on one line. The rollback itself is a
 * round of its own (2PC). With `--wait` it then reads the log every 500 ms, up to
 * `round.deadlineMs + round.voteTimeoutMs + 30 s`, until the decision whose rollback target is
 * that commit, and prints `COMMIT <hash> height <h> (round r)` or `ABORT round r: <reason>`.
 *
 * Exit 0 (queued; with `--wait`, committed); 3 on ABORT, when no decision appears in time, or when
 * the log does not verify; 2 for a bad ref, the head as target, another member than the
 * coordinator, a refused request (`TRANSPORT_REMOTE` naming the coordinator's code) or when it
 * cannot run.
 */
export function registerVersionsRollbackCommand(versions: Command, ctx: CliContext): void {
  addVersionsOptions(
    versions
      .command('rollback')
      .description(
        "operator: ask the coordinator to roll back to an earlier commit (run with the coordinator's keys)",
      )
      .argument('<ref>', 'commit to restore: hash or unique prefix, HEAD~n, or @<height>')
      .option('--reason <text>', 'why (recorded in the request)', '')
      .option('--wait', 'wait for the rollback round and print its decision'),
    'members.coordinator',
  ).action(async (ref: string, flags: RollbackFlags) => {
    await withVersionsSession(
      flags,
      ctx,
      async ({ config, member, timeline, sync }) => {
        if (member.role !== 'coordinator') {
          throw new InvalidArgumentError(
            `--member ${member.member} is a ${member.role}: rollback requests are signed with the coordinator's key (run on its host as ${member.members.coordinator})`,
            { details: { name: 'member' } },
          );
        }
        const target = resolveRef(timeline.history, ref);
        const head = timeline.head;
        if (target.commit.height >= head.commit.height) {
          throw new InvalidArgumentError(
            `${ref} is the head (${commitLabel(head)}): a rollback restores an earlier commit`,
            { details: { name: 'ref' } },
          );
        }
        const after = timeline.position.sequence;
        const request = sealControl(
          'rollback-request',
          {
            federation: config.federation.id,
            target: target.commit.hash,
            requestedUnixMs: Date.now(),
            reason: flags.reason ?? '',
          },
          member.member,
          member.signing,
        );
        const reply = new TextDecoder().decode(
          await member.transport.request(member.subjects.rollbackRequest, request),
        );
        ctx.stdout.write(`${reply}\n`);
        if (flags.wait !== true) return;
        const timeoutMs = config.round.deadlineMs + config.round.voteTimeoutMs + ROLLBACK_WAIT_SLACK_MS;
        const outcome = await waitForRollbackOutcome({
          timeline,
          sync,
          target: target.commit.hash,
          after,
          timeoutMs,
          intervalMs: ROLLBACK_POLL_MS,
        });
        if (outcome === undefined) {
          const message = `no decision on the rollback to ${commitLabel(target)} in the log within ${timeoutMs} ms`;
          ctx.stderr.write(`error: ${message}\n`);
          throw finding(message);
        }
        ctx.stdout.write(`${rollbackOutcomeLine(outcome)}\n`);
        if (outcome.outcome === 'abort') throw finding(rollbackOutcomeLine(outcome));
      },
      (config) => config.members?.coordinator ?? 'coordinator',
    );
  });
}

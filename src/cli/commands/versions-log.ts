import type { Command } from 'commander';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  type AbortJson,
  type CommitJson,
  commitJson,
  type FederationTimeline,
  type LogItem,
  logItems,
  logJson,
} from '../../history/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { alignColumns, isoDate, plural, printable, short } from './versions-format.ts';
import { addVersionsOptions, type VersionsFlags, withVersionsSession } from './versions-session.ts';

interface LogFlags extends VersionsFlags {
  json?: boolean;
  all?: boolean;
  limit?: string;
}

/**
 * `versions log` lines, columns aligned: height, round, kind, short hash, date, then contributors
 * (round commits), `to @<height> <hash>` (rollbacks) or the reason (ABORTs, height and hash `-`).
 */
export function logLines(timeline: FederationTimeline, items: readonly LogItem[]): string[] {
  const rows = items.map((item) => {
    if (item.type === 'abort') {
      const d = item.round.decision;
      const target =
        d.rollbackTarget.length > 0 ? timeline.history.commitByHash(d.rollbackTarget) : undefined;
      const what =
        d.rollbackTarget.length > 0
          ? `rollback to ${target ? `@${target.commit.height}` : short(d.rollbackTarget)}: `
          : '';
      return [
        '-',
        `round ${item.round.round}`,
        'ABORT',
        '-',
        isoDate(item.round.unixMs),
        `${what}${printable(d.reason) || '(no reason)'}`,
      ];
    }
    const j = commitJson(timeline, item.commit);
    const detail =
      j.kind === 'round'
        ? plural(j.contributors.length, 'contributor')
        : j.kind === 'rollback'
          ? `to ${j.rollbackTargetHeight === null ? '?' : `@${j.rollbackTargetHeight}`} ${j.rollbackTarget?.slice(0, 12)}`
          : '';
    return [`@${j.height}`, `round ${j.round}`, j.kind, j.hash.slice(0, 12), isoDate(j.unixMs), detail];
  });
  return alignColumns(rows);
}

function parseLimit(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(n) || n < 1) {
    throw new InvalidArgumentError(`--limit ${text} must be an integer ≥ 1`, { details: { name: 'limit' } });
  }
  return n;
}

/**
 * `cohort versions log --config <file> --member <id> [--all] [--limit n] [--json]`: the chain's
 * commits from the verified federation log, newest first, one line each: `@<height>`, `round <r>`,
 * kind (`round` | `rollback` | `genesis`), short hash, date (ISO 8601 of the log's `unixMs`), and
 * the contributor count (round commits) or `to @<height> <hash>` (rollbacks). `--all` adds the
 * ABORTed rounds (`-  round <r>  ABORT  -  <date>  <reason>`); `--limit n` prints the newest n.
 *
 * `--json` prints one JSON array in the same order. A commit is
 * `{ hash, height, round, kind, parent, modelHash, stateHash, aggregateDigest,
 *    contributors: [{ site, digest, weight }], voters, missing, sequence, unixMs,
 *    rollbackTarget, rollbackTargetHeight }` (see {@link CommitJson}: hashes are lowercase hex;
 * genesis has null `sequence` and `unixMs`; `stateHash`, `rollbackTarget` and
 * `rollbackTargetHeight` are null where they do not apply). An ABORTed round (`--all`) is
 * `{ kind: "abort", round, reason, parent, height, voters, missing, sequence, unixMs, rollbackTarget }`
 * (see {@link AbortJson}).
 *
 * Exit 0; 3 when the log does not verify (the error's code and message on stderr); 2 when it cannot run.
 */
export function registerVersionsLogCommand(versions: Command, ctx: CliContext): void {
  addVersionsOptions(
    versions
      .command('log')
      .description('list the commits of the federation log, newest first (verifies the whole log)')
      .option('--all', 'also list ABORTed rounds')
      .option('-n, --limit <n>', 'print only the newest n entries')
      .option('--json', 'print a JSON array (fields in the command reference)'),
  ).action(async (flags: LogFlags) => {
    const limit = parseLimit(flags.limit);
    await withVersionsSession(flags, ctx, async ({ timeline }) => {
      const items = logItems(timeline, {
        all: flags.all === true,
        ...(limit === undefined ? {} : { limit }),
      });
      if (flags.json === true) ctx.stdout.write(`${JSON.stringify(logJson(timeline, items), null, 2)}\n`);
      else
        ctx.stdout.write(
          logLines(timeline, items)
            .map((l) => `${l}\n`)
            .join(''),
        );
    });
  });
}

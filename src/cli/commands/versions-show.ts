import type { Command } from 'commander';
import { resolveRef, type ShowJson, showJson } from '../../history/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import {
  alignColumns,
  describeRoundParams,
  float32String,
  isoDate,
  plural,
  printable,
} from './versions-format.ts';
import { addVersionsOptions, type VersionsFlags, withVersionsSession } from './versions-session.ts';

interface ShowFlags extends VersionsFlags {
  json?: boolean;
}

/** `versions show` lines: `label: value`, values aligned, lists indented below their label. */
export function showLines(j: ShowJson): string[] {
  const rows: string[][] = [
    ['commit', j.hash],
    ['kind:', j.kind],
    ['height:', String(j.height)],
    ['round:', String(j.round)],
    ['parent:', j.parent],
    ['model hash:', j.modelHash],
    ['aggregate digest:', j.aggregateDigest],
    ['state hash:', j.stateHash ?? '-'],
    ['date:', j.sequence === null ? '-' : `${isoDate(j.unixMs)} (log entry ${j.sequence})`],
    [
      'params:',
      j.statistics !== null
        ? `feature statistics of ${j.statistics.rows} rows, ${j.statistics.mean.length} features`
        : j.params === null
          ? `(not round params: ${j.paramsHex.length / 2} bytes)`
          : describeRoundParams(j.params),
    ],
  ];
  if (j.kind === 'rollback') {
    rows.push([
      'rollback target:',
      `${j.rollbackTarget} (${j.rollbackTargetHeight === null ? 'not on the chain' : `@${j.rollbackTargetHeight}`})`,
    ]);
  }
  if (j.aggregate !== null) {
    const a = j.aggregate;
    rows.push([
      'aggregate:',
      `${printable(a.object)}, ${a.objectBytes} bytes, total weight ${a.totalWeight}, ${a.participants} participants, ${a.totalExamples} examples`,
    ]);
  }
  rows.push(['contributors:', String(j.contributors.length)]);
  for (const c of j.contributors) rows.push(['', `${printable(c.site)}  ${c.digest}  weight ${c.weight}`]);
  rows.push(['voters:', j.voters.length === 0 ? '-' : j.voters.map(printable).join(', ')]);
  rows.push(['missing:', j.missing.length === 0 ? '-' : j.missing.map(printable).join(', ')]);
  rows.push(['next clip:', j.nextClip === null ? '-' : float32String(j.nextClip)]);
  if (j.evaluation !== null) {
    const e = j.evaluation;
    const figures =
      e.examples === 0
        ? 'no validation rows'
        : `accuracy ${((100 * e.correct) / e.examples).toFixed(2)}% (${e.correct}/${e.examples}), loss ${(e.lossSum / e.examples).toFixed(4)}`;
    rows.push(['evaluation:', `of ${e.model.slice(0, 12)} (the parent): ${figures}`]);
  }
  rows.push(['exclusions:', String(j.exclusions.length)]);
  for (const e of j.exclusions) {
    rows.push([
      '',
      `${printable(e.site)}  ${e.excluded ? 'excluded' : 'readmitted'}, ${plural(e.strikes, 'strike')}, last in round ${e.sinceRound}, at height ${e.atHeight}`,
    ]);
  }
  rows.push(['snapshots:', String(j.snapshots.length)]);
  for (const s of j.snapshots) {
    rows.push([
      '',
      `log entry ${s.sequence} (${isoDate(s.unixMs)}): ${printable(s.object)}, ${s.bytes} bytes, digest ${s.digest}, from ${printable(s.site)}`,
    ]);
  }
  return alignColumns(rows);
}

/**
 * `cohort versions show <ref> --config <file> --member <id> [--json]`: one commit of the verified
 * chain in full. `<ref>` is a hash (whole, or a unique prefix of ≥ 4 hex digits), `HEAD`,
 * `HEAD~n` or `@<height>`. Lines are `label: value`; `--json` prints one object
 * `{ …CommitJson (see versions log), params: { round, bits, clip, strategy, learningRate } | null,
 *    paramsHex, aggregate: { object, objectBytes, totalWeight, participants, totalExamples } | null,
 *    exclusions: [{ site, strikes, sinceRound, atHeight, excluded }], nextClip,
 *    snapshots: [{ sequence, unixMs, object, digest, bytes, site }] }` (see {@link ShowJson}).
 *
 * Exit 0; 2 for an unknown, ambiguous or malformed ref (`REF_UNKNOWN`, `REF_AMBIGUOUS`,
 * `REF_INVALID`) or when it cannot run; 3 when the log does not verify.
 */
export function registerVersionsShowCommand(versions: Command, ctx: CliContext): void {
  addVersionsOptions(
    versions
      .command('show')
      .description('show one commit of the federation log in full')
      .argument('<ref>', 'commit: hash or unique prefix, HEAD, HEAD~n, or @<height>')
      .option('--json', 'print a JSON object (fields in the command reference)'),
  ).action(async (ref: string, flags: ShowFlags) => {
    await withVersionsSession(flags, ctx, async ({ timeline }) => {
      const j = showJson(timeline, resolveRef(timeline.history, ref));
      if (flags.json === true) ctx.stdout.write(`${JSON.stringify(j, null, 2)}\n`);
      else
        ctx.stdout.write(
          showLines(j)
            .map((l) => `${l}\n`)
            .join(''),
        );
    });
  });
}

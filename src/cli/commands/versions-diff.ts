import type { Command } from 'commander';
import type { ModelSpec } from '../../../federation/index.ts';
import {
  assertModelStore,
  type CommitDiff,
  diffCommits,
  type FederationTimeline,
  isModelStore,
  type LayerDiffStats,
  layerDiffStats,
  missingModelMessage,
  readStoredModel,
  resolveRef,
} from '../../history/index.ts';
import { modelSpecFor } from '../../round/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { diffJson, diffLines } from './versions-diff-format.ts';
import { addVersionsOptions, type VersionsFlags, withVersionsSession } from './versions-session.ts';
import { storeChoice } from './versions-store.ts';

interface DiffFlags extends VersionsFlags {
  json?: boolean;
  store?: string;
}

/**
 * Per-layer statistics from the models in `dir`, or null with the reason written to `note` when
 * the store does not hold both (an explicit `--store` that is no store throws `STORE_ABSENT`).
 */
function layersFromStore(
  spec: ModelSpec,
  diff: CommitDiff,
  timeline: FederationTimeline,
  dir: string,
  explicit: boolean,
  note: (s: string) => void,
): LayerDiffStats[] | null {
  if (explicit) assertModelStore(dir);
  else if (!isModelStore(dir)) {
    note(`no model store at ${dir}: no layer statistics (give --store <dir>)`);
    return null;
  }
  const from = readStoredModel(dir, diff.from.commit);
  const to = readStoredModel(dir, diff.to.commit);
  if (from === null || to === null) {
    note(`${missingModelMessage(dir, from === null ? diff.from : diff.to, timeline)}; no layer statistics`);
    return null;
  }
  return layerDiffStats(spec, from, to);
}

/**
 * `cohort versions diff <a> <b> --config <file> --member <id> [--store <dir>] [--json]`: what changed
 * on the verified chain between two commits (refs as in `versions show`, either order): the rounds
 * decided in between (COMMIT and ABORT, contributors, reasons), the changes of the round parameters
 * (bits, clip, strategy, learning rate) and the rollbacks. With a model store holding both models
 * (`--store`, default `<paths.dataDir>/<member>` for a site) it adds, per layer of
 * `modelLayout(modelSpecFor(config))`, for W and b: ‖Δ‖₂, max |Δ|, ‖from‖₂, ‖to‖₂. When the store
 * lacks a model the statistics are left out with a note on stderr.
 *
 * `--json` prints `{ from, to: { hash, height, round, kind }, reversed,
 *   rounds: [{ round, outcome, kind, hash, height, sequence, unixMs, reason, contributors, voters,
 *              missing, rollbackTarget, rollbackTargetHeight }],
 *   params: { from, to }, paramChanges: [{ param, before, after, hash, height, round }],
 *   rollbacks: [{ hash, height, round, target, targetHeight }], store,
 *   layers: [{ layer, inputs, outputs, weight, bias: { name, count, l2Diff, maxAbsDiff, l2From, l2To } }] | null }`
 * (see `DiffJson` in versions-diff-format.ts).
 *
 * Exit 0; 2 for a bad ref, a `--store` that is no model store, or when it cannot run; 3 when the
 * log does not verify.
 */
export function registerVersionsDiffCommand(versions: Command, ctx: CliContext): void {
  addVersionsOptions(
    versions
      .command('diff')
      .description(
        'what changed between two commits: rounds, contributors, parameters, rollbacks, layer statistics',
      )
      .argument('<a>', 'commit: hash or unique prefix, HEAD, HEAD~n, or @<height>')
      .argument('<b>', 'the other commit')
      .option('--store <dir>', "a site's model store, for per-layer statistics (default: the site's own)")
      .option('--json', 'print a JSON object (fields in the command reference)'),
  ).action(async (a: string, b: string, flags: DiffFlags) => {
    await withVersionsSession(flags, ctx, async (session) => {
      const { timeline } = session;
      const diff = diffCommits(timeline, resolveRef(timeline.history, a), resolveRef(timeline.history, b));
      const choice = storeChoice(session, flags.store);
      const note = (s: string) => ctx.stderr.write(`note: ${s}\n`);
      const layers =
        choice === null
          ? null
          : layersFromStore(modelSpecFor(session.config), diff, timeline, choice.dir, choice.explicit, note);
      const store = layers === null ? null : choice!.dir;
      if (flags.json === true)
        ctx.stdout.write(`${JSON.stringify(diffJson(diff, store, layers), null, 2)}\n`);
      else
        ctx.stdout.write(
          diffLines(diff, layers, store)
            .map((l) => `${l}\n`)
            .join(''),
        );
    });
  });
}

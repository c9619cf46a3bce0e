import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { modelLayout } from '../../../federation/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  assertModelStore,
  EXPORT_FORMATS,
  exportMetadata,
  HistoryError,
  requireStoredModel,
  resolveRef,
} from '../../history/index.ts';
import { modelSpecFor } from '../../round/index.ts';
import { encodeSafetensors, modelTensors } from '../../versions/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { commitLabel } from './versions-format.ts';
import { addVersionsOptions, type VersionsFlags, withVersionsSession } from './versions-session.ts';
import { storeChoice } from './versions-store.ts';

interface ExportFlags extends VersionsFlags {
  format: string;
  out: string;
  store?: string;
  force?: boolean;
}

function exists(path: string): HistoryError {
  return new HistoryError('OUTPUT_EXISTS', `refusing to overwrite ${path} (pass --force to replace it)`, {
    details: { path },
  });
}

/**
 * Writes `bytes` to `path` whole or not at all: a temporary file beside it, then a rename over it
 * (`force`) or a hard link that fails when `path` exists (`OUTPUT_EXISTS`, even if it appeared
 * meanwhile). Other failures are `OUTPUT_UNWRITABLE`.
 */
function writeOutput(path: string, bytes: Uint8Array, force: boolean): void {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(temp, bytes, { flag: 'wx', mode: 0o644 });
    if (force) renameSync(temp, path);
    else linkSync(temp, path);
  } catch (cause) {
    if (!force && (cause as NodeJS.ErrnoException).code === 'EEXIST') throw exists(path);
    throw new HistoryError('OUTPUT_UNWRITABLE', `cannot write ${path}: ${(cause as Error).message}`, {
      cause,
      details: { path },
    });
  } finally {
    rmSync(temp, { force: true });
  }
}

/**
 * `cohort versions export <ref> --out <file> [--format safetensors] [--store <dir>] [--force]
 * --config <file> --member <id>`: writes the model of a commit of the verified chain (refs as in
 * `versions show`) as safetensors (`modelTensors`: `layers.<2k>.weight` [out, in] and
 * `layers.<2k>.bias`, float32), with {@link exportMetadata}. The model is read from a site's model
 * store (`--store`, default `<paths.dataDir>/<member>` for a site) without changing it, and checked
 * against the model hash the log recorded. Prints `exported @<height> <hash> (round r) to <file>: …`.
 *
 * Exit 0; 2 when the store does not hold the model (`MODEL_MISSING`: pruned, or a shallow store of
 * a site that joined from a snapshot; try another site or a newer commit), for a bad ref, a format
 * other than safetensors, an existing `--out` without `--force` (`OUTPUT_EXISTS`), or when it
 * cannot run; 3 when the log does not verify.
 */
export function registerVersionsExportCommand(versions: Command, ctx: CliContext): void {
  addVersionsOptions(
    versions
      .command('export')
      .description("write a commit's model from a site's model store as safetensors (PyTorch)")
      .argument('<ref>', 'commit: hash or unique prefix, HEAD, HEAD~n, or @<height>')
      .requiredOption('-o, --out <file>', 'file to write')
      .option('--format <format>', `output format (${EXPORT_FORMATS.join(', ')})`, 'safetensors')
      .option('--store <dir>', "a site's model store (default: the site's own)")
      .option('-f, --force', 'overwrite an existing file'),
  ).action(async (ref: string, flags: ExportFlags) => {
    if (!(EXPORT_FORMATS as readonly string[]).includes(flags.format)) {
      throw new InvalidArgumentError(
        `--format ${flags.format} is not supported (supported: ${EXPORT_FORMATS.join(', ')})`,
        { details: { name: 'format' } },
      );
    }
    if (flags.force !== true && existsSync(flags.out)) throw exists(flags.out);
    await withVersionsSession(flags, ctx, async (session) => {
      const { timeline } = session;
      const commit = resolveRef(timeline.history, ref);
      const choice = storeChoice(session, flags.store);
      if (choice === null) {
        throw new InvalidArgumentError(
          `--store <dir> is needed: ${session.member.member} is the ${session.member.role}, which keeps no model store`,
          { details: { name: 'store' } },
        );
      }
      assertModelStore(choice.dir);
      const parameters = requireStoredModel(choice.dir, commit, timeline);
      const spec = modelSpecFor(session.config);
      const bytes = encodeSafetensors(
        modelTensors(spec, parameters),
        exportMetadata(session.config, spec, commit),
      );
      writeOutput(flags.out, bytes, flags.force === true);
      ctx.stdout.write(
        `exported ${commitLabel(commit)} (round ${commit.commit.round}, model ${spec.name}) to ${flags.out}: ${2 * modelLayout(spec).layers.length} tensors, ${bytes.length} bytes\n`,
      );
    });
  });
}

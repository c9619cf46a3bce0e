import { randomBytes } from 'node:crypto';
import { mkdirSync, statSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { TrainerError } from './trainer-error.ts';
import type { TrainerAction } from './trainer-protocol.ts';

/**
 * Names of the per-call folders: `call-<unix ms, 15 digits>-<sequence, 6 digits>-<random>-<action>`,
 * so that name order is creation order. Nothing else in `workDir` is ever deleted.
 */
const CALL_FOLDER = /^call-\d{15}-\d{6}-[0-9a-f]{8}-(describe|statistics|train|evaluate)$/;

/**
 * Checks (creating it, mode 0700, when missing) that `workDir` is a directory only its owner can
 * enter: the trainer's folders hold the site's model and results.
 *
 * @throws TrainerError `TRAINER_WORKDIR` naming the folder.
 */
export function preparePrivateFolder(workDir: string): void {
  try {
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new TrainerError(
      'TRAINER_WORKDIR',
      `cannot create workDir ${workDir}: ${(cause as Error).message}`,
      {
        cause,
        details: { workDir },
      },
    );
  }
  const stat = statSync(workDir);
  if (!stat.isDirectory()) {
    throw new TrainerError('TRAINER_WORKDIR', `workDir ${workDir} is not a directory`, {
      details: { workDir },
    });
  }
  if ((stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
    throw new TrainerError(
      'TRAINER_WORKDIR',
      `workDir ${workDir} has mode ${mode}; it holds site-private data and must be private (chmod 0700)`,
      { details: { workDir, mode } },
    );
  }
}

/**
 * The per-call folders under one `workDir`: a fresh private folder for each call, deleted when the
 * call succeeds, kept when it fails, keeping at most `keepFailed` of those (the newest).
 */
export class CallFolders {
  readonly #root: string;
  readonly #keepFailed: number;
  readonly #active = new Set<string>();
  #sequence = 0;

  constructor(root: string, keepFailed: number) {
    this.#root = root;
    this.#keepFailed = keepFailed;
  }

  /** A new empty folder (mode 0700) for one `action` call; its absolute path. */
  async create(action: TrainerAction): Promise<string> {
    this.#sequence = (this.#sequence + 1) % 1_000_000;
    const name = [
      'call',
      String(Date.now()).padStart(15, '0'),
      String(this.#sequence).padStart(6, '0'),
      randomBytes(4).toString('hex'),
      action,
    ].join('-');
    const dir = join(this.#root, name);
    try {
      await mkdir(dir, { mode: 0o700 });
    } catch (cause) {
      throw new TrainerError('TRAINER_WORKDIR', `cannot create ${dir}: ${(cause as Error).message}`, {
        cause,
        details: { workDir: this.#root, callDir: dir },
      });
    }
    this.#active.add(dir);
    return dir;
  }

  /** The call in `dir` succeeded: its folder goes (best effort). */
  async succeeded(dir: string): Promise<void> {
    this.#active.delete(dir);
    await removeQuietly(dir);
  }

  /** The call in `dir` failed: its folder stays for debugging; older failed ones beyond the bound go. */
  async failed(dir: string): Promise<void> {
    this.#active.delete(dir);
    let names: string[];
    try {
      names = await readdir(this.#root);
    } catch {
      return;
    }
    const kept = names.filter((n) => CALL_FOLDER.test(n) && !this.#active.has(join(this.#root, n))).sort();
    const excess = kept.slice(0, Math.max(0, kept.length - this.#keepFailed));
    await Promise.all(excess.map((n) => removeQuietly(join(this.#root, n))));
  }
}

/** Best-effort removal: a folder that cannot be removed must not turn a finished call into a failure. */
async function removeQuietly(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch {
    // Left for the next prune (or the operator); the call's outcome stands.
  }
}

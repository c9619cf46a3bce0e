import { join } from 'node:path';
import { assertFiniteArray, assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { listDir, readFileOrNull, removeFileDurable, renameDurable, writeFileAtomic } from './atomic-file.ts';
import { modelFileParts, readModelFile } from './model-file.ts';

/** The error-feedback residual in the store directory. */
export const RESIDUAL_FILE = 'residual.f32';

const PENDING_NAME = /^pending-residual-(0|[1-9][0-9]{0,15})\.f32$/;

/**
 * The error-feedback residual of a store directory (`residual.f32`) and the residuals staged per
 * round (`pending-residual-<round>.f32`), all model files (magic "CMDL", SHA-256). The pending files
 * sit in the same directory as `residual.f32`, so applying one is a single rename over it: that one
 * step makes it the residual and removes the pending name. The round is in the file name only.
 *
 * Arguments are checked here, with the names of the `ModelStore` methods that delegate to it.
 */
export class ResidualFiles {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Durably replaces the residual. */
  save(residual: Float32Array): void {
    assertResidual('residual', residual);
    writeFileAtomic(this.#dir, RESIDUAL_FILE, modelFileParts(residual));
  }

  /** The residual, verified, or `null`. */
  load(): Float32Array | null {
    return readVerified(this.#dir, RESIDUAL_FILE);
  }

  /** Durably writes (or replaces) the residual pending for `round`. */
  stage(round: number, residual: Float32Array): void {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    assertResidual('residual', residual);
    writeFileAtomic(this.#dir, pendingName(round), modelFileParts(residual));
  }

  /** Rounds with a pending residual, ascending. */
  pendingRounds(): number[] {
    const rounds: number[] = [];
    for (const name of listDir(this.#dir)) {
      const match = PENDING_NAME.exec(name);
      if (match !== null && Number.isSafeInteger(Number(match[1]))) rounds.push(Number(match[1]));
    }
    return rounds.sort((a, b) => a - b);
  }

  /**
   * `apply`: verifies the pending file, then renames it over `residual.f32`; `!apply`: removes it.
   * False when nothing is pending for `round`. A corrupt pending file is never applied
   * (`STORE_CORRUPT`, the file stays) but can be discarded.
   */
  resolve(round: number, apply: boolean): boolean {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    if (typeof apply !== 'boolean') {
      throw new InvalidArgumentError(`apply must be a boolean, got ${String(apply)}`, {
        details: { name: 'apply' },
      });
    }
    const name = pendingName(round);
    if (!apply) return removeFileDurable(this.#dir, name);
    if (readVerified(this.#dir, name) === null) return false;
    return renameDurable(this.#dir, name, RESIDUAL_FILE);
  }

  /** Durably removes `residual.f32`; pending residuals stay. */
  clear(): void {
    removeFileDurable(this.#dir, RESIDUAL_FILE);
  }
}

function pendingName(round: number): string {
  return `pending-residual-${round}.f32`;
}

function readVerified(dir: string, name: string): Float32Array | null {
  const path = join(dir, name);
  const bytes = readFileOrNull(path);
  return bytes === null ? null : readModelFile(bytes, path);
}

function assertResidual(name: string, residual: Float32Array): void {
  if (!(residual instanceof Float32Array)) {
    throw new InvalidArgumentError(`${name} must be a Float32Array`, { details: { name } });
  }
  assertFiniteArray(name, residual);
}

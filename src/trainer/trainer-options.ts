import { resolve } from 'node:path';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { preparePrivateFolder } from './call-folders.ts';

/** Default `killGraceMs`: time between SIGTERM and SIGKILL. */
export const DEFAULT_KILL_GRACE_MS = 5000;
/** Default `keepFailedCalls`: failed per-call folders kept for debugging. */
export const DEFAULT_KEEP_FAILED_CALLS = 3;
/** Default `maxResultJsonBytes` (4 MiB: a 1,000-class confusion matrix fits). */
export const DEFAULT_MAX_RESULT_JSON_BYTES = 4 * 1024 * 1024;
/** Largest safetensors header accepted in result.safetensors (1 MiB), on top of 4 bytes per parameter. */
export const MAX_RESULT_HEADER_BYTES = 1024 * 1024;

/** How to run a site's own trainer (docs/trainer-protocol.md). */
export interface ExternalTrainerOptions {
  /**
   * The program and its arguments (argv; no shell), e.g. `["/usr/bin/python3",
   * "examples/pytorch/cohort_trainer.py", "--csv", "site.csv", "--label-column", "label"]`. The
   * absolute path of the call's request.json is appended as the last argument. At least one entry.
   */
  readonly command: readonly string[];
  /**
   * A site-private folder for the per-call folders; created with mode 0700 when missing, refused
   * when group or others can access it.
   */
  readonly workDir: string;
  /** Wall-clock limit of one call (ms, integer in [1, 2^31 − 1]); past it the process group is killed. */
  readonly timeoutMs: number;
  /**
   * Variables for the trainer, on top of the few it inherits (PATH, HOME, USER, LOGNAME, LANG,
   * LANGUAGE, TZ, TMPDIR, LC_*); nothing else of the agent's environment is passed.
   */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory of the trainer (default: the agent's); relative paths in `command` resolve there. */
  readonly cwd?: string;
  /** Time between SIGTERM and SIGKILL (ms, integer ≥ 0; default {@link DEFAULT_KILL_GRACE_MS}). */
  readonly killGraceMs?: number;
  /** Failed per-call folders kept for debugging (integer in [0, 1000]; default {@link DEFAULT_KEEP_FAILED_CALLS}). */
  readonly keepFailedCalls?: number;
  /** Largest result.json accepted (bytes, integer ≥ 1; default {@link DEFAULT_MAX_RESULT_JSON_BYTES}). */
  readonly maxResultJsonBytes?: number;
}

/** {@link ExternalTrainerOptions} checked, with defaults filled and `workDir` absolute. */
export interface CheckedOptions {
  readonly command: readonly string[];
  readonly workDir: string;
  readonly timeoutMs: number;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly cwd: string | undefined;
  readonly killGraceMs: number;
  readonly keepFailedCalls: number;
  readonly maxResultJsonBytes: number;
}

function argument(name: string, message: string): InvalidArgumentError {
  return new InvalidArgumentError(`${name} ${message}`, { details: { name } });
}

function assertText(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.includes('\0')) {
    throw argument(name, 'must be a non-empty string without NUL characters');
  }
}

/**
 * Checks `options` (naming the option), fills the defaults, and prepares `workDir` (created 0700,
 * refused when group or others can open it).
 */
export function checkedOptions(options: ExternalTrainerOptions): CheckedOptions {
  if (options === null || typeof options !== 'object') throw argument('options', 'must be an object');
  const { command, workDir, timeoutMs, env, cwd } = options;
  if (!Array.isArray(command) || command.length === 0) {
    throw argument('options.command', 'must be a non-empty array (program, then arguments)');
  }
  command.forEach((arg: unknown, i) => {
    assertText(`options.command[${i}]`, arg);
  });
  assertText('options.workDir', workDir);
  assertInteger('options.timeoutMs', timeoutMs, 1, 2 ** 31 - 1);
  if (env !== undefined) {
    if (env === null || typeof env !== 'object' || Array.isArray(env)) {
      throw argument('options.env', 'must be an object of strings');
    }
    for (const [key, value] of Object.entries(env)) {
      assertText(`options.env key ${JSON.stringify(key)}`, key);
      if (key.includes('='))
        throw argument(`options.env[${JSON.stringify(key)}]`, 'key must not contain "="');
      if (typeof value !== 'string' || value.includes('\0')) {
        throw argument(`options.env[${JSON.stringify(key)}]`, 'must be a string without NUL characters');
      }
    }
  }
  if (cwd !== undefined) assertText('options.cwd', cwd);
  const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  assertInteger('options.killGraceMs', killGraceMs, 0, 2 ** 31 - 1);
  const keepFailedCalls = options.keepFailedCalls ?? DEFAULT_KEEP_FAILED_CALLS;
  assertInteger('options.keepFailedCalls', keepFailedCalls, 0, 1000);
  const maxResultJsonBytes = options.maxResultJsonBytes ?? DEFAULT_MAX_RESULT_JSON_BYTES;
  assertInteger('options.maxResultJsonBytes', maxResultJsonBytes, 1, 2 ** 31 - 1);
  const absolute = resolve(workDir);
  preparePrivateFolder(absolute);
  return {
    command: [...command],
    workDir: absolute,
    timeoutMs,
    env: env === undefined ? undefined : { ...env },
    cwd,
    killGraceMs,
    keepFailedCalls,
    maxResultJsonBytes,
  };
}

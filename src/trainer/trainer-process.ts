import { spawn } from 'node:child_process';
import { TrainerError } from './trainer-error.ts';

/** Bytes of stderr kept for error messages: the end of the trainer's output, where a traceback ends. */
export const STDERR_TAIL_BYTES = 4096;

/** How {@link runTrainerProcess} runs one trainer call. */
export interface TrainerProcessOptions {
  /** argv: program, then its arguments (the request path already appended). No shell. */
  readonly argv: readonly string[];
  /** The process's environment, exactly (nothing else is inherited). */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory; undefined runs it in the agent's own. */
  readonly cwd: string | undefined;
  /** Wall-clock limit (ms, integer ≥ 1) from the start to the exit. */
  readonly timeoutMs: number;
  /** Time (ms, integer ≥ 0) between SIGTERM and SIGKILL to the process group on a timeout or abort. */
  readonly killGraceMs: number;
  /** Aborts the call: the process group is killed as on a timeout. */
  readonly signal: AbortSignal | undefined;
  /** Names the call in messages (`train (round 3)`). */
  readonly label: string;
  /** Extra context for every error's details (the per-call folder). */
  readonly details: Readonly<Record<string, unknown>>;
}

/** The last {@link STDERR_TAIL_BYTES} bytes written to a stream, as UTF-8 (lossy at the cut). */
class TailBuffer {
  #chunks: Buffer[] = [];
  #length = 0;

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    while (this.#chunks.length > 1 && this.#length - this.#chunks[0]!.length >= STDERR_TAIL_BYTES) {
      this.#length -= this.#chunks.shift()!.length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.#chunks);
    return all.subarray(Math.max(0, all.length - STDERR_TAIL_BYTES)).toString('utf8');
  }
}

/** How long, after the trainer exits, the agent waits for leftover holders of its stderr pipe. */
const PIPE_DRAIN_MS = 2000;

/**
 * Runs the trainer in a process group of its own (detached), stdin and stdout ignored, stderr
 * captured (last {@link STDERR_TAIL_BYTES} bytes), and resolves with the stderr tail when it exits 0.
 * On `timeoutMs` or `signal` the whole group gets SIGTERM, then SIGKILL after `killGraceMs`; once
 * the trainer exits, whatever it left in its group is SIGKILLed, so no helper outlives the call.
 *
 * @throws TrainerError `TRAINER_SPAWN_FAILED`, `TRAINER_EXIT` (nonzero code or signal, with the
 *   stderr tail in the message), `TRAINER_TIMEOUT`, `TRAINER_ABORTED`.
 */
export function runTrainerProcess(options: TrainerProcessOptions): Promise<{ stderrTail: string }> {
  const { argv, env, cwd, timeoutMs, killGraceMs, signal, label, details } = options;
  if (signal?.aborted === true) {
    return Promise.reject(
      new TrainerError('TRAINER_ABORTED', `trainer ${label} aborted before it started`, {
        cause: signal.reason,
        details,
      }),
    );
  }
  return new Promise((resolve, reject) => {
    const tail = new TailBuffer();
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      env: { ...env },
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.on('data', (chunk: Buffer) => tail.push(chunk));
    child.stderr.on('error', () => {});

    let stopped: 'timeout' | 'abort' | undefined;
    let exited = false;
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;

    const killGroup = (sig: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const stop = (why: 'timeout' | 'abort'): void => {
      if (exited || stopped !== undefined) return;
      stopped = why;
      killGroup('SIGTERM');
      graceTimer = setTimeout(() => killGroup('SIGKILL'), killGraceMs);
    };
    const onAbort = (): void => stop('abort');
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    const finish = (error: TrainerError | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      clearTimeout(drainTimer);
      signal?.removeEventListener('abort', onAbort);
      if (error === undefined) resolve({ stderrTail: tail.text() });
      else reject(error);
    };

    child.once('error', (cause) => {
      if (child.pid !== undefined) return; // a kill failure on a running child; 'close' decides
      finish(
        new TrainerError(
          'TRAINER_SPAWN_FAILED',
          `cannot start trainer ${JSON.stringify(argv[0])} for ${label}: ${cause.message}`,
          { cause, details: { ...details, command: argv[0] } },
        ),
      );
    });
    child.once('exit', () => {
      exited = true;
      clearTimeout(timer);
      // Helpers the trainer left in its group (data loader workers) die with the call. The group
      // id cannot be reused while any member lives, so this reaches only the trainer's own.
      killGroup('SIGKILL');
      // A helper that left the group may still hold stderr open; stop waiting for it after a while.
      drainTimer = setTimeout(() => child.stderr.destroy(), PIPE_DRAIN_MS);
    });
    child.once('close', (code, sig) => {
      const stderrTail = tail.text();
      const withTail = (message: string): string =>
        stderrTail.length === 0
          ? message
          : `${message}; stderr (last ${STDERR_TAIL_BYTES} bytes):\n${stderrTail}`;
      const errorDetails = { ...details, exitCode: code, signal: sig, stderrTail };
      if (stopped === 'timeout') {
        finish(
          new TrainerError(
            'TRAINER_TIMEOUT',
            withTail(
              `trainer ${label} ran past its ${timeoutMs} ms limit; its process group was killed (SIGTERM, then SIGKILL after ${killGraceMs} ms)`,
            ),
            { details: { ...errorDetails, timeoutMs } },
          ),
        );
      } else if (stopped === 'abort') {
        finish(
          new TrainerError('TRAINER_ABORTED', `trainer ${label} aborted; its process group was killed`, {
            cause: signal?.reason,
            details: errorDetails,
          }),
        );
      } else if (code !== 0) {
        const how = code === null ? `was killed by ${sig ?? 'a signal'}` : `exited with code ${code}`;
        finish(
          new TrainerError('TRAINER_EXIT', withTail(`trainer ${label} ${how}`), { details: errorDetails }),
        );
      } else {
        finish(undefined);
      }
    });
  });
}

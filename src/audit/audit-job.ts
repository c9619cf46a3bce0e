import { type ChildProcess, fork } from 'node:child_process';
import { setPriority } from 'node:os';
import { PassThrough, type Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { assertInteger, type CohortError, InvalidArgumentError } from '../errors/index.ts';
import { moduleUrl } from '../files/index.ts';
import { AUDIT_ERROR_CODES, AuditError, type AuditErrorCode } from './audit-error.ts';
import { AuditJobError } from './audit-job-error.ts';
import {
  AUDIT_DATA_FD,
  type AuditBundleJobOptions,
  type AuditJobMessage,
  type AuditJobRequest,
  type AuditJobTarget,
  type AuditVerifyJobOptions,
} from './audit-job-protocol.ts';
import type { AuditReport } from './audit-report.ts';
import type { ExportedBundleSummary } from './export-bundle.ts';

const CHILD = fileURLToPath(moduleUrl('./audit-child.ts', import.meta.url));

/** Default V8 heap of an audit process, MiB: a bundle is streamed, so this bounds an audit's own state. */
export const DEFAULT_AUDIT_HEAP_MB = 512;
/** Niceness of an audit process: the coordinator (the lease holder) gets the CPU first. */
export const AUDIT_NICENESS = 10;
/** Bytes of the audit process's stderr kept for error messages. */
const STDERR_TAIL = 2048;

/** How an audit job runs. */
export interface AuditJobOptions {
  /** Stops the job: its process is killed, the job fails with `AUDIT_JOB_ABORTED`. */
  readonly signal?: AbortSignal;
  /** The process's V8 heap, MiB (default {@link DEFAULT_AUDIT_HEAP_MB}); past it the process dies, not the caller. */
  readonly maxHeapMb?: number;
}

/** A bundle job under way. */
export interface AuditBundleJob {
  /**
   * The bundle's bytes, as the audit process produces them: it writes only as fast as this is
   * read. Ends once the process reported success; errors (never ends cleanly) when it failed or
   * was aborted, so a bundle cut short is never taken for a whole one.
   */
  readonly body: Readable;
  /** The export's summary once the process finished; rejects as `body` errors. */
  readonly done: Promise<ExportedBundleSummary>;
  /** The audit process's id. */
  readonly pid: number;
}

/** A forked audit process and its one answer. */
interface Spawned {
  readonly child: ChildProcess;
  readonly answer: Promise<AuditJobMessage & { type: 'bundle' | 'verify' }>;
}

function assertTarget(target: AuditJobTarget): void {
  if (typeof target !== 'object' || target === null || typeof target.member !== 'string') {
    throw new InvalidArgumentError('request.target needs a configuration and a member', {
      details: { name: 'request.target' },
    });
  }
}

/** The error of an `error` answer: the audit's own codes keep their class, anything else fails the job. */
function errorOf(message: { code: string; message: string }): CohortError {
  if ((AUDIT_ERROR_CODES as readonly string[]).includes(message.code)) {
    return new AuditError(message.code as AuditErrorCode, message.message);
  }
  return new AuditJobError('AUDIT_JOB_FAILED', `the audit failed: ${message.code}: ${message.message}`, {
    details: { cause: message.code },
  });
}

function spawnAuditChild(request: AuditJobRequest, options: AuditJobOptions): Spawned {
  const heap = options.maxHeapMb ?? DEFAULT_AUDIT_HEAP_MB;
  assertInteger('options.maxHeapMb', heap, 64, 65_536);
  const child = fork(CHILD, [], {
    execArgv: [`--max-old-space-size=${heap}`],
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'advanced',
  });
  if (child.pid !== undefined) {
    try {
      setPriority(child.pid, AUDIT_NICENESS);
    } catch {
      // not permitted here: it still runs outside the coordinator's event loop and heap
    }
  }
  let tail = '';
  child.stderr?.on('data', (d: Buffer) => {
    tail = (tail + d.toString('utf8')).slice(-STDERR_TAIL);
  });
  const answer = new Promise<AuditJobMessage & { type: 'bundle' | 'verify' }>((resolve, reject) => {
    let message: AuditJobMessage | undefined;
    const abort = () => {
      child.kill('SIGKILL');
      reject(
        new AuditJobError('AUDIT_JOB_ABORTED', `the audit job was stopped: ${reasonOf(options.signal)}`),
      );
    };
    child.on('message', (m: AuditJobMessage) => {
      message ??= m;
    });
    child.once('error', (err) => {
      reject(
        new AuditJobError('AUDIT_JOB_FAILED', `the audit process did not start: ${err.message}`, {
          cause: err,
        }),
      );
    });
    child.once('exit', (code, signal) => {
      options.signal?.removeEventListener('abort', abort);
      if (message?.type === 'error') return reject(errorOf(message));
      if (message !== undefined && code === 0) return resolve(message);
      const last = tail.trim().split('\n').at(-1) ?? '';
      reject(
        new AuditJobError(
          'AUDIT_JOB_FAILED',
          `the audit process ended (${signal ?? `exit ${code}`}) without an answer${last === '' ? '' : `: ${last}`}`,
          { details: { code, signal, stderr: tail } },
        ),
      );
    });
    if (options.signal?.aborted === true) abort();
    else options.signal?.addEventListener('abort', abort, { once: true });
  });
  answer.catch(() => undefined); // the caller awaits it; never an unhandled rejection meanwhile
  child.send(request);
  return { child, answer };
}

function reasonOf(signal: AbortSignal | undefined): string {
  const r: unknown = signal?.reason;
  return r instanceof Error ? r.message : typeof r === 'string' ? r : 'aborted';
}

/**
 * Exports an audit bundle of the live log in a child process of its own (heap `maxHeapMb`, niced),
 * reading with `target.member`'s NATS credentials on a connection of its own; resolves once its
 * first bytes are there (or rejects with why it could not start: `AuditError` codes such as
 * `AUDIT_SOURCE_UNAVAILABLE` and `AUDIT_TRUST_MISSING`, or `AuditJobError`). The bundle streams
 * through `body` with backpressure: the process writes only as fast as `body` is read, so neither
 * process holds the bundle. Aborting `signal` kills the process at once.
 */
export async function startAuditBundleJob(
  target: AuditJobTarget,
  jobOptions: AuditBundleJobOptions,
  options: AuditJobOptions = {},
): Promise<AuditBundleJob> {
  assertTarget(target);
  const { child, answer } = spawnAuditChild({ kind: 'bundle', target, options: jobOptions }, options);
  const data = child.stdio[AUDIT_DATA_FD] as Readable;
  const body = new PassThrough();
  let started = false;
  let dataEnded = false;
  let summary: ExportedBundleSummary | undefined;
  const settle = () => {
    if (dataEnded && summary !== undefined) body.end();
  };
  const done = answer.then((m) => {
    if (m.type !== 'bundle')
      throw new AuditJobError('AUDIT_JOB_FAILED', 'the audit process answered a verify');
    return m.summary;
  });
  done.then(
    (s) => {
      summary = s;
      settle();
    },
    // Not started: the caller gets the error from the promise and never sees `body`.
    (err: unknown) => body.destroy(started ? (err as Error) : undefined),
  );
  // Whoever reads `body` no longer: the process has nothing to write to.
  body.once('close', () => {
    if (summary === undefined) child.kill('SIGKILL');
  });
  return await new Promise<AuditBundleJob>((resolve, reject) => {
    data.on('data', (chunk: Buffer) => {
      if (!started) {
        started = true;
        resolve({ body, done, pid: child.pid ?? 0 });
      }
      if (!body.write(chunk)) {
        data.pause();
        body.once('drain', () => data.resume());
      }
    });
    data.once('end', () => {
      dataEnded = true;
      settle();
    });
    data.once('error', (err) => body.destroy(started ? err : undefined));
    done.catch((err: unknown) => {
      if (!started) reject(err);
    });
  });
}

/**
 * Audits the live log (`verifyAudit`) in a child process of its own, as {@link startAuditBundleJob}
 * runs an export; resolves with the report.
 */
export async function runAuditVerifyJob(
  target: AuditJobTarget,
  jobOptions: AuditVerifyJobOptions,
  options: AuditJobOptions = {},
): Promise<AuditReport> {
  assertTarget(target);
  const m = await spawnAuditChild({ kind: 'verify', target, options: jobOptions }, options).answer;
  if (m.type !== 'verify') throw new AuditJobError('AUDIT_JOB_FAILED', 'the audit process answered a bundle');
  return m.report;
}

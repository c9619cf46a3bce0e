import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import { canonicalJson } from '../../data/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { AdminActionBody } from '../../protocol/index.ts';
import {
  bytesToHex,
  type Commit,
  hexToBytes,
  readFileOrNull,
  writeFileAtomic,
} from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import {
  ADMIN_ACTION_COORDINATOR_START,
  ensureLogStream,
  FederationLogError,
  type FederationLogReader,
  type FederationLogWriter,
  type LogEntry,
  LogHistory,
  type LogRecordInput,
  MEMBER_RETAIN_ROUNDS,
  openLogReader,
  openLogWriter,
} from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';
import { acquireLease, type Lease } from '../store/index.ts';

/** The coordinator's hold on the federation log: the lease, the verified history, the writer. */
export interface CoordinatorLog {
  /** The history folded from every entry, kept current with each append. */
  readonly history: LogHistory;
  readonly reader: FederationLogReader;
  readonly lease: Lease;
  /**
   * Appends one record (appends are serialized), folds it into {@link history} and records the
   * new tail in the coordinator's data folder. Checks the lease first.
   */
  append(record: LogRecordInput): Promise<LogEntry>;
  /**
   * Appends an admin action (docs/admin-api.md) through {@link append}, so it is serialized with
   * the coordinator's other appends and signed like them.
   *
   * @throws InvalidArgumentError when `action` names no action or caller, or its arguments exceed
   *   {@link ADMIN_ACTION_MAX_ARGUMENT_BYTES}; the log's errors otherwise.
   */
  appendAdminAction(action: AdminActionBody): Promise<LogEntry>;
  /** Releases the lease. */
  close(): Promise<void>;
}

const TAIL_FILE = 'log-tail.json';
/** Scans of the log a starting coordinator makes before its start record lands on the tail. */
const CLAIM_ATTEMPTS = 3;

/** Largest `arguments` of a logged admin action, bytes (they summarize a request, never carry key material). */
export const ADMIN_ACTION_MAX_ARGUMENT_BYTES = 4096;

/**
 * Opens the log for the coordinator (one writer: ARCHITECTURE.md, "Recovery, history and one
 * writer"):
 *
 * 1. takes the coordinator lease (KV bucket `cohort-F-lease`), waiting up to `leaseWaitMs` for a
 *    live holder's lease to expire, else `LEASE_HELD`: a second coordinator never gets further;
 * 2. creates or checks the log stream (`LOG_STREAM_MISMATCH` for wrong settings);
 * 3. reads every entry, verifying signatures, the hash chain and the history rules
 *    ({@link LogHistory}, with the pinned registry: registry changes verified and folded), so a
 *    forked or reordered log is refused before anything is appended; from then on the member's
 *    key lookups follow the history's registry view;
 * 4. compares the log with the tail this coordinator recorded after its last append
 *    (`<dataDir>/<member>/log-tail.json`): a log that lacks that entry was lost or truncated, and
 *    is refused with `LOG_BEHIND` instead of silently restarting the history;
 * 5. positions the writer at the last entry read: its appends are fenced on that sequence;
 * 6. appends a `coordinator.start` admin action ({@link ADMIN_ACTION_COORDINATOR_START}) that claims
 *    the tail: an append a paused predecessor prepared under its lapsed lease is refused from now
 *    on. When such an append landed after the scan, the log is read again (up to three times).
 *
 * Every append checks the lease before each publish attempt, retries included.
 */
export async function openCoordinatorLog(
  ctx: MemberContext,
  genesis: Commit,
  options: { leaseWaitMs: number; onLeaseLost: (err: unknown) => void; now: () => number },
): Promise<CoordinatorLog> {
  const cfg = ctx.config;
  const nc = ctx.transport.connection;
  const federation = cfg.federation.id;
  const lease = await acquireLease(nc, {
    bucket: ctx.subjects.leaseBucket,
    holder: ctx.member,
    ttlMs: cfg.history.leaseMs,
    waitMs: options.leaseWaitMs,
    replicas: cfg.history.replicas,
    now: options.now,
    onLost: options.onLeaseLost,
  });
  try {
    const jsm = await jetstreamManager(nc);
    await ensureLogStream(jsm, {
      federation,
      replicas: cfg.history.replicas,
      maxBytes: cfg.history.logMaxBytes,
    });
    const reader = await openLogReader(nc, { federation, coordinator: ctx.member, keys: ctx.keys });
    const dir = join(cfg.paths.dataDir, ctx.member);
    mkdirSync(dir, { recursive: true });
    for (let attempt = 1; ; attempt++) {
      const history = new LogHistory(
        genesis,
        reader.stream,
        ctx.signedRegistry === undefined
          ? { keepEvidence: false, retainRounds: MEMBER_RETAIN_ROUNDS }
          : { registry: ctx.signedRegistry, keepEvidence: false, retainRounds: MEMBER_RETAIN_ROUNDS },
      );
      for await (const entry of reader.entries()) history.apply(entry);
      // The member's key lookups follow the registry as this history folds it (docs/key-ceremony.md).
      if (history.registry !== undefined) ctx.followRegistry(history.registry);
      await checkRecordedTail(dir, reader, history);
      const writer = await openLogWriter(nc, {
        federation,
        signer: ctx.member,
        signing: ctx.signing,
        start: history.position,
        now: options.now,
        // Every attempt, retries included: a lease that expired while an append waited to retry
        // (the process paused, the server away) stops it before it can publish again.
        beforeAttempt: (record) => {
          lease.assertHeld();
          // Tests: a coordinator paused between its check and its publish (its lease lapses right
          // there while a standby takes over: test/recovery/coordinator-pause.test.ts).
          if (record.roundOpen) failpoint('log.round-open-checked', record.roundOpen.round);
        },
        // An append reported unavailable that landed after all: fold it in (a record the history
        // refuses fences the writer, and the coordinator stops); the append that found it is
        // refused with LOG_LATE_ENTRY, and its caller builds its record again or stops.
        onLateEntry: (entry) => log.took(entry),
      });
      const log: LeasedLog = new LeasedLog(history, reader, writer, lease, dir);
      try {
        await log.append({
          adminAction: {
            action: ADMIN_ACTION_COORDINATOR_START,
            caller: ctx.member,
            scope: 'lease',
            target: lease.instance,
            arguments: new TextEncoder().encode(
              canonicalJson({ instance: lease.instance, leaseExpiresUnixMs: lease.expiresUnixMs() }),
            ),
            unixMs: options.now(),
          },
        });
        return log;
      } catch (err) {
        // A predecessor's append landed after the scan (it prepared it before its lease lapsed,
        // and cannot prepare another): read the log again and claim the new tail.
        const conflict = err instanceof FederationLogError && err.code === 'LOG_SEQUENCE_CONFLICT';
        if (!conflict || attempt >= CLAIM_ATTEMPTS) throw err;
      }
    }
  } catch (err) {
    await lease.release().catch(() => undefined);
    throw err;
  }
}

async function checkRecordedTail(
  dir: string,
  reader: FederationLogReader,
  history: LogHistory,
): Promise<void> {
  const bytes = readFileOrNull(join(dir, TAIL_FILE));
  if (bytes === null) return;
  let recorded: { sequence: number; hash: Uint8Array };
  try {
    const json = JSON.parse(new TextDecoder().decode(bytes)) as { sequence: unknown; hash: unknown };
    if (!Number.isSafeInteger(json.sequence) || typeof json.hash !== 'string') throw new Error('bad fields');
    recorded = { sequence: json.sequence as number, hash: hexToBytes('hash', json.hash, 32) };
  } catch (cause) {
    throw new FederationLogError(
      'LOG_BEHIND',
      `${join(dir, TAIL_FILE)} is unreadable; move it aside to accept the log as it is`,
      {
        cause,
      },
    );
  }
  const behind = () =>
    new FederationLogError(
      'LOG_BEHIND',
      `log ${reader.stream} ends at entry ${history.position.sequence}, but this coordinator appended entry ${recorded.sequence} (${bytesToHex(recorded.hash).slice(0, 12)}): the log was lost or truncated; refusing to continue on it`,
      { details: { stream: reader.stream, last: history.position.sequence, recorded: recorded.sequence } },
    );
  if (history.position.sequence < recorded.sequence) throw behind();
  if (recorded.sequence === 0) return;
  const entry = await reader.get(recorded.sequence);
  if (!bytesEqual(entry.hash, recorded.hash)) throw behind();
}

class LeasedLog implements CoordinatorLog {
  readonly history: LogHistory;
  readonly reader: FederationLogReader;
  readonly lease: Lease;
  readonly #writer: FederationLogWriter;
  readonly #dir: string;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    history: LogHistory,
    reader: FederationLogReader,
    writer: FederationLogWriter,
    lease: Lease,
    dir: string,
  ) {
    this.history = history;
    this.reader = reader;
    this.#writer = writer;
    this.lease = lease;
    this.#dir = dir;
  }

  append(record: LogRecordInput): Promise<LogEntry> {
    const run = this.#queue.then(async () => {
      this.lease.assertHeld();
      const entry = await this.#writer.append(record);
      this.took(entry);
      return entry;
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Folds an entry this coordinator appended into the history and records the new tail. */
  took(entry: LogEntry): void {
    this.history.apply(entry);
    writeFileAtomic(this.#dir, TAIL_FILE, [
      new TextEncoder().encode(
        `${JSON.stringify({ sequence: entry.sequence, hash: bytesToHex(entry.hash) })}\n`,
      ),
    ]);
  }

  appendAdminAction(action: AdminActionBody): Promise<LogEntry> {
    if (typeof action?.action !== 'string' || action.action.length === 0 || action.action.length > 64) {
      return Promise.reject(
        new InvalidArgumentError('action.action must be 1-64 characters', { details: { name: 'action' } }),
      );
    }
    if (typeof action.caller !== 'string' || action.caller.length === 0 || action.caller.length > 64) {
      return Promise.reject(
        new InvalidArgumentError('action.caller must be 1-64 characters', { details: { name: 'caller' } }),
      );
    }
    if (
      !(action.arguments instanceof Uint8Array) ||
      action.arguments.length > ADMIN_ACTION_MAX_ARGUMENT_BYTES
    ) {
      return Promise.reject(
        new InvalidArgumentError(
          `action.arguments must be at most ${ADMIN_ACTION_MAX_ARGUMENT_BYTES} bytes`,
          {
            details: { name: 'arguments' },
          },
        ),
      );
    }
    return this.append({ adminAction: action });
  }

  async close(): Promise<void> {
    await this.#queue;
    await this.lease.release();
  }
}

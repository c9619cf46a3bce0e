import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import type { SigningKeyPair } from '../../../crypto/signature/index.ts';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { type LogRecordBody, type LogRecordKind, sealControl } from '../../protocol/index.ts';
import { backoffDelay, sleep } from '../../retry/index.ts';
import { federationSubjects } from '../../transport/index.ts';
import { type LogEntry, type LogPosition, recordsHeld } from './log-entry.ts';
import { FederationLogError } from './log-error.ts';
import { LOG_MAX_ENTRY_BYTES, logStreamName } from './log-stream.ts';

/**
 * Bytes of the append's NATS headers the writer reserves (the expected-last-sequence header takes
 * under 64): JetStream counts headers with the entry against the stream's `max_msg_size`.
 */
const APPEND_HEADER_BYTES = 1024;

/**
 * Largest entry the writer appends, in bytes: the log's cap ({@link LOG_MAX_ENTRY_BYTES}, the
 * stream's `max_msg_size`) less {@link APPEND_HEADER_BYTES} for the append's headers. Readers
 * accept entries up to the cap itself.
 */
export const LOG_MAX_APPEND_BYTES = LOG_MAX_ENTRY_BYTES - APPEND_HEADER_BYTES;

/** What {@link FederationLogWriter.append} is given: one record; the writer fills the rest. */
export type LogRecordInput = Pick<LogRecordBody, LogRecordKind>;

/** The single writer of a federation's log (the coordinator). */
export interface FederationLogWriter {
  /** The last entry this writer knows: where the next append goes after. */
  position(): LogPosition;
  /**
   * Seals the record (sequence = position + 1, previousEntry = position's hash, the clock's
   * `unixMs`) and publishes it with JetStream's expected-last-sequence check. On success the
   * entry is durable per the stream's replicas and is the decision it holds.
   *
   * Fencing: when the stream's last sequence is not this writer's position (another writer
   * appended since the start-up scan) the append is refused with `LOG_SEQUENCE_CONFLICT` and every
   * later append with `LOG_FENCED`: a writer never re-reads the tail and carries on, so two
   * coordinators can never interleave entries. When a publish fails otherwise (timeout, server
   * restart) the writer reads entry `position + 1` back: its own bytes there mean the append
   * succeeded, no entry means it is retried (`attempts` in all), anything else fences the writer.
   * `LOG_UNAVAILABLE` after the last attempt leaves the writer usable, but the outcome is
   * unknown: the last publish may still land (a server that stalled and resumes). The next append
   * reads that position first: when the entry landed it is handed to `onLateEntry`, the writer
   * moves past it, and the append is refused with `LOG_LATE_ENTRY` (nothing sent for it: the caller
   * builds its record again), instead of fencing itself on its own late entry. An
   * input without exactly one record, or whose sealed entry is over {@link LOG_MAX_APPEND_BYTES},
   * is refused with `INVALID_ARGUMENT` before anything is sent (the writer stays usable).
   */
  append(record: LogRecordInput): Promise<LogEntry>;
  /** True once an append failed: this writer appends nothing more. */
  readonly fenced: boolean;
}

/** Options of {@link openLogWriter}. */
export interface LogWriterOptions {
  readonly federation: string;
  readonly signer: string;
  readonly signing: SigningKeyPair;
  /** The last entry of the start-up scan: appends are fenced on it. */
  readonly start: LogPosition;
  /** Clock (ms since the epoch) for `unixMs`; default `Date.now`. */
  readonly now?: () => number;
  /** Publish attempts per append when the outcome is unknown (default 5). */
  readonly attempts?: number;
  /** Wait between attempts in ms (default 500). */
  readonly retryMs?: number;
  /**
   * Called with the record before every publish attempt of an append, the first and each retry; an error it
   * throws ends the append with that error and nothing more is sent. The coordinator checks its
   * lease here, so a writer whose lease expired during a retry's wait never publishes again.
   */
  readonly beforeAttempt?: (record: LogRecordBody) => void;
  /**
   * Called with an entry the writer finds stored where an earlier append of its own was reported
   * `LOG_UNAVAILABLE` (its publish landed late): the writer moves past it before appending again.
   * The caller folds it into its view of the log; an error it throws fences the writer.
   */
  readonly onLateEntry?: (entry: LogEntry) => void;
  /** Timeout of each publish and read, ms (default JetStream's, 5000). */
  readonly timeoutMs?: number;
}

/**
 * A writer for the log of `federation` on `nc`, positioned at `options.start` (the stream must
 * exist: see `ensureLogStream`).
 */
export async function openLogWriter(
  nc: NatsConnection,
  options: LogWriterOptions,
): Promise<FederationLogWriter> {
  assertInteger('options.start.sequence', options.start.sequence, 0, Number.MAX_SAFE_INTEGER);
  assertInteger('options.attempts', options.attempts ?? 5, 1, 100);
  if (options.timeoutMs !== undefined) assertInteger('options.timeoutMs', options.timeoutMs, 10, 600_000);
  if (options.onLateEntry !== undefined && typeof options.onLateEntry !== 'function') {
    throw new InvalidArgumentError('options.onLateEntry must be a function', {
      details: { name: 'options.onLateEntry' },
    });
  }
  if (options.beforeAttempt !== undefined && typeof options.beforeAttempt !== 'function') {
    throw new InvalidArgumentError('options.beforeAttempt must be a function', {
      details: { name: 'options.beforeAttempt' },
    });
  }
  const jsm = await jetstreamManager(nc, {
    checkAPI: false,
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
  });
  return new JetStreamLogWriter(
    jetstream(nc, options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
    jsm,
    options,
  );
}

/** {@link JetStreamLogWriter}'s answer when it adopted a late entry instead of appending. */
const ADOPTED = Symbol('adopted');

/** An append whose outcome is unknown: its entry may still land at `sequence`. */
interface LateCandidate {
  readonly sequence: number;
  readonly bytes: Uint8Array;
  readonly record: LogRecordBody;
}

class JetStreamLogWriter implements FederationLogWriter {
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #options: LogWriterOptions;
  readonly #stream: string;
  readonly #subject: string;
  #position: LogPosition;
  #fenced = false;
  /** Appends reported `LOG_UNAVAILABLE` at the current tail + 1: any of them may still land there. */
  #uncertain: LateCandidate[] = [];

  constructor(js: JetStreamClient, jsm: JetStreamManager, options: LogWriterOptions) {
    this.#js = js;
    this.#jsm = jsm;
    this.#options = options;
    this.#stream = logStreamName(options.federation);
    this.#subject = federationSubjects(options.federation).log;
    this.#position = { sequence: options.start.sequence, hash: options.start.hash.slice() };
  }

  get fenced(): boolean {
    return this.#fenced;
  }

  position(): LogPosition {
    return this.#position;
  }

  async append(input: LogRecordInput): Promise<LogEntry> {
    // An entry without exactly one record could never be read back (readers refuse it, and a
    // second record is dropped by the protobuf oneof), yet it could never be removed either.
    const records = input == null ? 0 : recordsHeld(input as LogRecordBody);
    if (records !== 1) {
      throw new InvalidArgumentError(`a log entry holds exactly one record, got ${records}`, {
        details: { name: 'record' },
      });
    }
    const entry = await this.#appendOnce(input);
    if (entry !== ADOPTED) return entry;
    // The record was built for the position before the late entry: what it says may no longer
    // hold after it (a round opened, a decision made), so it is not sent as it is.
    throw new FederationLogError(
      'LOG_LATE_ENTRY',
      `log ${this.#stream}: an earlier append reported unavailable landed as entry ${this.#position.sequence}; it was taken in, and nothing was appended for this record: build it again`,
      { details: { stream: this.#stream, sequence: this.#position.sequence } },
    );
  }

  /**
   * One append at the current position: the entry, or {@link ADOPTED} when the position turned out
   * to hold the entry of an earlier append whose outcome was unknown (the writer moved past it:
   * append again at the next position).
   */
  async #appendOnce(input: LogRecordInput): Promise<LogEntry | typeof ADOPTED> {
    if (this.#fenced) {
      throw new FederationLogError(
        'LOG_FENCED',
        `log ${this.#stream}: this writer lost its position at entry ${this.#position.sequence} and appends nothing more`,
        { details: { stream: this.#stream, sequence: this.#position.sequence } },
      );
    }
    const tail = this.#position;
    const sequence = tail.sequence + 1;
    const record: LogRecordBody = {
      federation: this.#options.federation,
      sequence,
      previousEntry: tail.hash,
      unixMs: (this.#options.now ?? Date.now)(),
      ...(input.roundOpen ? { roundOpen: input.roundOpen } : {}),
      ...(input.decision ? { decision: input.decision } : {}),
      ...(input.snapshot ? { snapshot: input.snapshot } : {}),
      ...(input.registryChange ? { registryChange: input.registryChange } : {}),
      ...(input.adminAction ? { adminAction: input.adminAction } : {}),
      ...(input.partial ? { partial: input.partial } : {}),
      ...(input.vote ? { vote: input.vote } : {}),
      ...(input.votes ? { votes: input.votes } : {}),
      ...(input.thresholdEpoch ? { thresholdEpoch: input.thresholdEpoch } : {}),
    };
    const bytes = sealControl('log-record', record, this.#options.signer, this.#options.signing);
    // The stream would refuse it (max_msg_size, headers included) after every retry: nothing is
    // sent, and the writer stays usable (the caller may split what it logs, as a decision's votes).
    if (bytes.length > LOG_MAX_APPEND_BYTES) {
      throw new InvalidArgumentError(
        `log ${this.#stream}: entry ${sequence} of ${bytes.length} bytes, more than the ${LOG_MAX_APPEND_BYTES} an append may hold`,
        { details: { name: 'record', bytes: bytes.length, max: LOG_MAX_APPEND_BYTES } },
      );
    }
    let late: LateCandidate | undefined;
    /** What entry `sequence` holds: ours, an unknown-outcome append's (adopt it), another's, none. */
    const holder = async (): Promise<'ours' | 'earlier' | 'other' | 'none' | 'unknown'> => {
      let data: Uint8Array | null;
      try {
        data = await this.#storedAt(sequence);
      } catch {
        return 'unknown';
      }
      if (data === null) return 'none';
      if (bytesEqual(data, bytes)) return 'ours';
      const stored = data;
      late = this.#uncertain.find((u) => u.sequence === sequence && bytesEqual(stored, u.bytes));
      return late !== undefined ? 'earlier' : 'other';
    };
    const attempts = this.#options.attempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      try {
        this.#options.beforeAttempt?.(record);
      } catch (err) {
        // An earlier attempt of this append may still land: remember it, as after the last attempt.
        if (attempt > 1) this.#uncertain.push({ sequence, bytes, record });
        throw err;
      }
      try {
        const ack = await this.#js.publish(this.#subject, bytes, { expect: { lastSequence: tail.sequence } });
        if (ack.seq !== sequence || ack.stream !== this.#stream) {
          throw this.#fence(
            'LOG_SEQUENCE_CONFLICT',
            `entry stored as ${ack.stream}/${ack.seq}, expected ${this.#stream}/${sequence}`,
          );
        }
        break;
      } catch (err) {
        if (err instanceof FederationLogError) throw err;
        const wrongTail =
          err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
        const held = await holder();
        if (held === 'ours') break; // an earlier attempt of this append landed
        if (held === 'earlier') {
          this.#adopt(late!);
          return ADOPTED;
        }
        if (wrongTail || held === 'other') {
          throw this.#fence(
            'LOG_SEQUENCE_CONFLICT',
            wrongTail
              ? `another writer appended after entry ${tail.sequence} (a second coordinator?); this one stops`
              : `entry ${sequence} holds another writer's record`,
            err,
          );
        }
        if (attempt >= attempts) {
          // The last publish may still be processed (a server that stalled and resumes): the
          // outcome is unknown, and the next append settles it before writing at this position.
          this.#uncertain.push({ sequence, bytes, record });
          throw new FederationLogError(
            'LOG_UNAVAILABLE',
            `log ${this.#stream}: append of entry ${sequence} failed ${attempts} times (${(err as Error).message}); its outcome is unknown: it may still be stored, and the next append finds out`,
            { cause: err, details: { stream: this.#stream, sequence } },
          );
        }
        const retryMs = this.#options.retryMs ?? 500;
        await sleep(backoffDelay(attempt, { baseMs: retryMs, maxMs: 4 * retryMs }));
      }
    }
    // Stored at `sequence`: an unknown earlier append at this position can no longer land.
    this.#uncertain = [];
    const entry: LogEntry = { sequence, bytes, hash: sha256(bytes), record };
    this.#position = { sequence, hash: entry.hash };
    return entry;
  }

  /**
   * Moves past the entry of an earlier append reported
   * `LOG_UNAVAILABLE`, and hands it to `onLateEntry`; a refusal there fences the writer.
   */
  #adopt(late: LateCandidate): void {
    const { sequence, bytes, record } = late;
    this.#uncertain = [];
    const entry: LogEntry = { sequence, bytes, hash: sha256(bytes), record };
    this.#position = { sequence, hash: entry.hash };
    try {
      this.#options.onLateEntry?.(entry);
    } catch (err) {
      throw this.#fence(
        'LOG_SEQUENCE_CONFLICT',
        `entry ${sequence}, an append reported unavailable, landed late and cannot be taken in: ${(err as Error).message}`,
        err,
      );
    }
  }

  /** The bytes stored as entry `sequence`, or null when there is none. Throws when unreadable. */
  async #storedAt(sequence: number): Promise<Uint8Array | null> {
    const msg = await this.#jsm.streams.getMessage(this.#stream, { seq: sequence });
    return msg === null ? null : msg.data;
  }

  #fence(code: 'LOG_SEQUENCE_CONFLICT', problem: string, cause?: unknown): FederationLogError {
    this.#fenced = true;
    return new FederationLogError(code, `log ${this.#stream}: ${problem}`, {
      cause,
      details: { stream: this.#stream, sequence: this.#position.sequence },
    });
  }
}

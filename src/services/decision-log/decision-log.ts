import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StoredMsg,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import { type SigningKeyPair, toPublicSigningKey } from '../../../crypto/signature/index.ts';
import { CohortError } from '../../errors/index.ts';
import { type ControlBodies, type KeyLookup, openControl, sealControl } from '../../protocol/index.ts';
import { federationSubjects } from '../../transport/index.ts';

/** A decision as the log stores it. */
export type DecisionBody = ControlBodies['decision'];

/** What {@link DecisionLog.append} is given: the log fills `logSequence` and `previousEntry`. */
export type DecisionEntry = Omit<DecisionBody, 'logSequence' | 'previousEntry'>;

/** One verified log entry. */
export interface LoggedDecision {
  /** JetStream sequence of the entry (= `body.logSequence`). */
  readonly sequence: number;
  readonly signer: string;
  readonly body: DecisionBody;
  /** The exact stored bytes (a framed, signed `decision` control message). */
  readonly bytes: Uint8Array;
}

/** Errors of the decision log. */
export class DecisionLogError extends CohortError {}

/** Codes of {@link DecisionLogError}. */
export const DECISION_LOG_ERROR_CODES = [
  /** Another writer appended since we read the log (expected-last-sequence check failed). */
  'LOG_SEQUENCE_CONFLICT',
  /** An entry's `previousEntry` is not the SHA-256 of the entry before it, or its sequence is off. */
  'LOG_CHAIN_BROKEN',
  /** An entry that is not a decision signed by the log's signer. */
  'LOG_ENTRY_INVALID',
  /** The stream exists but does not hold (only) the log subject. */
  'LOG_STREAM_MISMATCH',
] as const;

/** The hash-chained, signed decision log of one federation: JetStream stream `COHORT_<FED>`. */
export interface DecisionLog {
  readonly stream: string;
  readonly subject: string;
  /**
   * Seals `entry` (previousEntry = SHA-256 of the last entry's bytes, 32 zero bytes for the first;
   * logSequence = last sequence + 1) and publishes it with the expected last sequence. A conflict
   * (another writer) throws `LOG_SEQUENCE_CONFLICT` naming both sequences; the log then re-reads its
   * tail on the next call.
   */
  append(entry: DecisionEntry): Promise<{ sequence: number; bytes: Uint8Array }>;
  /** The last entry (signature, sequence and link to its predecessor checked), or undefined when empty. */
  last(): Promise<LoggedDecision | undefined>;
  /** Every entry in order, verifying signatures and the hash chain; a break throws `LOG_CHAIN_BROKEN`. */
  entries(): AsyncIterable<LoggedDecision>;
}

/** Options of {@link openDecisionLog}. */
export interface DecisionLogOptions {
  /**
   * Keys to verify entries with; default: only `signer`, with the public half of `signing`. Every
   * entry must be signed by `signer` whatever the lookup holds.
   */
  readonly keys?: KeyLookup;
  /** Largest stream size in bytes (default 1 GiB); new entries are refused beyond it, never old ones dropped. */
  readonly maxBytes?: number;
}

/** The stream name of a federation's log: `COHORT_` + the id upper-cased, anything but A-Z, 0-9, _ and - as `_`. */
export function decisionLogStreamName(federation: string): string {
  return `COHORT_${federation.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}`;
}

const ZERO: Uint8Array = new Uint8Array(32);

/**
 * Opens (creating when absent) the decision log of `federation` on `nc`: a file-backed stream
 * holding only `cohort.<F>.log`, limits retention, no deletes or purges, discard-new at the size
 * limit (an old decision is never dropped). `signer` / `signing` seal new entries; the log is a
 * single-writer log (the coordinator).
 */
export async function openDecisionLog(
  nc: NatsConnection,
  federation: string,
  signing: SigningKeyPair,
  signer: string,
  options: DecisionLogOptions = {},
): Promise<DecisionLog> {
  const subject = federationSubjects(federation).log;
  const stream = decisionLogStreamName(federation);
  const jsm = await jetstreamManager(nc);
  await ensureStream(jsm, stream, subject, options.maxBytes ?? 1024 * 1024 * 1024);
  const own = toPublicSigningKey(signing);
  return new JetStreamDecisionLog(
    jsm,
    jetstream(nc),
    stream,
    subject,
    signing,
    signer,
    options.keys ?? ((s) => (s === signer ? own : undefined)),
  );
}

async function ensureStream(jsm: JetStreamManager, name: string, subject: string, maxBytes: number) {
  try {
    const info = await jsm.streams.info(name);
    const subjects = info.config.subjects ?? [];
    if (subjects.length !== 1 || subjects[0] !== subject) {
      throw new DecisionLogError(
        'LOG_STREAM_MISMATCH',
        `stream ${name} holds subjects ${JSON.stringify(subjects)}, expected only ${subject}`,
        { details: { stream: name, subjects } },
      );
    }
    return;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
  }
  try {
    await jsm.streams.add({
      name,
      subjects: [subject],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs: -1,
      max_age: 0,
      max_bytes: maxBytes,
      max_msg_size: 8 * 1024 * 1024,
      discard: DiscardPolicy.New,
      num_replicas: 1,
      deny_delete: true,
      deny_purge: true,
    });
  } catch (err) {
    // Another process created it meanwhile: fine if it is ours.
    const info = await jsm.streams.info(name).catch(() => undefined);
    if (info?.config.subjects?.length !== 1 || info.config.subjects[0] !== subject) throw err;
  }
}

class JetStreamDecisionLog implements DecisionLog {
  readonly stream: string;
  readonly subject: string;
  readonly #jsm: JetStreamManager;
  readonly #js: JetStreamClient;
  readonly #signing: SigningKeyPair;
  readonly #signer: string;
  readonly #keys: KeyLookup;
  /** Sequence and SHA-256 of the last entry, as we last knew it; undefined: read it again. */
  #tail: { sequence: number; hash: Uint8Array } | undefined;

  constructor(
    jsm: JetStreamManager,
    js: JetStreamClient,
    stream: string,
    subject: string,
    signing: SigningKeyPair,
    signer: string,
    keys: KeyLookup,
  ) {
    this.#jsm = jsm;
    this.#js = js;
    this.stream = stream;
    this.subject = subject;
    this.#signing = signing;
    this.#signer = signer;
    this.#keys = keys;
  }

  async append(entry: DecisionEntry): Promise<{ sequence: number; bytes: Uint8Array }> {
    if (this.#tail === undefined) {
      const last = await this.last();
      this.#tail = last ? { sequence: last.sequence, hash: sha256(last.bytes) } : { sequence: 0, hash: ZERO };
    }
    const tail = this.#tail;
    const sequence = tail.sequence + 1;
    const body: DecisionBody = { ...entry, logSequence: sequence, previousEntry: tail.hash };
    const bytes = sealControl('decision', body, this.#signer, this.#signing);
    try {
      const ack = await this.#js.publish(this.subject, bytes, { expect: { lastSequence: tail.sequence } });
      if (ack.seq !== sequence) {
        this.#tail = undefined;
        throw new DecisionLogError(
          'LOG_SEQUENCE_CONFLICT',
          `decision log ${this.stream}: entry stored at sequence ${ack.seq}, expected ${sequence}`,
          { details: { expected: sequence, actual: ack.seq } },
        );
      }
    } catch (err) {
      if (err instanceof DecisionLogError) throw err;
      this.#tail = undefined;
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence) {
        const actual = await this.#lastSequence().catch(() => -1);
        throw new DecisionLogError(
          'LOG_SEQUENCE_CONFLICT',
          `decision log ${this.stream}: expected last sequence ${tail.sequence}, the stream is at ${actual} (another writer?)`,
          { cause: err, details: { expected: tail.sequence, actual } },
        );
      }
      throw err;
    }
    this.#tail = { sequence, hash: sha256(bytes) };
    return { sequence, bytes };
  }

  async last(): Promise<LoggedDecision | undefined> {
    const seq = await this.#lastSequence();
    if (seq === 0) return undefined;
    const entry = this.#open(await this.#get(seq));
    const previous = seq > 1 ? sha256((await this.#get(seq - 1)).data) : ZERO;
    this.#checkLink(entry, previous);
    return entry;
  }

  async *entries(): AsyncIterable<LoggedDecision> {
    const info = await this.#jsm.streams.info(this.stream);
    const first = info.state.first_seq;
    const last = info.state.last_seq;
    if (info.state.messages === 0) return;
    if (first !== 1) {
      throw new DecisionLogError(
        'LOG_CHAIN_BROKEN',
        `decision log ${this.stream} starts at sequence ${first}, not 1: entries are missing`,
        { details: { first } },
      );
    }
    let previous = ZERO;
    for (let seq = first; seq <= last; seq++) {
      const msg = await this.#get(seq);
      const entry = this.#open(msg);
      this.#checkLink(entry, previous);
      previous = sha256(msg.data);
      yield entry;
    }
  }

  async #lastSequence(): Promise<number> {
    const info = await this.#jsm.streams.info(this.stream);
    return info.state.last_seq;
  }

  async #get(seq: number): Promise<StoredMsg> {
    let msg: StoredMsg | null;
    try {
      msg = await this.#jsm.streams.getMessage(this.stream, { seq });
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) msg = null;
      else throw err;
    }
    if (msg === null) {
      throw new DecisionLogError('LOG_CHAIN_BROKEN', `decision log ${this.stream} has no entry ${seq}`, {
        details: { sequence: seq },
      });
    }
    return msg;
  }

  #open(msg: StoredMsg): LoggedDecision {
    let opened: { signer: string; body: DecisionBody };
    try {
      opened = openControl(msg.data, 'decision', this.#keys);
    } catch (err) {
      throw new DecisionLogError(
        'LOG_ENTRY_INVALID',
        `decision log ${this.stream} entry ${msg.seq} is not a signed decision: ${(err as Error).message}`,
        { cause: err, details: { sequence: msg.seq } },
      );
    }
    if (opened.signer !== this.#signer) {
      throw new DecisionLogError(
        'LOG_ENTRY_INVALID',
        `decision log ${this.stream} entry ${msg.seq} is signed by ${JSON.stringify(opened.signer)}, not ${JSON.stringify(this.#signer)}`,
        { details: { sequence: msg.seq, signer: opened.signer } },
      );
    }
    return { sequence: msg.seq, signer: opened.signer, body: opened.body, bytes: msg.data };
  }

  #checkLink(entry: LoggedDecision, previous: Uint8Array): void {
    if (entry.body.logSequence !== entry.sequence) {
      throw new DecisionLogError(
        'LOG_CHAIN_BROKEN',
        `decision log ${this.stream} entry ${entry.sequence} claims sequence ${entry.body.logSequence}`,
        { details: { sequence: entry.sequence, claimed: entry.body.logSequence } },
      );
    }
    if (!bytesEqual(entry.body.previousEntry, previous)) {
      throw new DecisionLogError(
        'LOG_CHAIN_BROKEN',
        `decision log ${this.stream} entry ${entry.sequence} does not chain to entry ${entry.sequence - 1}`,
        { details: { sequence: entry.sequence } },
      );
    }
  }
}

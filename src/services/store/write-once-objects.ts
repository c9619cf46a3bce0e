import { constants as bufferConstants } from 'node:buffer';
import { createHash } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { assertObjectToken, federationSubjects } from '../../transport/index.ts';
import { DEFAULT_STORE_TIMEOUT_MS, type ObjectReadLimits } from './object-reader.ts';
import { StoreError } from './store-error.ts';
import {
  answeredMessage,
  apiFailure,
  NO_MESSAGE_FOUND,
  STREAM_NOT_FOUND,
  type StreamMessage,
  streamApi,
} from './stream-api.ts';
import { type ExpectedStreamSettings, ensureStream } from './stream-settings.ts';

/**
 * A write-once object stream of a federation (docs/log-format.md, "Aggregates and snapshots"):
 * its JetStream stream, the subjects it holds, and the subject of each frame of an object.
 */
export interface WriteOnceStore {
  /** `aggregates` or `snapshots`: what it keeps. */
  readonly kind: 'aggregates' | 'snapshots';
  /** `COHORT_<F>_AGGREGATES` / `COHORT_<F>_SNAPSHOTS`. */
  readonly stream: string;
  /** `cohort.<F>.aggregate.>` / `cohort.<F>.snapshot-store.>`. */
  readonly subjects: string;
  /** The subject of frame `frame` of object `object` (0 its header, 1… its bytes). */
  frameSubject(object: string, frame: number): string;
}

/** The stream of each round's aggregate, a robust round's Δ̄ and a culprit partial's evidence. */
export function aggregateStore(federation: string): WriteOnceStore {
  const s = federationSubjects(federation);
  return Object.freeze({
    kind: 'aggregates' as const,
    stream: s.aggregatesStream,
    subjects: s.aggregates,
    frameSubject: (object: string, frame: number) => s.aggregateFrame(object, frame),
  });
}

/** The stream of encrypted model snapshots. */
export function snapshotStore(federation: string): WriteOnceStore {
  const s = federationSubjects(federation);
  return Object.freeze({
    kind: 'snapshots' as const,
    stream: s.snapshotsStream,
    subjects: s.snapshotStore,
    frameSubject: (object: string, frame: number) => s.snapshotFrame(object, frame),
  });
}

/** Bytes of an object a data frame holds (the last one may hold fewer). */
export const OBJECT_FRAME_BYTES = 256 * 1024;
/** Bytes reserved above a frame in `max_msg_size` (NATS counts a message's headers in it). */
export const OBJECT_FRAME_HEADER_BYTES = 1024;
/** Largest message a write-once object stream holds (its `max_msg_size`). */
const MAX_FRAME_MESSAGE_BYTES = OBJECT_FRAME_BYTES + OBJECT_FRAME_HEADER_BYTES;
/** Largest header frame (frame 0) a reader accepts. */
const MAX_HEADER_FRAME_BYTES = 2048;
/** What a header frame says it is. */
const HEADER_TAG = 'cohort/write-once-object/v1';
/** Frames published or read at once. */
const PARALLEL_FRAMES = 16;

/** Settings of a write-once object stream (see {@link writeOnceStoreSettings}). */
export interface WriteOnceStoreOptions {
  /** JetStream replicas (`history.replicas`). */
  readonly replicas: number;
}

/**
 * What a write-once object stream must be: only its own subjects, file storage, limits retention
 * and no age, message or byte limit (objects are kept until an operator removes the stream),
 * discard-new, deletes, purges and rollups denied, every subject write-once (`max_msgs_per_subject`
 * 1 with `discard_new_per_subject`: the server refuses a second message), and each message at most
 * one frame ({@link OBJECT_FRAME_BYTES} + {@link OBJECT_FRAME_HEADER_BYTES}).
 */
export function writeOnceStoreSettings(
  store: WriteOnceStore,
  options: WriteOnceStoreOptions,
): ExpectedStreamSettings {
  assertStore(store);
  assertInteger('options.replicas', options.replicas, 1, 5);
  return {
    name: store.stream,
    subjects: [store.subjects],
    storage: 'file',
    replicas: options.replicas,
    denyDelete: true,
    denyPurge: true,
    discard: 'new',
    maxAgeMs: 0,
    retention: 'limits',
    allowRollup: false,
    maxMsgsPerSubject: 1,
    discardNewPerSubject: true,
    maxMsgSize: MAX_FRAME_MESSAGE_BYTES,
  };
}

function assertStore(store: WriteOnceStore): void {
  if (
    typeof store !== 'object' ||
    store === null ||
    typeof store.stream !== 'string' ||
    typeof store.subjects !== 'string' ||
    typeof store.frameSubject !== 'function'
  ) {
    throw new InvalidArgumentError('store must be a write-once store (aggregateStore, snapshotStore)', {
      details: { name: 'store' },
    });
  }
}

function assertConnection(nc: NatsConnection): void {
  if (typeof nc !== 'object' || nc === null || typeof (nc as { request?: unknown }).request !== 'function') {
    throw new InvalidArgumentError('nc must be a NATS connection', { details: { name: 'nc' } });
  }
}

/** The header frame (frame 0) of an object: what the reader checks every data frame against. */
interface ObjectHeader {
  readonly size: number;
  readonly frames: number;
  readonly frameBytes: number;
  /** SHA-256 of the object's bytes, 64 lowercase hex digits. */
  readonly sha256: string;
}

function encodeHeader(object: string, header: ObjectHeader): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({
      cohort: HEADER_TAG,
      object,
      size: header.size,
      frames: header.frames,
      frameBytes: header.frameBytes,
      sha256: header.sha256,
    }),
  );
}

/** Stores objects in a write-once object stream: see {@link writeOnceObjectWriter}. */
export interface WriteOnceObjects {
  readonly store: WriteOnceStore;
  /**
   * Stores `bytes` as object `name`; resolves once the stream acknowledged every frame, or found
   * each already stored with these bytes (a retry of the same object).
   *
   * @throws StoreError `OBJECT_EXISTS` when `name` holds other bytes (never replaced);
   *   `STORE_UNAVAILABLE` when a frame is refused otherwise (too large, no stream, no permission,
   *   timeout).
   */
  put(name: string, bytes: Uint8Array): Promise<void>;
}

/**
 * The coordinator's writer of a write-once object stream (docs/log-format.md, "Aggregates and
 * snapshots"): object `name` is frames 1…n of its bytes, at most `frameBytes` each (default
 * {@link OBJECT_FRAME_BYTES}), then frame 0, its header (size, frame count, frame size,
 * SHA-256), each one JetStream publish on `store.frameSubject(name, i)` with
 * `Nats-Expected-Last-Subject-Sequence: 0` (written once even on a stream weaker than
 * write-once). The header comes last: an object whose write was cut short reads as absent, and a
 * retry writes the same frames again, which the stream refuses and the writer then reads back
 * and compares. Needs publish on the store's subjects and `STREAM.MSG.GET` of its stream only.
 */
export function writeOnceObjectWriter(
  nc: NatsConnection,
  store: WriteOnceStore,
  options: { readonly timeoutMs?: number; readonly frameBytes?: number } = {},
): WriteOnceObjects {
  assertConnection(nc);
  assertStore(store);
  const timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  assertInteger('options.timeoutMs', timeoutMs, 1, 600_000);
  const frameBytes = options.frameBytes ?? OBJECT_FRAME_BYTES;
  assertInteger('options.frameBytes', frameBytes, 1, OBJECT_FRAME_BYTES);
  // No account check ($JS.API.INFO): a writer needs no account right.
  const js = jetstream(nc, { checkAPI: false, timeout: timeoutMs });

  /** Publishes one frame once; a frame already stored with the same bytes counts as stored. */
  const publishOnce = async (name: string, subject: string, data: Uint8Array): Promise<void> => {
    let refusal: unknown;
    try {
      const ack = await js.publish(subject, data, { expect: { lastSubjectSequence: 0 } });
      if (ack.stream === store.stream && !ack.duplicate) return;
      refusal = new Error(`acknowledged by ${ack.stream}${ack.duplicate ? ' as a duplicate' : ''}`);
    } catch (err) {
      refusal = err;
    }
    // Refused: stored before (a retry), or refused for another reason.
    const stored = await firstMessage(nc, store, subject, MAX_FRAME_MESSAGE_BYTES, timeoutMs).catch(
      () => null,
    );
    if (stored !== null && Buffer.from(stored.data).equals(data)) return;
    if (stored !== null) {
      throw new StoreError(
        'OBJECT_EXISTS',
        `object ${JSON.stringify(name)} of stream ${store.stream} is stored with other bytes; a stored object is never replaced`,
        { cause: refusal, details: { stream: store.stream, object: name, subject } },
      );
    }
    throw new StoreError(
      'STORE_UNAVAILABLE',
      `frame ${subject} of object ${JSON.stringify(name)} was not stored: ${(refusal as Error)?.message ?? String(refusal)}`,
      { cause: refusal, details: { stream: store.stream, object: name, subject } },
    );
  };

  return {
    store,
    async put(name: string, bytes: Uint8Array): Promise<void> {
      assertObjectToken('name', name);
      if (!(bytes instanceof Uint8Array)) {
        throw new InvalidArgumentError('bytes must be a Uint8Array', { details: { name: 'bytes' } });
      }
      const frames = Math.ceil(bytes.length / frameBytes);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      for (let from = 1; from <= frames; from += PARALLEL_FRAMES) {
        const batch: Promise<void>[] = [];
        for (let i = from; i <= Math.min(frames, from + PARALLEL_FRAMES - 1); i++) {
          const frame = bytes.subarray((i - 1) * frameBytes, Math.min(bytes.length, i * frameBytes));
          batch.push(publishOnce(name, store.frameSubject(name, i), frame));
        }
        await Promise.all(batch);
      }
      const header = encodeHeader(name, { size: bytes.length, frames, frameBytes, sha256 });
      await publishOnce(name, store.frameSubject(name, 0), header);
    },
  };
}

/** The first message stored on `subject` (`next_by_subj` from sequence 1), or null when none. */
async function firstMessage(
  nc: NatsConnection,
  store: WriteOnceStore,
  subject: string,
  maxDataBytes: number,
  timeoutMs: number,
): Promise<StreamMessage | null> {
  const getSubject = `$JS.API.STREAM.MSG.GET.${store.stream}`;
  // A message comes back base64 in JSON: 4/3 of its size and a little more.
  const answerCap = Math.ceil((maxDataBytes * 4) / 3) + 8192;
  const answer = await streamApi(nc, getSubject, { seq: 1, next_by_subj: subject }, answerCap, timeoutMs);
  if (answer.error) {
    if (answer.error.err_code === NO_MESSAGE_FOUND) return null;
    if (answer.error.err_code === STREAM_NOT_FOUND) {
      throw new StoreError('BUCKET_NOT_FOUND', `stream ${store.stream} does not exist`, {
        details: { stream: store.stream },
      });
    }
    throw apiFailure(getSubject, answer.error);
  }
  const message = answeredMessage(answer);
  if (message === null || message.subject !== subject) {
    throw new StoreError('STORE_UNAVAILABLE', `${getSubject} answered another subject than ${subject}`, {
      details: { stream: store.stream, subject },
    });
  }
  return message;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Reads object `name` of a write-once object stream with `STREAM.MSG.GET` only (the read-only
 * rights of sites and auditors: no consumer, no account check), each frame the first message of
 * its subject. Returns null when the object has no header frame (never stored, or its write was
 * cut short).
 *
 * The header (frame 0) must be this object's: at most 2 KiB of JSON naming `name`, its size
 * ≤ `limits.maxBytes` (`OBJECT_TOO_LARGE`, before any data frame is read), a frame count of
 * ⌈size / frameBytes⌉ and a SHA-256. Frames 1…n must each be stored and hold exactly frameBytes
 * (the last one the rest), and their SHA-256 must be the header's (`OBJECT_CORRUPT`). Frames
 * beyond the header's count are never read: a message added later on a further subject of the
 * object cannot change or spoil what it reads. A missing stream is `BUCKET_NOT_FOUND`; any other
 * JetStream failure (timeout, permission, API error) is `STORE_UNAVAILABLE`.
 */
export async function readWriteOnceObject(
  nc: NatsConnection,
  store: WriteOnceStore,
  name: string,
  limits: ObjectReadLimits,
): Promise<Uint8Array | null> {
  assertConnection(nc);
  assertStore(store);
  assertObjectToken('name', name);
  if (typeof limits !== 'object' || limits === null) {
    throw new InvalidArgumentError('limits must be an object with maxBytes', { details: { name: 'limits' } });
  }
  assertInteger('limits.maxBytes', limits.maxBytes, 0, bufferConstants.MAX_LENGTH);
  const timeoutMs = limits.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  assertInteger('limits.timeoutMs', timeoutMs, 1, 600_000);
  const where = `object ${JSON.stringify(name)} of stream ${store.stream}`;
  const details = (extra: Record<string, unknown> = {}) => ({ stream: store.stream, object: name, ...extra });
  const corrupt = (what: string, extra: Record<string, unknown> = {}) =>
    new StoreError('OBJECT_CORRUPT', `${where} is corrupt: ${what}`, { details: details(extra) });

  const headerMessage = await firstMessage(
    nc,
    store,
    store.frameSubject(name, 0),
    MAX_FRAME_MESSAGE_BYTES,
    timeoutMs,
  ).catch((err: unknown) => {
    if (err instanceof StoreError && err.code === 'BUCKET_NOT_FOUND') {
      throw new StoreError('BUCKET_NOT_FOUND', `cannot read ${where}: ${err.message}`, {
        cause: err,
        details: details(),
      });
    }
    throw err;
  });
  if (headerMessage === null) return null;
  if (headerMessage.data.length > MAX_HEADER_FRAME_BYTES) {
    throw corrupt(`its header is ${headerMessage.data.length} bytes, at most ${MAX_HEADER_FRAME_BYTES}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerMessage.data));
  } catch (err) {
    throw corrupt(`its header is not JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw corrupt('its header is not a JSON object');
  }
  const h = raw as Record<string, unknown>;
  if (h['cohort'] !== HEADER_TAG) throw corrupt(`its header is not a ${HEADER_TAG} header`);
  if (h['object'] !== name) throw corrupt(`its header names object ${JSON.stringify(h['object'])}`);
  const { size, frames, frameBytes, sha256 } = h;
  if (!isCount(size)) throw corrupt(`header size ${JSON.stringify(size)} is not a non-negative integer`);
  if (!isCount(frameBytes) || frameBytes === 0) {
    throw corrupt(`header frameBytes ${JSON.stringify(frameBytes)} is not a positive integer`);
  }
  if (!isCount(frames) || frames !== Math.ceil(size / frameBytes)) {
    throw corrupt(
      `header declares ${JSON.stringify(frames)} frames for ${size} bytes in frames of ${frameBytes}, expected ${Math.ceil(size / frameBytes)}`,
    );
  }
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) {
    throw corrupt(`header sha256 ${JSON.stringify(sha256)} is not 64 lowercase hex digits`);
  }
  if (size > limits.maxBytes) {
    throw new StoreError(
      'OBJECT_TOO_LARGE',
      `${where} is ${size} bytes, more than the ${limits.maxBytes} accepted`,
      { details: details({ size, maxBytes: limits.maxBytes }) },
    );
  }
  const out = new Uint8Array(size);
  const get = async (i: number): Promise<void> => {
    const expected = i < frames ? frameBytes : size - (frames - 1) * frameBytes;
    const message = await firstMessage(
      nc,
      store,
      store.frameSubject(name, i),
      Math.max(expected, MAX_FRAME_MESSAGE_BYTES),
      timeoutMs,
    );
    if (message === null) throw corrupt(`frame ${i} of ${frames} is missing`, { frame: i });
    if (message.data.length !== expected) {
      throw corrupt(`frame ${i} of ${frames} is ${message.data.length} bytes, expected ${expected}`, {
        frame: i,
      });
    }
    out.set(message.data, (i - 1) * frameBytes);
  };
  for (let from = 1; from <= frames; from += PARALLEL_FRAMES) {
    const batch: Promise<void>[] = [];
    for (let i = from; i <= Math.min(frames, from + PARALLEL_FRAMES - 1); i++) batch.push(get(i));
    await Promise.all(batch);
  }
  const digest = createHash('sha256').update(out).digest('hex');
  if (digest !== sha256) {
    throw corrupt(`SHA-256 of its frames is ${digest}, its header declares ${sha256}`);
  }
  return out;
}

/**
 * A writer's handle on a write-once object stream: on the first call, creates the stream with
 * {@link writeOnceStoreSettings} or checks an existing one (`STREAM_MISMATCH` for weaker
 * settings), then returns {@link writeOnceObjectWriter}, shared by later calls; a failed attempt is
 * forgotten, so the next call tries again. For the coordinator's aggregates and snapshots.
 * `maxPayload` is the server's: frames are cut to fit it (with their headers) if it is smaller
 * than {@link OBJECT_FRAME_BYTES}.
 */
export function lazyWriteOnceStore(
  nc: NatsConnection,
  store: WriteOnceStore,
  options: WriteOnceStoreOptions & { readonly timeoutMs?: number; readonly maxPayload?: number },
): () => Promise<WriteOnceObjects> {
  const expected = writeOnceStoreSettings(store, options);
  const maxPayload = options.maxPayload ?? Number.MAX_SAFE_INTEGER;
  const frameBytes = Math.min(OBJECT_FRAME_BYTES, maxPayload - OBJECT_FRAME_HEADER_BYTES);
  let ready: Promise<WriteOnceObjects> | undefined;
  return () => {
    if (ready === undefined) {
      const created = (async () => {
        if (frameBytes < 1) {
          throw new StoreError(
            'STORE_UNAVAILABLE',
            `the server's max_payload ${maxPayload} leaves no room for a frame of stream ${store.stream}`,
            { details: { stream: store.stream } },
          );
        }
        const jsm = await jetstreamManager(nc, {
          checkAPI: false,
          ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
        });
        await ensureStream(jsm, expected, `the ${store.kind}`);
        return writeOnceObjectWriter(nc, store, {
          frameBytes,
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
        });
      })();
      ready = created;
      created.catch(() => {
        if (ready === created) ready = undefined;
      });
    }
    return ready;
  };
}

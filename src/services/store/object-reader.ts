import { constants as bufferConstants } from 'node:buffer';
import { createHash } from 'node:crypto';
import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  type MsgRequest,
  type StoredMsg,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { objectStreamName } from '../../transport/index.ts';
import { StoreError } from './store-error.ts';

/** Default wait for one JetStream API request of {@link readObject}. */
export const DEFAULT_STORE_TIMEOUT_MS = 5000;

const BUCKET_RE = /^[A-Za-z0-9_-]{1,200}$/;
/** A nuid is 22 alphanumerics; anything with `.`, `*`, `>` or spaces would change the chunk subject. */
const NUID_RE = /^[A-Za-z0-9]{1,64}$/;
const SHA256_PREFIX = 'SHA-256=';
const MAX_NAME_LENGTH = 1024;

function assertBucket(name: string, bucket: unknown): asserts bucket is string {
  if (typeof bucket !== 'string' || !BUCKET_RE.test(bucket)) {
    throw new InvalidArgumentError(
      `${name} must be 1-200 characters of A-Z, a-z, 0-9, _ and -, got ${JSON.stringify(String(bucket))}`,
      { details: { name, value: String(bucket) } },
    );
  }
}

/** Limits of {@link readObject}. */
export interface ObjectReadLimits {
  /** Largest object accepted, in bytes; a larger declared size is `OBJECT_TOO_LARGE` before any chunk is read. */
  readonly maxBytes: number;
  /** Wait for each JetStream API request (meta, each chunk), in ms; default {@link DEFAULT_STORE_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

/** The meta record of an object, as checked by {@link readObject}. */
interface ObjectMeta {
  readonly nuid: string;
  readonly size: number;
  readonly chunks: number;
  readonly maxChunkSize: number;
  readonly digest: Uint8Array;
}

/** Base64url with padding, of the name's UTF-16 code units as bytes: what `@nats-io/obj` (`btoa`) puts in the meta subject. */
function encodeName(name: string): string {
  return Buffer.from(name, 'latin1').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

function assertObjectName(name: unknown): asserts name is string {
  // @nats-io/obj encodes names with btoa, which refuses code points above U+00FF; such a name
  // can never have been written by it.
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > MAX_NAME_LENGTH ||
    /[^\u0020-\u007e\u00a0-\u00ff]/.test(name)
  ) {
    throw new InvalidArgumentError(
      `name must be 1-${MAX_NAME_LENGTH} printable Latin-1 characters, got ${JSON.stringify(String(name))}`,
      { details: { name: 'name' } },
    );
  }
}

/** The 32 digest bytes of `SHA-256=<base64url or base64, padded or not | 64 hex digits>`, or null. */
function parseDigest(text: string): Uint8Array | null {
  if (!text.startsWith(SHA256_PREFIX)) return null;
  const v = text.slice(SHA256_PREFIX.length);
  if (/^(?:[0-9a-f]{64}|[0-9A-F]{64})$/.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9_-]{43}=?$/.test(v) || /^[A-Za-z0-9+/]{43}=?$/.test(v)) {
    const bytes = Buffer.from(v.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    return bytes.length === 32 ? bytes : null;
  }
  return null;
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

class ObjectRead {
  readonly #jsm: JetStreamManager;
  readonly #bucket: string;
  readonly #name: string;
  readonly #stream: string;

  constructor(jsm: JetStreamManager, bucket: string, name: string) {
    this.#jsm = jsm;
    this.#bucket = bucket;
    this.#name = name;
    this.#stream = objectStreamName(bucket);
  }

  #where(): string {
    return `object ${JSON.stringify(this.#name)} of bucket ${this.#bucket}`;
  }

  #details(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { bucket: this.#bucket, object: this.#name, stream: this.#stream, ...extra };
  }

  corrupt(what: string, extra: Record<string, unknown> = {}): StoreError {
    return new StoreError('OBJECT_CORRUPT', `${this.#where()} is corrupt: ${what}`, {
      details: this.#details(extra),
    });
  }

  async get(
    query: MsgRequest | { seq: number; next_by_subj: string },
    what: string,
  ): Promise<StoredMsg | null> {
    try {
      // NextMsgRequest is valid for STREAM.MSG.GET (server 2.9+); the client's type lists it only for direct gets.
      return await this.#jsm.streams.getMessage(this.#stream, query as MsgRequest);
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) {
        throw new StoreError(
          'BUCKET_NOT_FOUND',
          `cannot read ${this.#where()}: stream ${this.#stream} does not exist`,
          { cause: err, details: this.#details() },
        );
      }
      throw new StoreError(
        'STORE_UNAVAILABLE',
        `cannot read ${what} of ${this.#where()}: ${(err as Error)?.message ?? String(err)}`,
        { cause: err, details: this.#details() },
      );
    }
  }

  /** The checked meta, or null when there is no such object or it is deleted. */
  async meta(maxBytes: number): Promise<ObjectMeta | null> {
    const subject = `$O.${this.#bucket}.M.${encodeName(this.#name)}`;
    const msg = await this.get({ last_by_subj: subject }, 'the meta');
    if (msg === null) return null;
    if (msg.subject !== subject) {
      throw this.corrupt(`meta came on subject ${msg.subject}, not ${subject}`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(msg.data));
    } catch (err) {
      throw this.corrupt(`meta at sequence ${msg.seq} is not JSON: ${(err as Error).message}`, {
        seq: msg.seq,
      });
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw this.corrupt(`meta at sequence ${msg.seq} is not a JSON object`, { seq: msg.seq });
    }
    const m = raw as Record<string, unknown>;
    if (m['deleted'] === true) return null;
    if (m['name'] !== this.#name) {
      throw this.corrupt(`meta names object ${JSON.stringify(m['name'])}`);
    }
    if (m['bucket'] !== undefined && m['bucket'] !== this.#bucket) {
      throw this.corrupt(`meta names bucket ${JSON.stringify(m['bucket'])}`);
    }
    const options = (m['options'] ?? {}) as Record<string, unknown>;
    if (typeof options !== 'object' || options === null) throw this.corrupt('meta options is not an object');
    if (options['link'] !== undefined && options['link'] !== null) {
      throw new StoreError(
        'OBJECT_UNSUPPORTED',
        `${this.#where()} is a link to ${JSON.stringify(options['link'])}; links are not followed`,
        { details: this.#details() },
      );
    }
    const { nuid, size, chunks, digest } = m;
    const maxChunkSize = options['max_chunk_size'];
    if (typeof nuid !== 'string' || !NUID_RE.test(nuid)) {
      throw this.corrupt(`meta nuid ${JSON.stringify(nuid)} is not 1-64 alphanumerics`);
    }
    if (!isInt(size)) throw this.corrupt(`meta size ${JSON.stringify(size)} is not a non-negative integer`);
    if (!isInt(chunks))
      throw this.corrupt(`meta chunks ${JSON.stringify(chunks)} is not a non-negative integer`);
    if (!isInt(maxChunkSize) || maxChunkSize === 0) {
      throw this.corrupt(
        `meta options.max_chunk_size ${JSON.stringify(maxChunkSize)} is not a positive integer`,
      );
    }
    if (size > maxBytes) {
      throw new StoreError(
        'OBJECT_TOO_LARGE',
        `${this.#where()} is ${size} bytes, more than the ${maxBytes} accepted`,
        { details: this.#details({ size, maxBytes }) },
      );
    }
    const expectedChunks = Math.ceil(size / maxChunkSize);
    if (chunks !== expectedChunks) {
      throw this.corrupt(
        `meta declares ${chunks} chunks for ${size} bytes in chunks of at most ${maxChunkSize}, expected ${expectedChunks}`,
        { size, chunks, maxChunkSize },
      );
    }
    const parsed = typeof digest === 'string' ? parseDigest(digest) : null;
    if (parsed === null) {
      throw this.corrupt(`meta digest ${JSON.stringify(digest)} is not SHA-256=<32 bytes in base64 or hex>`);
    }
    return { nuid, size, chunks, maxChunkSize, digest: parsed };
  }

  async chunks(meta: ObjectMeta): Promise<Uint8Array> {
    const subject = `$O.${this.#bucket}.C.${meta.nuid}`;
    const out = new Uint8Array(meta.size);
    const sha = createHash('sha256');
    let offset = 0;
    let seq = 1;
    for (let i = 1; i <= meta.chunks; i++) {
      const msg = await this.get({ seq, next_by_subj: subject }, `chunk ${i} of ${meta.chunks}`);
      if (msg === null) {
        throw this.corrupt(`chunk ${i} of ${meta.chunks} is missing (${offset} of ${meta.size} bytes read)`, {
          chunk: i,
        });
      }
      if (msg.subject !== subject || msg.seq < seq) {
        throw this.corrupt(`chunk ${i} came on subject ${msg.subject} at sequence ${msg.seq}`, { chunk: i });
      }
      const data = msg.data;
      if (data.length > meta.maxChunkSize) {
        throw this.corrupt(
          `chunk ${i} is ${data.length} bytes, more than max_chunk_size ${meta.maxChunkSize}`,
          {
            chunk: i,
          },
        );
      }
      if (offset + data.length > meta.size) {
        throw this.corrupt(
          `chunk ${i} of ${data.length} bytes would take the object past its declared ${meta.size} bytes`,
          { chunk: i },
        );
      }
      out.set(data, offset);
      sha.update(data);
      offset += data.length;
      seq = msg.seq + 1;
    }
    const extra = await this.get({ seq, next_by_subj: subject }, 'the end of the chunks');
    if (extra !== null) {
      throw this.corrupt(`a chunk at sequence ${extra.seq} is beyond the ${meta.chunks} declared`, {
        seq: extra.seq,
      });
    }
    if (offset !== meta.size) {
      throw this.corrupt(`chunks hold ${offset} bytes, meta declares ${meta.size}`, {
        size: meta.size,
        offset,
      });
    }
    const digest = sha.digest();
    if (!digest.equals(meta.digest)) {
      throw this.corrupt(
        `SHA-256 of the chunks is ${digest.toString('hex')}, meta declares ${Buffer.from(meta.digest).toString('hex')}`,
      );
    }
    return out;
  }
}

/**
 * Reads object `name` of JetStream object store `bucket` (as written by `@nats-io/obj`'s
 * `put`/`putBlob`) with read-only rights: it only sends `$JS.API.STREAM.MSG.GET.OBJ_<bucket>`
 * requests (see {@link readOnlyStreamSubjects}), never creates a consumer and skips the account
 * check, so a user with no other JetStream permission can read. Returns null when there is no
 * such object or it is marked deleted.
 *
 * Every check comes before the bytes are trusted: the meta must be a JSON object for this name
 * and bucket with an alphanumeric nuid, `size` ≤ `limits.maxBytes` (`OBJECT_TOO_LARGE`), `chunks`
 * equal to ⌈size / options.max_chunk_size⌉ and a `SHA-256=` digest, all before the buffer is
 * allocated; chunks (walked in stream order with `next_by_subj`, starting at sequence 1) must each
 * fit in max_chunk_size and in the declared size, none may be missing or beyond the declared
 * count, and the total and the SHA-256 must match (`OBJECT_CORRUPT`). Links are not followed
 * (`OBJECT_UNSUPPORTED`); a missing stream is `BUCKET_NOT_FOUND`; any other JetStream failure
 * (timeout, permission, API error) is `STORE_UNAVAILABLE` with the cause chained.
 *
 * Objects overwritten or deleted while being read may fail as `OBJECT_CORRUPT` (their chunks are
 * purged); read again to get the new version.
 */
export async function readObject(
  nc: NatsConnection,
  bucket: string,
  name: string,
  limits: ObjectReadLimits,
): Promise<Uint8Array | null> {
  if (typeof nc !== 'object' || nc === null || typeof (nc as { request?: unknown }).request !== 'function') {
    throw new InvalidArgumentError('nc must be a NATS connection', { details: { name: 'nc' } });
  }
  assertBucket('bucket', bucket);
  assertObjectName(name);
  if (typeof limits !== 'object' || limits === null) {
    throw new InvalidArgumentError('limits must be an object with maxBytes', { details: { name: 'limits' } });
  }
  assertInteger('limits.maxBytes', limits.maxBytes, 0, bufferConstants.MAX_LENGTH);
  const timeoutMs = limits.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  assertInteger('limits.timeoutMs', timeoutMs, 1, 600_000);
  const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: timeoutMs });
  const read = new ObjectRead(jsm, bucket, name);
  const meta = await read.meta(limits.maxBytes);
  if (meta === null) return null;
  return read.chunks(meta);
}

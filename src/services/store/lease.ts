import { randomBytes } from 'node:crypto';
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import { type KV, type KvEntry, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { backoffDelay, sleep } from '../../retry/index.ts';
import { StoreError } from './store-error.ts';

/** Options of {@link acquireLease}. */
export interface LeaseOptions {
  /** KV bucket holding the lease (created if absent: file storage, history 1). */
  readonly bucket: string;
  /** Key of the lease in the bucket; default `coordinator`. */
  readonly key?: string;
  /** Who holds it (a member id); named in `LEASE_HELD` errors seen by others. */
  readonly holder: string;
  /** Lifetime of the lease without renewal, in ms; renewed every ttlMs / 3. */
  readonly ttlMs: number;
  /** How long to wait for a live lease of another holder to expire, in ms; default 0 (fail at once). */
  readonly waitMs?: number;
  /** Replicas of the KV bucket when it is created; default 1. */
  readonly replicas?: number;
  /** Clock, Unix ms; default `Date.now`. */
  readonly now?: () => number;
  /** Called once when the lease is lost (expired unrenewed, taken over); never after `release()`. */
  readonly onLost?: (err: StoreError) => void;
}

/** A held lease (see {@link acquireLease}). */
export interface Lease {
  readonly holder: string;
  /** Random hex id of this holder instance; tells two processes of the same holder apart. */
  readonly instance: string;
  /** When the lease expires unless renewed (Unix ms, holder's clock). */
  expiresUnixMs(): number;
  /**
   * Throws `LEASE_LOST` unless the lease is still held: not expired on this holder's clock,
   * not taken over, not released. Call before every write the lease guards.
   */
  assertHeld(): void;
  /**
   * Stops renewing and deletes the lease if it is still this instance's (compare-and-set on its
   * revision), so another holder can take it at once. Idempotent. Throws `STORE_UNAVAILABLE`
   * when the delete fails for another reason than a lost race; the lease then lapses at expiry.
   */
  release(): Promise<void>;
}

/** The JSON stored under the lease key. */
interface LeaseRecord {
  readonly holder: string;
  readonly instance: string;
  readonly expiresUnixMs: number;
}

const BUCKET_RE = /^[A-Za-z0-9_-]{1,200}$/;
const KEY_RE = /^[A-Za-z0-9_=/-]+(?:\.[A-Za-z0-9_=/-]+)*$/;
const MIN_TTL_MS = 100;
const MAX_TTL_MS = 24 * 3600 * 1000;
/** Delay before the first retry of a failed renewal, ms, before jitter (at most a third of the TTL). */
const RENEW_RETRY_MS = 250;

const isCasConflict = (err: unknown): boolean =>
  err instanceof JetStreamApiError &&
  (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
    err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);

function assertText(name: string, value: unknown, max: number): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new InvalidArgumentError(`${name} must be a string of 1-${max} characters`, { details: { name } });
  }
}

function parseRecord(entry: KvEntry): LeaseRecord | null {
  try {
    const v = JSON.parse(entry.string()) as Partial<LeaseRecord>;
    if (
      typeof v === 'object' &&
      v !== null &&
      typeof v.holder === 'string' &&
      typeof v.instance === 'string' &&
      typeof v.expiresUnixMs === 'number' &&
      Number.isFinite(v.expiresUnixMs)
    ) {
      return { holder: v.holder, instance: v.instance, expiresUnixMs: v.expiresUnixMs };
    }
  } catch {
    // not JSON
  }
  return null;
}

const encode = (r: LeaseRecord) => JSON.stringify(r);

/**
 * Takes the lease `key` of KV bucket `bucket` for `holder`: only one holder at a time may do
 * what the lease guards (e.g. append to a federation's log). The key holds JSON
 * `{ holder, instance, expiresUnixMs }`.
 *
 * - Absent (or deleted) key: created with a create-if-absent write.
 * - Present and expired (`now() > expiresUnixMs`): taken over with a compare-and-set on its revision.
 * - Present and live: polled until it expires or `waitMs` passes, then `LEASE_HELD` naming the
 *   holder and its expiry. A lost race on either write just looks again.
 * - A value that is not a lease record is refused with `LEASE_CORRUPT` (never overwritten).
 *
 * Once held it is renewed every `ttlMs / 3` with a compare-and-set; a renewal that finds another
 * writer's revision, or renewals failing until the expiry passes, lose the lease: `assertHeld()`
 * throws `LEASE_LOST` from then on and `onLost` is called once. Timers are unref'd and cleared on
 * release, so a process can exit while holding a lease.
 *
 * **Clock assumption.** Expiry is written and compared as Unix ms: a holder stops trusting its
 * lease when *its* clock passes the expiry, a contender takes over when *its* clock does. If the
 * contender's clock runs ahead of the holder's by d, the two may both act for up to d. Choose
 * `ttlMs` much larger than the clock skew between machines (NTP keeps it to milliseconds; a TTL of
 * seconds to tens of seconds is ample), and keep fencing with the log's expected-sequence checks.
 *
 * Failures to reach JetStream are `STORE_UNAVAILABLE` with the cause chained.
 */
export async function acquireLease(nc: NatsConnection, options: LeaseOptions): Promise<Lease> {
  if (typeof nc !== 'object' || nc === null || typeof (nc as { request?: unknown }).request !== 'function') {
    throw new InvalidArgumentError('nc must be a NATS connection', { details: { name: 'nc' } });
  }
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object', { details: { name: 'options' } });
  }
  const { bucket, holder, ttlMs } = options;
  const key = options.key ?? 'coordinator';
  const waitMs = options.waitMs ?? 0;
  const replicas = options.replicas ?? 1;
  const now = options.now ?? Date.now;
  if (typeof bucket !== 'string' || !BUCKET_RE.test(bucket)) {
    throw new InvalidArgumentError(
      `options.bucket must be 1-200 characters of A-Z, a-z, 0-9, _ and -, got ${JSON.stringify(String(bucket))}`,
      { details: { name: 'options.bucket' } },
    );
  }
  if (typeof key !== 'string' || key.length > 256 || !KEY_RE.test(key)) {
    throw new InvalidArgumentError(
      `options.key must be a KV key (tokens of A-Z, a-z, 0-9, _ = / - separated by dots), got ${JSON.stringify(String(key))}`,
      { details: { name: 'options.key' } },
    );
  }
  assertText('options.holder', holder, 256);
  assertInteger('options.ttlMs', ttlMs, MIN_TTL_MS, MAX_TTL_MS);
  assertInteger('options.waitMs', waitMs, 0, MAX_TTL_MS);
  assertInteger('options.replicas', replicas, 1, 5);
  if (typeof now !== 'function') {
    throw new InvalidArgumentError('options.now must be a function', { details: { name: 'options.now' } });
  }
  if (options.onLost !== undefined && typeof options.onLost !== 'function') {
    throw new InvalidArgumentError('options.onLost must be a function', {
      details: { name: 'options.onLost' },
    });
  }

  const where = `lease ${key} of bucket ${bucket}`;
  const unavailable = (what: string, cause: unknown) =>
    new StoreError('STORE_UNAVAILABLE', `${where}: ${what}: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
      details: { bucket, key },
    });

  // Requests wait at most a third of the TTL (and never under 1 s, so a loaded server is not mistaken
  // for a dead one): a renewal whose ack was lost (server restarted) must leave time to try again
  // before the lease expires.
  const timeout = Math.max(1000, Math.min(Math.floor(ttlMs / 3), 10_000));
  let kv: KV;
  try {
    kv = await new Kvm(jetstream(nc, { timeout })).create(bucket, {
      storage: StorageType.File,
      history: 1,
      replicas,
      timeout,
      // Reads go to the stream leader: a direct get may answer from a lagging replica.
      allow_direct: false,
    });
  } catch (err) {
    throw unavailable('cannot open or create the bucket', err);
  }
  // The bucket may have existed before with weaker settings (the create above keeps an existing
  // one as it is): a lease in memory, on fewer replicas or expiring by age is no mutual exclusion.
  let config: Partial<StreamConfig>;
  try {
    config = (await kv.status()).streamInfo.config;
  } catch (err) {
    throw unavailable('cannot read the bucket settings', err);
  }
  const problems = leaseBucketProblems(config, replicas);
  if (problems.length > 0) {
    throw new StoreError(
      'STREAM_MISMATCH',
      `${where}: the bucket's stream ${config.name} ${problems.join('; ')}; remove the bucket and start again`,
      { details: { bucket, key, problems } },
    );
  }

  const instance = randomBytes(8).toString('hex');
  const deadline = now() + waitMs;
  const pollMs = Math.min(1000, Math.max(25, Math.floor(ttlMs / 4)));
  for (;;) {
    let entry: KvEntry | null;
    try {
      entry = await kv.get(key);
    } catch (err) {
      throw unavailable('cannot read the lease', err);
    }
    const start = now();
    const mine: LeaseRecord = { holder, instance, expiresUnixMs: start + ttlMs };
    if (entry === null || entry.operation === 'DEL' || entry.operation === 'PURGE') {
      try {
        const revision = await kv.create(key, encode(mine));
        return new HeldLease(kv, { key, bucket, ttlMs, now, onLost: options.onLost }, mine, revision);
      } catch (err) {
        if (isCasConflict(err)) continue; // another contender created it first: look again
        throw unavailable('cannot create the lease', err);
      }
    }
    const current = parseRecord(entry);
    if (current === null) {
      throw new StoreError(
        'LEASE_CORRUPT',
        `${where} holds a value that is not a lease record (revision ${entry.revision}); delete the key by hand`,
        { details: { bucket, key, revision: entry.revision } },
      );
    }
    if (start > current.expiresUnixMs) {
      try {
        const revision = await kv.update(key, encode(mine), entry.revision);
        return new HeldLease(kv, { key, bucket, ttlMs, now, onLost: options.onLost }, mine, revision);
      } catch (err) {
        if (isCasConflict(err)) continue; // renewed or taken over meanwhile: look again
        throw unavailable('cannot take over the expired lease', err);
      }
    }
    if (start >= deadline) {
      throw new StoreError(
        'LEASE_HELD',
        `${where} is held by ${current.holder} (instance ${current.instance}) until ${new Date(current.expiresUnixMs).toISOString()}` +
          (waitMs > 0 ? `, still after waiting ${waitMs} ms` : ''),
        {
          details: {
            bucket,
            key,
            holder: current.holder,
            instance: current.instance,
            expiresUnixMs: current.expiresUnixMs,
          },
        },
      );
    }
    await sleep(Math.max(1, Math.min(pollMs, current.expiresUnixMs - start + 1, deadline - start)));
  }
}

interface HeldLeaseConfig {
  readonly key: string;
  readonly bucket: string;
  readonly ttlMs: number;
  readonly now: () => number;
  readonly onLost: ((err: StoreError) => void) | undefined;
}

class HeldLease implements Lease {
  readonly holder: string;
  readonly instance: string;
  readonly #kv: KV;
  readonly #config: HeldLeaseConfig;
  #revision: number;
  #expires: number;
  #lost: StoreError | null = null;
  #released: Promise<void> | null = null;
  #renewTimer: NodeJS.Timeout | null = null;
  #expiryTimer: NodeJS.Timeout | null = null;
  #renewing: Promise<void> | null = null;
  /** The last renewal failure, chained as the cause of `LEASE_LOST` when the lease expires. */
  #lastError: unknown;
  /** Renewals failed in a row (the retry delay backs off with them). */
  #failedRenewals = 0;

  constructor(kv: KV, config: HeldLeaseConfig, record: LeaseRecord, revision: number) {
    this.#kv = kv;
    this.#config = config;
    this.holder = record.holder;
    this.instance = record.instance;
    this.#revision = revision;
    this.#expires = record.expiresUnixMs;
    this.#armExpiry();
    this.#scheduleRenewal();
  }

  expiresUnixMs(): number {
    return this.#expires;
  }

  assertHeld(): void {
    if (this.#released !== null) {
      throw this.#error('LEASE_LOST', 'was released by this holder');
    }
    if (this.#lost === null && this.#config.now() > this.#expires) this.#expired();
    if (this.#lost !== null) throw this.#lost;
  }

  release(): Promise<void> {
    this.#released ??= this.#release();
    return this.#released;
  }

  async #release(): Promise<void> {
    this.#clearTimers();
    await this.#renewing;
    if (this.#lost !== null) return;
    try {
      await this.#kv.delete(this.#config.key, { previousSeq: this.#revision });
    } catch (err) {
      if (isCasConflict(err)) return; // no longer ours: nothing to release
      throw new StoreError(
        'STORE_UNAVAILABLE',
        `${this.#where()}: cannot delete the lease on release (it lapses at ${new Date(this.#expires).toISOString()}): ${(err as Error)?.message ?? String(err)}`,
        { cause: err, details: this.#details() },
      );
    }
  }

  #where(): string {
    return `lease ${this.#config.key} of bucket ${this.#config.bucket} (holder ${this.holder}, instance ${this.instance})`;
  }

  #details(): Record<string, unknown> {
    return {
      bucket: this.#config.bucket,
      key: this.#config.key,
      holder: this.holder,
      instance: this.instance,
    };
  }

  #error(code: 'LEASE_LOST', what: string, cause?: unknown): StoreError {
    return new StoreError(code, `${this.#where()} ${what}`, {
      details: { ...this.#details(), expiresUnixMs: this.#expires },
      ...(cause === undefined ? {} : { cause }),
    });
  }

  #lose(err: StoreError): void {
    if (this.#lost !== null || this.#released !== null) return;
    this.#lost = err;
    this.#clearTimers();
    try {
      this.#config.onLost?.(err);
    } catch {
      // a throwing callback must not break the lease's bookkeeping
    }
  }

  #expired(cause?: unknown): void {
    this.#lose(
      this.#error(
        'LEASE_LOST',
        `expired at ${new Date(this.#expires).toISOString()} without a successful renewal`,
        cause,
      ),
    );
  }

  #clearTimers(): void {
    if (this.#renewTimer !== null) clearTimeout(this.#renewTimer);
    if (this.#expiryTimer !== null) clearTimeout(this.#expiryTimer);
    this.#renewTimer = null;
    this.#expiryTimer = null;
  }

  /** Fires at expiry, so the loss is noticed (and `onLost` called) even while a renewal hangs. */
  #armExpiry(): void {
    if (this.#expiryTimer !== null) clearTimeout(this.#expiryTimer);
    const ms = Math.max(1, this.#expires - this.#config.now() + 1);
    this.#expiryTimer = setTimeout(() => {
      this.#expiryTimer = null;
      if (this.#lost === null && this.#released === null && this.#config.now() > this.#expires) {
        this.#expired(this.#lastError);
      } else if (this.#lost === null && this.#released === null) {
        this.#armExpiry();
      }
    }, ms);
    this.#expiryTimer.unref();
  }

  /** Renews after `delayMs`: a third of the TTL, or sooner to retry a renewal that failed. */
  #scheduleRenewal(delayMs = Math.floor(this.#config.ttlMs / 3)): void {
    this.#renewTimer = setTimeout(
      () => {
        this.#renewTimer = null;
        this.#renewing = this.#renew()
          .catch((err: unknown) => this.#lose(this.#error('LEASE_LOST', 'failed to renew', err)))
          .finally(() => {
            this.#renewing = null;
          });
      },
      Math.max(1, delayMs),
    );
    this.#renewTimer.unref();
  }

  async #renew(): Promise<void> {
    if (this.#lost !== null || this.#released !== null) return;
    const { key, ttlMs, now } = this.#config;
    const next: LeaseRecord = { holder: this.holder, instance: this.instance, expiresUnixMs: now() + ttlMs };
    try {
      const revision = await this.#kv.update(key, encode(next), this.#revision);
      this.#revision = revision;
      this.#expires = next.expiresUnixMs;
      this.#lastError = undefined;
      this.#failedRenewals = 0;
    } catch (err) {
      if (isCasConflict(err)) {
        // The revision moved: ours if a timed-out write of this instance did land, else taken over.
        // When the key cannot be read, the next renewal tries again (until the expiry passes).
        const owner = await this.#currentOwner();
        if (owner === 'other') {
          this.#lose(this.#error('LEASE_LOST', 'was taken over: its revision changed under it', err));
          return;
        }
        if (owner === 'unknown') {
          this.#lastError = err;
          this.#failedRenewals++;
        }
      } else {
        this.#lastError = err;
        this.#failedRenewals++;
      }
    }
    if (this.#lost !== null || this.#released !== null) return;
    if (now() > this.#expires) {
      this.#expired(this.#lastError);
      return;
    }
    this.#armExpiry();
    // A failed renewal is retried soon, not a third of the TTL later: one lost ack (the server
    // restarted under it) must not let the lease lapse once the server is back.
    const third = Math.floor(ttlMs / 3);
    this.#scheduleRenewal(
      this.#lastError === undefined
        ? undefined
        : backoffDelay(Math.max(1, this.#failedRenewals), {
            baseMs: Math.max(1, Math.min(third, RENEW_RETRY_MS)),
            maxMs: Math.max(1, third),
          }),
    );
  }

  /**
   * After a CAS conflict: `self` (and adopts the current revision) if the key still holds this
   * instance's record, `other` if it does not, `unknown` if it cannot be read.
   */
  async #currentOwner(): Promise<'self' | 'other' | 'unknown'> {
    let entry: KvEntry | null;
    try {
      entry = await this.#kv.get(this.#config.key);
    } catch (err) {
      this.#lastError = err;
      return 'unknown';
    }
    if (entry === null || entry.operation !== 'PUT') return 'other';
    const record = parseRecord(entry);
    if (record === null || record.instance !== this.instance || record.holder !== this.holder) return 'other';
    this.#revision = entry.revision;
    this.#expires = record.expiresUnixMs;
    return 'self';
  }
}

/**
 * Why a lease bucket's stream cannot hold a lease safely: memory storage (lost with the server),
 * fewer replicas than `history.replicas`, an age limit (the lease record would expire on its own),
 * a mirror or sources (written from elsewhere), or direct gets on several replicas (answered by
 * a lagging one).
 * Empty when none applies.
 */
export function leaseBucketProblems(config: Partial<StreamConfig>, replicas: number): string[] {
  const problems: string[] = [];
  if (config.storage !== StorageType.File) problems.push(`storage is ${config.storage}, expected file`);
  if ((config.num_replicas ?? 1) < replicas)
    problems.push(`replicas is ${config.num_replicas ?? 1}, expected ${replicas}`);
  if ((config.max_age ?? 0) !== 0) problems.push(`max_age is ${config.max_age} ns, expected 0 (no expiry)`);
  if (config.mirror != null || (config.sources?.length ?? 0) > 0)
    problems.push('mirrors or sources another stream');
  // A direct get may answer from a replica that lags the leader: a stale lease looks expired.
  if (config.allow_direct === true && (config.num_replicas ?? 1) > 1)
    problems.push('allows direct gets from its replicas, expected reads from the leader only');
  return problems;
}

import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import { BlockRejectedError } from '../../errors/index.ts';
import { bytesToHex, readSnapshotHeader, SnapshotError } from '../../versions/index.ts';
import { maxSnapshotBytes, peekSnapshotHeader } from '../../versions/snapshot.ts';
import { snapshotEpochOf, snapshotWriter } from '../federation-log/index.ts';
import { lazyWriteOnceStore, StoreError, snapshotStore, type WriteOnceObjects } from '../store/index.ts';
import type { RoundHost } from './round-host.ts';

/** The reply that acknowledges a stored (or already stored) snapshot. */
export const SNAPSHOT_ACK: Uint8Array = Uint8Array.of(1);

/**
 * The object name of the snapshot of `height` written by `site` whose bytes hash to `digest`:
 * `height-<h>-<site>-<first 16 hex digits of the SHA-256>`. Names differ for different writers and
 * contents, so storing one snapshot never replaces another.
 */
export function snapshotObjectName(height: number, site: string, digest: Uint8Array): string {
  return `height-${height}-${site}-${bytesToHex(digest).slice(0, 16)}`;
}

/**
 * Snapshots offered by sites (docs/log-format.md, "Aggregates and snapshots"): the coordinator
 * cannot read them (they are encrypted under the federation data key), so a site holding that key
 * can sign and encrypt a snapshot of a wrong model that nothing here can tell from an honest one.
 * What the coordinator enforces is who may write: a snapshot of a height is taken only from the
 * site scheduled to write it (`snapshotWriter`: the commit's voters in turn), so one hostile site
 * poisons at most the heights it writes, and a joining site that refuses such a snapshot (its
 * content is checked against the log's commit) falls back to the one below.
 *
 * Checks, cheapest first: the subject's member is a site; the size against the model's largest
 * snapshot (the subscription already dropped a larger offer on its first chunk); the frame and
 * header's shape; the header names the subject's site, this federation, the model's parameter
 * count and a commit of the log's chain with that commit's model hash; the site is the height's
 * scheduled writer (`SNAPSHOT_NOT_SCHEDULED`); then the ciphertext digest and the site's
 * signature. One snapshot per height and writer: a later offer for it is acknowledged and dropped.
 * It is stored in the write-once stream `COHORT_<F>_SNAPSHOTS` under {@link snapshotObjectName}
 * (a stored object is never replaced: not by this coordinator, and not by anyone with its
 * credentials) and logged as a SnapshotRecord (object name, SHA-256, size, site).
 */
export class SnapshotIntake {
  readonly #host: RoundHost;
  /** Heights and writers (`<h>/<site>`) being stored now. */
  readonly #inFlight = new Set<string>();
  readonly #pending = new Set<Promise<unknown>>();
  readonly #store: () => Promise<WriteOnceObjects>;
  #stored = 0;

  constructor(host: RoundHost) {
    this.#host = host;
    const { ctx } = host;
    this.#store = lazyWriteOnceStore(ctx.transport.connection, snapshotStore(ctx.config.federation.id), {
      replicas: ctx.config.history.replicas,
      timeoutMs: ctx.config.nats.timeoutMs,
      maxPayload: ctx.transport.maxPayload,
    });
  }

  /** Snapshots stored by this coordinator run. */
  get stored(): number {
    return this.#stored;
  }

  /**
   * Most bytes a snapshot of this federation's model can have (model, moments, header and
   * signature: `maxSnapshotBytes`); the snapshot subscription's cap, so a larger offer is dropped
   * on its first chunk, before it is buffered, reassembled or hashed.
   */
  get maxBytes(): number {
    return maxSnapshotBytes(this.#host.parameterCount);
  }

  /** Resolves once every snapshot being stored now is stored (or failed). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }

  /**
   * Takes the snapshot `data` offered on `site`'s snapshot subject: resolves with
   * {@link SNAPSHOT_ACK} once it is stored and logged (or was already), rejects with the refusal
   * (`SnapshotError`, `BlockRejectedError`), which the coordinator counts by its code.
   */
  accept(site: string, data: Uint8Array): Promise<Uint8Array> {
    const p = this.#accept(site, data);
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p)).catch(() => undefined);
    return p;
  }

  async #accept(site: string, data: Uint8Array): Promise<Uint8Array> {
    const { ctx, log } = this.#host;
    if (this.#host.membership.role(site) !== 'site') {
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site of this federation`);
    }
    // The header's shape only: who may write this height is settled before any hash or signature.
    const claimed = peekSnapshotHeader(data, { maxBytes: this.maxBytes });
    if (claimed.signer !== site) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `snapshot on the subject of ${site} names ${JSON.stringify(claimed.signer)} as its signer`,
      );
    }
    if (claimed.federation !== ctx.config.federation.id) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `snapshot for federation ${JSON.stringify(claimed.federation)}`,
      );
    }
    if (claimed.parameterCount !== this.#host.parameterCount) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `snapshot of ${site} holds ${claimed.parameterCount} parameters, the model has ${this.#host.parameterCount}`,
      );
    }
    const h = claimed.height;
    const chain = log.history.commitAt(h);
    if (
      chain === undefined ||
      !bytesEqual(chain.commit.hash, claimed.commitHash) ||
      !bytesEqual(chain.commit.modelHash, claimed.modelHash)
    ) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `snapshot of ${site} names a commit at height ${h} that is not on the log's chain`,
      );
    }
    const writer =
      chain.decision === null
        ? undefined
        : snapshotWriter(
            chain.decision,
            h,
            ctx.config.history.snapshotEvery,
            snapshotEpochOf(log.history, h),
          );
    if (writer !== site) {
      throw new SnapshotError(
        'SNAPSHOT_NOT_SCHEDULED',
        writer !== undefined
          ? `the snapshot of height ${h} is written by ${writer}, not ${site}`
          : chain.decision === null && chain.commit.kind !== 'genesis'
            ? `height ${h} is older than the decisions this coordinator keeps: its writer cannot be checked`
            : `no snapshot is due at height ${h}`,
        { details: { height: h, site, ...(writer === undefined ? {} : { writer }) } },
      );
    }
    const slot = `${h}/${site}`;
    if (
      this.#inFlight.has(slot) ||
      log.history.snapshots.some((s) => s.snapshot.height === h && s.snapshot.site === site)
    ) {
      return SNAPSHOT_ACK;
    }
    this.#inFlight.add(slot);
    try {
      readSnapshotHeader(data, (id) => (id === site ? ctx.keys(site) : undefined), {
        maxBytes: this.maxBytes,
      });
      const digest = sha256(data);
      const name = snapshotObjectName(h, site, digest);
      await this.#storeOnce(name, data);
      await log.append({
        snapshot: {
          commitHash: claimed.commitHash,
          height: h,
          object: name,
          digest,
          bytes: data.length,
          site,
        },
      });
      this.#stored++;
      this.#host.emit({ type: 'snapshot', height: h, site, bytes: data.length });
      ctx.log.info({ height: h, site, bytes: data.length, object: name }, 'snapshot stored');
    } finally {
      this.#inFlight.delete(slot);
    }
    return SNAPSHOT_ACK;
  }

  /**
   * Puts `data` under `name`; the same bytes stored before (a run that stored them and stopped
   * before logging them) count as stored, an object of that name with other bytes is never
   * replaced (the stream refuses it).
   */
  async #storeOnce(name: string, data: Uint8Array): Promise<void> {
    const store = await this.#store();
    try {
      await store.put(name, data);
    } catch (err) {
      if (err instanceof StoreError && err.code === 'OBJECT_EXISTS') {
        throw new BlockRejectedError(
          'DUPLICATE',
          `snapshot object ${name} exists with other content; a stored snapshot is never overwritten`,
        );
      }
      throw err;
    }
  }
}

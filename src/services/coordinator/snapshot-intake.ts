import type { ObjectStore } from '@nats-io/obj';
import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import { BlockRejectedError } from '../../errors/index.ts';
import { readSnapshotHeader } from '../../versions/index.ts';
import { lazyObjectStore } from '../store/index.ts';
import type { RoundHost } from './round-host.ts';

/** The reply that acknowledges a stored (or already stored) snapshot. */
export const SNAPSHOT_ACK: Uint8Array = Uint8Array.of(1);

/** Header, signature and framing room on top of the model and strategy state in a snapshot. */
const SNAPSHOT_OVERHEAD_BYTES = 1 << 20;

/**
 * Snapshots offered by sites (DESIGN §5): the coordinator cannot read them (they are encrypted
 * under the federation data key), but it checks, cheapest first, that one is no larger than the
 * model and its strategy state can make it, is signed by the site whose subject it came on, and
 * names a commit of the log's chain with that commit's model hash; then stores it in the object
 * store `cohort-<F>-snapshots` as `height-<h>` and logs a SnapshotRecord (object name, SHA-256,
 * size, site). The first snapshot of a height wins; later offers for it are acknowledged and
 * dropped. A joining site verifies the content itself against the log's commit.
 */
export class SnapshotIntake {
  readonly #host: RoundHost;
  readonly #inFlight = new Set<number>();
  readonly #pending = new Set<Promise<unknown>>();
  readonly #store: () => Promise<ObjectStore>;
  #stored = 0;

  constructor(host: RoundHost) {
    this.#host = host;
    const { ctx } = host;
    this.#store = lazyObjectStore(ctx.transport.connection, ctx.subjects.snapshotsBucket, {
      replicas: ctx.config.history.replicas,
      description: `Cohort ${ctx.config.federation.id}: encrypted model snapshots`,
    });
  }

  /** Snapshots stored by this coordinator run. */
  get stored(): number {
    return this.#stored;
  }

  /** Most bytes a snapshot of this federation's model can have (model, moments, overhead). */
  get maxBytes(): number {
    return SNAPSHOT_OVERHEAD_BYTES + this.#host.parameterCount * 4 * 3;
  }

  /** Resolves once every snapshot being stored now is stored (or failed). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }

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
    const key = ctx.keys(site);
    const header = readSnapshotHeader(data, (id) => (id === site ? key : undefined), {
      maxBytes: this.maxBytes,
    });
    if (header.signer !== site) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `snapshot on the subject of ${site} is signed by ${header.signer}`,
      );
    }
    if (header.federation !== ctx.config.federation.id) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `snapshot for federation ${JSON.stringify(header.federation)}`,
      );
    }
    const commit = log.history.commitAt(header.height);
    if (
      commit === undefined ||
      !bytesEqual(commit.commit.hash, header.commitHash) ||
      !bytesEqual(commit.commit.modelHash, header.modelHash)
    ) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `snapshot of ${site} names a commit at height ${header.height} that is not on the log's chain`,
      );
    }
    if (header.parameterCount !== this.#host.parameterCount) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `snapshot of ${site} holds ${header.parameterCount} parameters, the model has ${this.#host.parameterCount}`,
      );
    }
    const h = header.height;
    if (this.#inFlight.has(h) || log.history.snapshots.some((s) => s.snapshot.height === h))
      return SNAPSHOT_ACK;
    this.#inFlight.add(h);
    try {
      const name = `height-${h}`;
      await (await this.#store()).putBlob({ name }, data);
      await log.append({
        snapshot: {
          commitHash: header.commitHash,
          height: h,
          object: name,
          digest: sha256(data),
          bytes: data.length,
          site,
        },
      });
      this.#stored++;
      this.#host.emit({ type: 'snapshot', height: h, site, bytes: data.length });
      ctx.log.info({ height: h, site, bytes: data.length }, 'snapshot stored');
    } finally {
      this.#inFlight.delete(h);
    }
    return SNAPSHOT_ACK;
  }
}

import type { BlockRejectReason } from '../errors/index.ts';

/**
 * Counts rejected inputs by reason code. Verifiers increment it on every refusal so operators can
 * see what is being rejected (exported to Prometheus by the services).
 */
export class RejectionCounters {
  readonly #counts = new Map<BlockRejectReason, number>();

  increment(reason: BlockRejectReason): void {
    this.#counts.set(reason, (this.#counts.get(reason) ?? 0) + 1);
  }

  /** Count for one reason (0 if never seen). */
  get(reason: BlockRejectReason): number {
    return this.#counts.get(reason) ?? 0;
  }

  /** Copy of all non-zero counts. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.#counts);
  }
}

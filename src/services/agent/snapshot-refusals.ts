import { bytesToHex } from '../../versions/index.ts';
import type { LoggedSnapshot } from '../federation-log/index.ts';
import type { AgentCore } from './agent-core.ts';

/** Refusals kept in {@link SnapshotRefusals.recent}. */
const RECENT_REFUSALS = 32;

/** One logged snapshot a site refused to start from. */
export interface SnapshotRefusal {
  /** Height of the commit the snapshot claims. */
  readonly height: number;
  /** Its object in the snapshot store. */
  readonly object: string;
  /** The site the log records as its writer. */
  readonly site: string;
  /**
   * The member whose signature over the snapshot verified, when the refusal is of what it signed
   * (its content is not the commit's): that member handed in a wrong snapshot. Undefined when the
   * stored bytes are not what the site signed (a digest or signature that does not check).
   */
  readonly signer: string | undefined;
  /** The refusal's stable code (`SNAPSHOT_MODEL_MISMATCH`, `SNAPSHOT_DECRYPT_FAILED`, …). */
  readonly reason: string;
  readonly message: string;
}

/**
 * The snapshots one site refused (their content is not the log's commit, or their bytes are not
 * what the log records), counted by reason and by the signer held responsible, and remembered so
 * that the site never fetches and decrypts one of them again.
 */
export class SnapshotRefusals {
  readonly #refused = new Set<string>();
  readonly #byReason = new Map<string, number>();
  readonly #bySigner = new Map<string, number>();
  readonly #recent: SnapshotRefusal[] = [];
  #total = 0;

  /** Counts `refusal` of `snapshot` and remembers the snapshot (its object and digest). */
  record(snapshot: LoggedSnapshot, refusal: SnapshotRefusal): void {
    this.#refused.add(keyOf(snapshot));
    this.#total++;
    this.#byReason.set(refusal.reason, (this.#byReason.get(refusal.reason) ?? 0) + 1);
    if (refusal.signer !== undefined) {
      this.#bySigner.set(refusal.signer, (this.#bySigner.get(refusal.signer) ?? 0) + 1);
    }
    this.#recent.push(refusal);
    if (this.#recent.length > RECENT_REFUSALS) this.#recent.shift();
  }

  /** Whether `snapshot` (the same object with the same digest) was refused before. */
  has(snapshot: LoggedSnapshot): boolean {
    return this.#refused.has(keyOf(snapshot));
  }

  /** Refusals so far. */
  get total(): number {
    return this.#total;
  }

  /** Refusals by reason code. */
  byReason(): Record<string, number> {
    return Object.fromEntries(this.#byReason);
  }

  /** Refusals of what a member signed, by that member. */
  bySigner(): Record<string, number> {
    return Object.fromEntries(this.#bySigner);
  }

  /** The last refusals (at most 32), oldest first. */
  get recent(): readonly SnapshotRefusal[] {
    return [...this.#recent];
  }
}

function keyOf(s: LoggedSnapshot): string {
  return `${s.snapshot.object}\n${bytesToHex(s.snapshot.digest)}`;
}

const refusalsOfCore = new WeakMap<AgentCore, SnapshotRefusals>();

/** The snapshot refusals of the agent whose core is `core` (one tally per agent, made on first use). */
export function snapshotRefusalsOf(core: AgentCore): SnapshotRefusals {
  let refusals = refusalsOfCore.get(core);
  if (refusals === undefined) {
    refusals = new SnapshotRefusals();
    refusalsOfCore.set(core, refusals);
  }
  return refusals;
}

import type { ContributionKey } from '../services/store/index.ts';

/** One stored log entry as a source holds it: its position and its exact bytes, not yet verified. */
export interface StoredEntry {
  /** The entry's position in the log (its JetStream sequence). */
  readonly sequence: number;
  /** The stored frame bytes. */
  readonly bytes: Uint8Array;
}

/** What a source answered when asked for an aggregate object. */
export type AggregateRead =
  | { readonly status: 'found'; readonly bytes: Uint8Array }
  /** The store holds no object of this name (or it was deleted). */
  | { readonly status: 'absent' }
  /** The object is larger than the reader accepts (its declared size, before any chunk was read). */
  | { readonly status: 'too-large'; readonly reason: string }
  /** The store's own record of the object is inconsistent (meta, chunks, its digest). */
  | { readonly status: 'corrupt'; readonly reason: string }
  /** The object could not be read (no access, timeout, not in the bundle): the check is not made. */
  | { readonly status: 'unavailable'; readonly reason: string };

/**
 * What a source answered when asked for a stored contribution: as for an aggregate (its bytes are
 * the contribution's encoding, `encodeContribution`), or `overwritten`: a frame of it was written
 * more than once (`bytes` holds the first message of each frame, `reason` says which).
 */
export type ContributionRead =
  | AggregateRead
  | { readonly status: 'overwritten'; readonly bytes: Uint8Array; readonly reason: string };

/**
 * Where an audit reads a federation's evidence: the log's stored entries and the aggregate objects
 * its decisions name. A live source reads them over NATS with a member's read-only credentials; a
 * bundle source from an exported bundle file. Sources verify nothing: the audit does.
 */
export interface AuditSource {
  readonly kind: 'live' | 'bundle';
  readonly federation: string;
  /** The log stream's name. */
  readonly stream: string;
  /** The member whose credentials read (or exported) the evidence, when known. */
  readonly member: string | null;
  /** Bundle: when it was exported; null live. */
  readonly exportedUnixMs: number | null;
  /** The log's last sequence (0: empty): what the stream's state (or the bundle) claims. */
  lastSequence(): Promise<number>;
  /**
   * The stored entries from sequence 1 up to `until` in increasing sequence order, each at most
   * once; an entry that is not stored (removed) is skipped, so the audit sees the gap.
   */
  entries(until: number): AsyncIterable<StoredEntry>;
  /** Object `name` of the federation's aggregate store, refusing one above `maxBytes`. */
  aggregate(name: string, maxBytes: number): Promise<AggregateRead>;
  /**
   * The stored contribution `key` (the contributions stream, or a bundle's copy), refusing one of
   * more than `maxFrames` frames or `maxBytes` bytes; absent: the source holds no contributions
   * (each round's re-addition is then listed as not made).
   */
  contribution?(key: ContributionKey, maxBytes: number, maxFrames: number): Promise<ContributionRead>;
  /**
   * When the evidence was read (ms since the epoch): now for a live source, the export time for a
   * bundle (never later than now). A contribution counts as expired only if its round ended a
   * retention before this. Absent: now.
   */
  readAtUnixMs?(): number;
}

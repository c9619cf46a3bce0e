/**
 * The code a NO vote's reason starts with when the site's own update, received by its aggregator
 * (the vote carries the aggregator's signed receipt), is missing from the aggregate.
 */
export const UPDATE_DROPPED = 'UPDATE_DROPPED';

/** The error a vote NO is made of: its message is the reason. */
export class VoteNo extends Error {
  /** Evidence the vote carries: the aggregator's receipt of an update it left out. */
  readonly receipt: Uint8Array | undefined;
  constructor(message: string, receipt?: Uint8Array) {
    super(message);
    this.receipt = receipt;
  }
}

/** Codes of errors that say a store, the log or a request could not be answered now, not that anything is wrong. */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set(['STORE_UNAVAILABLE', 'LOG_UNAVAILABLE']);

/**
 * Whether `err` (or an error in its `cause` chain) is a read that could not be answered now: a
 * store or the log that did not answer in time. Such a failure says nothing about the round, so a
 * voter abstains rather than objecting (docs/round-protocol.md, "Abstaining").
 */
export function readUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  }
  return false;
}

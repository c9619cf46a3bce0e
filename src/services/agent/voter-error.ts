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

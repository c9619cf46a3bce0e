import { CohortError } from './cohort-error.ts';

/**
 * Stable reason codes for a rejected ParameterBlock, manifest or aggregate. Each is also the
 * label of the `rejected` counter, so a code is never renamed once released.
 */
export const BLOCK_REJECT_REASONS = [
  /** Fewer bytes than the framing or a field needs. */
  'TRUNCATED',
  /** Bytes that are not a ParameterBlock at all (protobuf decode failed, bad magic or version). */
  'MALFORMED',
  /** A required header field is missing or out of range. */
  'BAD_HEADER',
  /** Payload CRC32 mismatch (transport corruption). */
  'CRC_MISMATCH',
  /** Signature does not verify over the canonical header and payload digest. */
  'BAD_SIGNATURE',
  /** Signed by a key other than the one registered for the named signer, or signer unknown. */
  'WRONG_SIGNER',
  /** Signature algorithm not allowed by the federation. */
  'ALGORITHM_NOT_ALLOWED',
  /** Block names another federation, round or base commit than the receiver expects (replay). */
  'WRONG_CONTEXT',
  /** Same (signer, block index) seen twice in one update. */
  'DUPLICATE',
  /** Ciphertext was produced under other CKKS parameters than the federation's. */
  'CKKS_PARAMS_MISMATCH',
  /** Block index/count disagree with each other or with the manifest. */
  'BLOCK_COUNT_MISMATCH',
  /** Update digest in the manifest does not match the blocks received. */
  'DIGEST_MISMATCH',
  /** Blocks being summed use different encodings (bits, lanes, scale, geometry). */
  'ENCODING_MISMATCH',
  /** A lane of a decrypted sum exceeds the headroom for the number of contributors. */
  'LANE_OVERFLOW',
  /** More bytes than a message of its kind can hold: refused before it is decoded. */
  'OVERSIZE',
  /** A size or weight other than the round pinned in its RoundOpen. */
  'NOT_PINNED',
  /** An aggregate's contributor list is not the round's: a listed site is no participant of it. */
  'INTEGRITY_MISMATCH',
  /**
   * A decrypted aggregate's MAC does not hold: it is not the exact sum of its listed contributions
   * of this round (an aggregator or the coordinator added, left out, repeated or swapped
   * something), or a contributor wrote a wrong tag. Every decrypting site finds the same.
   */
  'MAC_MISMATCH',
  /**
   * A site's threshold decryption shares that do not open: made for another round attempt,
   * aggregate, cohort, decrypting set or site, signed by another key, or sealed under another key.
   */
  'SHARES_INVALID',
] as const;

export type BlockRejectReason = (typeof BLOCK_REJECT_REASONS)[number];

/** A block, manifest or aggregate was refused; `reason` is one of {@link BLOCK_REJECT_REASONS}. */
export class BlockRejectedError extends CohortError {
  readonly reason: BlockRejectReason;
  constructor(
    reason: BlockRejectReason,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(`BLOCK_${reason}`, message, options);
    this.reason = reason;
  }
}

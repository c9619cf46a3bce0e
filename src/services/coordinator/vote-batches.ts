import { assertInteger } from '../../errors/index.ts';
import type { BatchedVote } from '../../protocol/index.ts';
import { LOG_MAX_APPEND_BYTES } from '../federation-log/index.ts';

/**
 * Bytes a vote entry takes besides its votes, at most: the frame header, the `SignedEnvelope`
 * fields with the coordinator's signature (ML-DSA-65: 3,309 bytes; Falcon-512: at most 752), and the
 * `LogRecord` and `VoteBatch` fields (federation id, sequence, previous entry, clock, round,
 * attempt). A margin well above their sum (about 4 KiB), so a batch never trips the cap.
 */
export const VOTE_ENTRY_OVERHEAD_BYTES = 16 * 1024;

/**
 * Bytes a vote adds to a `VoteBatch` besides its member id and envelope, at most: the tags and
 * length prefixes of the repeated field and of `BatchedVote`'s two fields (10 for an envelope
 * under 2 MiB; a vote envelope is capped at 8 KiB).
 */
const VOTE_FIELD_BYTES = 16;

/** Bytes of an append's headers reserved within the server's `max_payload`, as the writer does. */
const APPEND_HEADER_BYTES = 1024;

const encoder = new TextEncoder();

/** Bytes `vote` adds to a batch, at most. */
export function batchedVoteBytes(vote: BatchedVote): number {
  return encoder.encode(vote.member).length + vote.envelope.length + VOTE_FIELD_BYTES;
}

/**
 * The largest vote entry the coordinator appends, in bytes: what the log writer appends
 * (`LOG_MAX_APPEND_BYTES`: the log's cap less the append's headers), or less when the server's
 * `max_payload` is smaller (an append is one NATS message, headers included; the client refuses
 * a larger one before it is sent). The server's `max_payload` is 1 MiB unless configured.
 */
export function voteEntryLimit(maxPayload: number): number {
  assertInteger('maxPayload', maxPayload, 1, Number.MAX_SAFE_INTEGER);
  return Math.max(1, Math.min(LOG_MAX_APPEND_BYTES, maxPayload - APPEND_HEADER_BYTES));
}

/**
 * Splits the votes of a decision into as few batches as fit, keeping their order: each batch's
 * votes take at most `entryBytes - VOTE_ENTRY_OVERHEAD_BYTES` bytes ({@link batchedVoteBytes}),
 * so the sealed entry stays under `entryBytes`. A vote too large for any batch (every vote, when
 * `entryBytes` is at most the overhead) gets a batch of its own, as votes were logged before
 * batches; the writer refuses an entry over the log's cap. No votes: no batch.
 *
 * @param entryBytes the largest entry to append ({@link voteEntryLimit}).
 */
export function batchVotes(votes: readonly BatchedVote[], entryBytes: number): BatchedVote[][] {
  assertInteger('entryBytes', entryBytes, 1, Number.MAX_SAFE_INTEGER);
  const budget = Math.max(0, entryBytes - VOTE_ENTRY_OVERHEAD_BYTES);
  const batches: BatchedVote[][] = [];
  let batch: BatchedVote[] = [];
  let used = 0;
  for (const vote of votes) {
    const bytes = batchedVoteBytes(vote);
    if (batch.length > 0 && used + bytes > budget) {
      batches.push(batch);
      batch = [];
      used = 0;
    }
    batch.push(vote);
    used += bytes;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

// The coordinator logs a decision's votes in as few entries as fit (vote-batches.ts): the split
// keeps the voters' order, fills each batch, and every batch seals (coordinator-signed log record)
// under the entry limit, whatever the coordinator's signature algorithm.
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair, type SigningKeyPair } from '../../../crypto/signature/index.ts';
import { type BatchedVote, type ControlBodies, sealControl } from '../../../src/protocol/index.ts';
import {
  batchedVoteBytes,
  batchVotes,
  VOTE_ENTRY_OVERHEAD_BYTES,
  voteEntryLimit,
} from '../../../src/services/coordinator/vote-batches.ts';
import { LOG_MAX_APPEND_BYTES } from '../../../src/services/federation-log/index.ts';

const F = 'vote-batches-federation';
const N = 300;
const member = (i: number) => `site-${String(i).padStart(3, '0')}`;
const siteKey = generateSigningKeyPair('falcon-512');

/** N votes as sites seal them (Falcon-512, a YES with hashes and an evaluation-free body). */
const realVotes: BatchedVote[] = Array.from({ length: N }, (_, i) => {
  const body: ControlBodies['vote'] = {
    federation: F,
    round: 123_456,
    member: member(i),
    yes: true,
    commitHash: new Uint8Array(32).fill(i % 251),
    modelHash: new Uint8Array(32).fill(7),
    reason: '',
    meanUpdateRms: 0.0123,
    bytesSent: 1_234_567,
    stateHash: new Uint8Array(32).fill(3),
    attempt: new Uint8Array(16).fill(5),
    evaluation: null,
  };
  return { member: member(i), envelope: sealControl('vote', body, member(i), siteKey) };
});

/** The entry the coordinator appends for `votes`, sealed with `key`, at a late sequence. */
function sealed(votes: BatchedVote[], key: SigningKeyPair): Uint8Array {
  return sealControl(
    'log-record',
    {
      federation: F,
      sequence: 9_007_199_254_740_000,
      previousEntry: new Uint8Array(32).fill(1),
      unixMs: 1_700_000_000_000,
      votes: { round: 123_456, attempt: new Uint8Array(16).fill(5), votes },
    },
    'coordinator-with-a-long-member-id',
    key,
  );
}

describe('batchVotes', () => {
  it('splits 300 votes of 1,500 bytes into batches of 161 under a 256 KiB entry (known answer)', () => {
    const votes = Array.from({ length: N }, (_, i) => ({
      member: member(i),
      envelope: new Uint8Array(1500).fill(i % 256),
    }));
    // 8-byte member + 1,500-byte envelope + 16 bytes of fields = 1,524; (262,144 − 16,384) / 1,524 = 161.3.
    expect(batchedVoteBytes(votes[0]!)).toBe(1524);
    expect(VOTE_ENTRY_OVERHEAD_BYTES).toBe(16 * 1024);
    const batches = batchVotes(votes, 256 * 1024);
    expect(batches.map((b) => b.length)).toEqual([161, 139]);
    expect(batches.flat()).toEqual(votes);
  });

  it('real Falcon-signed votes: order kept, each batch full, each sealed entry under the limit', () => {
    const limit = 128 * 1024;
    const batches = batchVotes(realVotes, limit);
    expect(batches.length).toBeGreaterThan(2);
    expect(batches.flat().map((v) => v.member)).toEqual(realVotes.map((v) => v.member));
    const budget = limit - VOTE_ENTRY_OVERHEAD_BYTES;
    const used = (b: BatchedVote[]) => b.reduce((n, v) => n + batchedVoteBytes(v), 0);
    for (const [i, b] of batches.entries()) {
      expect(used(b), `batch ${i}`).toBeLessThanOrEqual(budget);
      // As few entries as fit: the next batch's first vote would not have fitted in this one.
      if (i < batches.length - 1)
        expect(used(b) + batchedVoteBytes(batches[i + 1]![0]!)).toBeGreaterThan(budget);
    }
    // The estimate bounds the sealed entry, with either coordinator algorithm (ML-DSA-65's
    // signature is 3,309 bytes), and the fields' estimate is never below their encoded size.
    for (const key of [generateSigningKeyPair('falcon-512'), generateSigningKeyPair('ml-dsa-65')]) {
      for (const b of batches) {
        const bytes = sealed(b, key).length;
        expect(bytes).toBeLessThanOrEqual(limit);
        expect(bytes - VOTE_ENTRY_OVERHEAD_BYTES).toBeLessThanOrEqual(used(b));
      }
    }
  });

  it('at the default 1 MiB max_payload the 300 votes take one entry; a tiny limit, one vote each', () => {
    expect(voteEntryLimit(1024 * 1024)).toBe(1024 * 1024 - 1024);
    expect(voteEntryLimit(64 * 1024 * 1024)).toBe(LOG_MAX_APPEND_BYTES);
    const one = batchVotes(realVotes, voteEntryLimit(1024 * 1024));
    expect(one).toHaveLength(1);
    expect(sealed(one[0]!, generateSigningKeyPair('falcon-512')).length).toBeLessThanOrEqual(
      voteEntryLimit(1024 * 1024),
    );
    expect(batchVotes(realVotes.slice(0, 3), 1000).map((b) => b.map((v) => v.member))).toEqual([
      ['site-000'],
      ['site-001'],
      ['site-002'],
    ]);
    expect(batchVotes([], 1024 * 1024)).toEqual([]);
    expect(() => batchVotes(realVotes, 0)).toThrow(/entryBytes/);
  });
});

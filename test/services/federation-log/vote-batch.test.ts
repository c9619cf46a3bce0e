// Batched vote entries (cohort.proto `VoteBatch`, docs/log-format.md): the bytes a batch seals to,
// its round trip through a signed entry, and the evidence rules, exactly as strict for a batch as
// for the single `VoteRecord`s older logs hold (both are still folded).
import { spawnSync } from 'node:child_process';
import { dirname } from 'node:path';
import protobuf from 'protobufjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../../crypto/digest/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../../crypto/signature/index.ts';
import {
  type ControlBodies,
  type DecisionBody,
  FRAME_KIND,
  type LogRecordBody,
  PROTO_PATH,
  sealControl,
  unframe,
  type VoteBatchBody,
  type VoteRecordBody,
} from '../../../src/protocol/index.ts';
import {
  type EvidenceKeys,
  EvidenceViolation,
  FederationLogError,
  type LogEntry,
  LogHistory,
  openLogEntry,
  RoundEvidence,
  recordKind,
  recordsHeld,
} from '../../../src/services/federation-log/index.ts';
import { type Commit, genesisCommit, roundCommit } from '../../../src/versions/index.ts';
import { emptyDecision } from '../../helpers/log-records.ts';

const F = 'vb-fed';
const COORDINATOR = 'coordinator';
const SITES = ['site-0', 'site-1', 'site-2', 'site-3'];
const coordinatorKey = generateSigningKeyPair('falcon-512');
const siteKeys = new Map<string, SigningKeyPair>();
const H = (text: string) => sha256(new TextEncoder().encode(text));
const genesis = genesisCommit(new Float32Array([0.5, -0.25, 1]), new TextEncoder().encode('{}'));

beforeAll(() => {
  for (const s of SITES) siteKeys.set(s, generateSigningKeyPair('falcon-512'));
});

const attemptOf = (round: number) => new Uint8Array(16).fill(round);

function roundOpen(round: number, base: Commit): ControlBodies['round-open'] {
  return {
    federation: F,
    round,
    version: base.height,
    baseCommit: base.hash,
    assignments: SITES.map((site) => ({ site, aggregator: 'agg-1', examples: 10 })),
    bits: 8,
    clip: 1,
    maxContributors: 16,
    crcChunkBytes: 4096,
    deadlineUnixMs: 1,
    totalExamples: 40,
    totalParams: 3,
    attempt: attemptOf(round),
  };
}

/** `member`'s vote envelope on `round`, signed with its key (YES for `commit` when given). */
function envelope(member: string, round: number, commit?: Commit, attempt = attemptOf(round)): Uint8Array {
  const body: ControlBodies['vote'] = {
    federation: F,
    round,
    member,
    yes: commit !== undefined,
    commitHash: commit?.hash ?? new Uint8Array(0),
    modelHash: commit?.modelHash ?? new Uint8Array(0),
    reason: commit === undefined ? 'disk full' : '',
    meanUpdateRms: 0,
    bytesSent: 0,
    stateHash: new Uint8Array(32),
    attempt,
    evaluation: null,
  };
  return sealControl('vote', body, member, siteKeys.get(member)!);
}

function batch(round: number, members: string[], commit?: Commit): VoteBatchBody {
  return {
    round,
    attempt: attemptOf(round),
    votes: members.map((member) => ({ member, envelope: envelope(member, round, commit) })),
  };
}

function single(round: number, member: string, commit?: Commit): VoteRecordBody {
  return { round, attempt: attemptOf(round), member, envelope: envelope(member, round, commit) };
}

/** Hand-made entries: LogHistory checks records, not links or signatures (the reader does). */
class Entries {
  #sequence = 0;
  next(record: Partial<LogRecordBody>): LogEntry {
    const sequence = ++this.#sequence;
    const bytes = new Uint8Array([sequence]);
    return {
      sequence,
      bytes,
      hash: sha256(bytes),
      record: { federation: F, sequence, previousEntry: new Uint8Array(32), unixMs: 1, ...record },
    };
  }
}

function abort(round: number, head: Commit, voters: string[]): DecisionBody {
  return { ...emptyDecision(F, round, head), voters, reason: 'NO', attempt: attemptOf(round) };
}

/** A COMMIT of `round` on `head` to `next`, counting `voters` (no partials logged: no contributors). */
function commit(round: number, head: Commit, next: Commit, voters: string[]): DecisionBody {
  return {
    ...emptyDecision(F, round, head),
    commit: true,
    commitHash: next.hash,
    modelHash: next.modelHash,
    height: next.height,
    aggregateDigest: next.aggregateDigest,
    voters,
    kind: 'round',
    params: next.params,
    aggregate: {
      encoding: {} as never, // not read by the history rules
      totalParams: 3,
      contributors: [],
      totalWeight: 0,
      participants: 0,
      totalExamples: 0,
      object: `round-${round}`,
      objectBytes: 1,
    },
    attempt: attemptOf(round),
  };
}

/** The `LOG_HISTORY_INVALID` refusal of applying `entry`, with its evidence rule and record. */
function refusal(history: LogHistory, entry: LogEntry): { rule: unknown; at: unknown; message: string } {
  try {
    history.apply(entry);
  } catch (err) {
    if (!(err instanceof FederationLogError) || err.code !== 'LOG_HISTORY_INVALID') throw err;
    return { rule: err.details['rule'], at: err.details['at'], message: err.message };
  }
  throw new Error(`entry ${entry.sequence} was applied`);
}

describe('a VoteBatch entry', () => {
  it('seals to the known protobuf bytes (LogRecord field 17) and decodes with protoc', () => {
    const votes: VoteBatchBody = {
      round: 7,
      attempt: new Uint8Array(16).fill(9),
      votes: [
        { member: 'a', envelope: new Uint8Array([1, 2, 3]) },
        { member: 'bc', envelope: new Uint8Array([4]) },
      ],
    };
    const record: LogRecordBody = { federation: F, sequence: 5, previousEntry: H('prev'), unixMs: 1, votes };
    const sealed = sealControl('log-record', record, COORDINATOR, coordinatorKey);
    const root = protobuf.loadSync(PROTO_PATH);
    const envelopeType = root.lookupType('cohort.v1.SignedEnvelope');
    const body = (envelopeType.decode(unframe(sealed, FRAME_KIND.control)) as unknown as { body: Uint8Array })
      .body;
    // federation (0a), sequence (10), previous_entry (1a), unix_ms (20), then the batch: tag 17
    // (8a 01), length 39: round 7 (08 07), attempt (12 10 09×16), two BatchedVote (1a len, member
    // 0a, envelope 12).
    const expected =
      `0a06${Buffer.from(F).toString('hex')}` +
      '1005' +
      `1a20${Buffer.from(H('prev')).toString('hex')}` +
      '2001' +
      '8a0127' +
      '0807' +
      `1210${'09'.repeat(16)}` +
      '1a08' +
      '0a0161' +
      '1203010203' +
      '1a07' +
      '0a026263' +
      '120104';
    expect(Buffer.from(body).toString('hex')).toBe(expected);
    const text = spawnSync(
      'protoc',
      ['--decode=cohort.v1.LogRecord', `-I${dirname(PROTO_PATH)}`, PROTO_PATH],
      {
        input: body,
      },
    );
    expect(text.stderr.toString()).toBe('');
    expect(text.stdout.toString()).toMatch(
      /votes \{\s+round: 7\s+attempt: "(\\t){16}"\s+votes \{\s+member: "a"/,
    );
    expect(text.stdout.toString()).toContain('member: "bc"');
  });

  it('round-trips through seal and openLogEntry: one record, of kind votes, the envelopes byte-exact', () => {
    const votes = batch(3, ['site-2', 'site-0', 'site-1']);
    const record: LogRecordBody = {
      federation: F,
      sequence: 12,
      previousEntry: H('prev'),
      unixMs: 42,
      votes,
    };
    const bytes = sealControl('log-record', record, COORDINATOR, coordinatorKey);
    const opened = openLogEntry(bytes, 12, {
      federation: F,
      coordinator: COORDINATOR,
      keys: (id) => (id === COORDINATOR ? coordinatorKey : undefined),
      stream: 'x',
    });
    expect(recordKind(opened.record)).toBe('votes');
    expect(recordsHeld(opened.record)).toBe(1);
    expect(opened.record.vote ?? null).toBeNull();
    expect(opened.record.votes!.round).toBe(3);
    expect(opened.record.votes!.attempt).toEqual(attemptOf(3));
    // Order kept, each envelope exactly as sealed (the site's signature covers it).
    expect(opened.record.votes!.votes.map((v) => v.member)).toEqual(['site-2', 'site-0', 'site-1']);
    for (const [i, v] of opened.record.votes!.votes.entries())
      expect(v.envelope).toEqual(votes.votes[i]!.envelope);
  });
});

describe('LogHistory folds batched and single votes alike', () => {
  const c1 = roundCommit(genesis, {
    round: 1,
    aggregateDigest: H('agg 1'),
    modelHash: H('model 1'),
    params: genesis.params,
  });

  it('a COMMIT counting votes from two batches and a single record; an ABORT counting one batch', () => {
    const e = new Entries();
    const history = new LogHistory(genesis, 'x');
    history.apply(e.next({ roundOpen: roundOpen(1, genesis) }));
    const first = e.next({ votes: batch(1, ['site-0', 'site-1'], c1) });
    history.apply(first);
    history.apply(e.next({ vote: single(1, 'site-2', c1) }));
    history.apply(e.next({ votes: batch(1, ['site-3'], c1) }));
    const evidence = history.openRound!.evidence;
    expect([...evidence.votes.keys()]).toEqual(['site-0', 'site-1', 'site-2', 'site-3']);
    expect(evidence.votes.get('site-1')!.entry.sequence).toBe(first.sequence);
    history.apply(e.next({ decision: commit(1, genesis, c1, [...SITES]) }));
    expect(history.head.commit.hash).toEqual(c1.hash);
    expect(history.decisionOf(1)!.votes.map((v) => [v.member, v.entry.sequence])).toEqual([
      ['site-0', 2],
      ['site-1', 2],
      ['site-2', 3],
      ['site-3', 4],
    ]);
    history.apply(e.next({ roundOpen: roundOpen(2, c1) }));
    history.apply(e.next({ votes: batch(2, ['site-0', 'site-1']) }));
    history.apply(e.next({ decision: abort(2, c1, ['site-0', 'site-1']) }));
    expect(history.decided.map((d) => [d.round, d.decision.commit, d.votes.length])).toEqual([
      [1, true, 4],
      [2, false, 2],
    ]);
  });

  it('a COMMIT is held to the batched votes: one left out, or a voter no batch holds, is refused', () => {
    const e = new Entries();
    const history = new LogHistory(genesis, 'x');
    history.apply(e.next({ roundOpen: roundOpen(1, genesis) }));
    history.apply(e.next({ votes: batch(1, ['site-0', 'site-1'], c1) }));
    const leftOut = refusal(history, e.next({ decision: commit(1, genesis, c1, ['site-0']) }));
    expect(leftOut.rule).toBe('DECISION_INVALID');
    expect(leftOut.message).toContain('leaves out site-1');
    const unlogged = refusal(
      history,
      e.next({ decision: commit(1, genesis, c1, ['site-0', 'site-1', 'site-2']) }),
    );
    expect(unlogged.rule).toBe('DECISION_INVALID');
    expect(unlogged.message).toContain('site-2, who has no logged vote');
  });

  describe('refuses (VOTE_INVALID, at the batch, adding none of its votes)', () => {
    function opened(): { e: Entries; history: LogHistory } {
      const e = new Entries();
      const history = new LogHistory(genesis, 'x');
      history.apply(e.next({ roundOpen: roundOpen(1, genesis) }));
      return { e, history };
    }

    it('a batch naming a member twice', () => {
      const { e, history } = opened();
      const twice = e.next({ votes: batch(1, ['site-0', 'site-1', 'site-0']) });
      const r = refusal(history, twice);
      expect([r.rule, r.at]).toEqual(['VOTE_INVALID', twice.sequence]);
      expect(r.message).toContain('a second vote of site-0');
      expect(history.openRound!.evidence.votes.size).toBe(0);
    });

    it('a batch with a member already voting in an earlier record or batch', () => {
      const { e, history } = opened();
      history.apply(e.next({ vote: single(1, 'site-1') }));
      const again = refusal(history, e.next({ votes: batch(1, ['site-0', 'site-1']) }));
      expect(again.rule).toBe('VOTE_INVALID');
      expect(again.message).toContain('a second vote of site-1');
      expect([...history.openRound!.evidence.votes.keys()]).toEqual(['site-1']);
      history.apply(e.next({ votes: batch(1, ['site-2']) }));
      expect(refusal(history, e.next({ vote: single(1, 'site-2') })).message).toContain(
        'a second vote of site-2',
      );
    });

    it('a batch of another round or another attempt', () => {
      const { e, history } = opened();
      const other = refusal(history, e.next({ votes: batch(2, ['site-0']) }));
      expect(other.message).toContain('votes of round 2, round 1 is open');
      const attempt = refusal(history, e.next({ votes: { ...batch(1, ['site-0']), attempt: attemptOf(9) } }));
      expect(attempt.rule).toBe('VOTE_INVALID');
      expect(attempt.message).toContain('another attempt');
      // The batch's attempt right, one envelope voting on another attempt.
      const inner = batch(1, ['site-0']);
      inner.votes.push({ member: 'site-1', envelope: envelope('site-1', 1, undefined, attemptOf(9)) });
      const innerRefusal = refusal(history, e.next({ votes: inner }));
      expect(innerRefusal.rule).toBe('VOTE_INVALID');
      expect(innerRefusal.message).toContain('site-1 voted on another attempt');
      expect(history.openRound!.evidence.votes.size).toBe(0);
    });

    it('a batch after its round’s decision, and before any round is open', () => {
      const { e, history } = opened();
      history.apply(e.next({ votes: batch(1, ['site-0']) }));
      history.apply(e.next({ decision: abort(1, genesis, ['site-0']) }));
      const late = refusal(history, e.next({ votes: batch(1, ['site-1']) }));
      expect(late.message).toContain('votes of round 1, no round is open');
      const fresh = new LogHistory(genesis, 'x');
      expect(refusal(fresh, new Entries().next({ votes: batch(1, ['site-0']) })).message).toContain(
        'no round is open',
      );
    });

    it('an empty batch, and an envelope signed by another site than the batch names', () => {
      const { e, history } = opened();
      const empty = refusal(history, e.next({ votes: { round: 1, attempt: attemptOf(1), votes: [] } }));
      expect([empty.rule, empty.message]).toEqual(['VOTE_INVALID', expect.stringContaining('holds no vote')]);
      const forged = batch(1, ['site-0', 'site-1']);
      forged.votes[1] = { member: 'site-1', envelope: envelope('site-2', 1) };
      const r = refusal(history, e.next({ votes: forged }));
      expect(r.rule).toBe('VOTE_INVALID');
      expect(r.message).toContain('the envelope of site-1 is refused: signed by site-2');
      expect(history.openRound!.evidence.votes.size).toBe(0);
    });
  });
});

describe('RoundEvidence.addVotes with the registry keys', () => {
  const keys: EvidenceKeys = {
    key: (id) => siteKeys.get(id),
    role: (id) => (siteKeys.has(id) ? 'site' : undefined),
  };
  const entry = (sequence: number): LogEntry => {
    const bytes = new Uint8Array([sequence]);
    return {
      sequence,
      bytes,
      hash: sha256(bytes),
      record: { federation: F, sequence, previousEntry: new Uint8Array(32), unixMs: 1 },
    };
  };
  const violation = (fn: () => unknown): EvidenceViolation => {
    try {
      fn();
    } catch (err) {
      if (err instanceof EvidenceViolation) return err;
      throw err;
    }
    throw new Error('no violation');
  };

  it('verifies every envelope: a vote re-signed by another key refuses the whole batch', () => {
    const e = new RoundEvidence(roundOpen(1, genesis));
    const mallory = generateSigningKeyPair('falcon-512');
    const b = batch(1, ['site-0', 'site-1']);
    const body: ControlBodies['vote'] = {
      federation: F,
      round: 1,
      member: 'site-1',
      yes: false,
      commitHash: new Uint8Array(0),
      modelHash: new Uint8Array(0),
      reason: 'forged',
      meanUpdateRms: 0,
      bytesSent: 0,
      stateHash: new Uint8Array(32),
      attempt: attemptOf(1),
      evaluation: null,
    };
    b.votes[1] = { member: 'site-1', envelope: sealControl('vote', body, 'site-1', mallory) };
    const v = violation(() => e.addVotes(entry(4), b, keys));
    expect([v.rule, v.at]).toEqual(['VOTE_INVALID', 4]);
    expect(v.message).toContain('site-1');
    expect(e.votes.size).toBe(0);
    // Without keys (a follower) only the structure is checked: the signer's name matches.
    expect(() => new RoundEvidence(roundOpen(1, genesis)).addVotes(entry(4), b, undefined)).not.toThrow();
    // Signed by the sites themselves, the batch is taken whole, each vote at the batch's entry.
    const ok = e.addVotes(entry(5), batch(1, ['site-0', 'site-1']), keys);
    expect(ok.map((x) => [x.member, x.entry.sequence, x.vote.reason])).toEqual([
      ['site-0', 5, 'disk full'],
      ['site-1', 5, 'disk full'],
    ]);
    expect(e.any).toBe(true);
  });

  it('a member not a site of the registry is refused', () => {
    const e = new RoundEvidence(roundOpen(1, genesis));
    const notSite: EvidenceKeys = { key: keys.key, role: (id) => (id === 'site-0' ? 'aggregator' : 'site') };
    const v = violation(() => e.addVotes(entry(2), batch(1, ['site-1', 'site-0']), notSite));
    expect(v.message).toContain('site-0 is not a site of the registry');
    expect(e.votes.size).toBe(0);
  });
});

// The evidence rules of the federation log (docs/log-format.md, rule 7) on real signed partials and
// votes: each broken rule is refused with its code, at the record at fault.
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../../crypto/digest/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../../crypto/signature/index.ts';
import {
  type Assignment,
  BlockVerifier,
  type ControlBodies,
  DEFAULT_CODEC_OPTIONS,
  type DecisionBody,
  type EncodedUpdate,
  encodeAggregate,
  encodeUpdate,
  type LogRecordBody,
  type PartialRecordBody,
  sealControl,
  sumUpdates,
} from '../../../src/protocol/index.ts';
import {
  type EvidenceKeys,
  EvidenceViolation,
  type LogEntry,
  RoundEvidence,
} from '../../../src/services/federation-log/index.ts';
import { type CodecFixture, codecFixture, randomUpdate, roundContext } from '../../helpers/codec-fixture.ts';

const PARAMS = 3000;
const context = roundContext(7);
const attempt = new Uint8Array(16).fill(9);
const ASSIGNMENTS: Assignment[] = [
  { site: 'site-0', aggregator: 'agg-a', examples: 10 },
  { site: 'site-1', aggregator: 'agg-b', examples: 20 },
];
const open: ControlBodies['round-open'] = {
  federation: context.federation,
  round: context.round,
  version: context.version,
  baseCommit: context.baseCommit,
  assignments: ASSIGNMENTS,
  bits: DEFAULT_CODEC_OPTIONS.bits,
  clip: DEFAULT_CODEC_OPTIONS.clip,
  maxContributors: DEFAULT_CODEC_OPTIONS.maxContributors,
  crcChunkBytes: DEFAULT_CODEC_OPTIONS.crcChunkBytes,
  deadlineUnixMs: 1,
  totalExamples: 30,
  totalParams: PARAMS,
  attempt,
  kind: '',
};

let fx: CodecFixture;
const aggKeys = new Map<string, SigningKeyPair>();
const updates: EncodedUpdate[] = [];

beforeAll(async () => {
  fx = await codecFixture(3);
  for (const a of ['agg-a', 'agg-b']) aggKeys.set(a, generateSigningKeyPair('falcon-512'));
  for (const [i, a] of ASSIGNMENTS.entries()) {
    updates.push(
      encodeUpdate({
        update: randomUpdate(PARAMS, 3 + i, 0.03),
        residual: null,
        credentials: fx.site(i, context),
        context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: a.examples,
      }),
    );
  }
});

const keys: EvidenceKeys = {
  key: (id) => aggKeys.get(id) ?? fx.signers.get(id),
  role: (id) => (aggKeys.has(id) ? 'aggregator' : fx.signers.has(id) ? 'site' : undefined),
};

/** The partial manifest `aggregator` signs over site `i`'s update, forwarding `forwarded`. */
function partialOf(aggregator: string, i: number, forwarded?: Uint8Array, key?: SigningKeyPair): Uint8Array {
  const v = new BlockVerifier({
    context,
    ckksParamsId: fx.ctx.paramsId,
    keys: (s) => fx.signers.get(s),
    allowedAlgorithms: ['falcon-512'],
  });
  const aggregate = sumUpdates(fx.ctx, [v.verifyUpdate(updates[i]!)]);
  return encodeAggregate(
    aggregate,
    { signer: aggregator, signing: key ?? aggKeys.get(aggregator)! },
    context,
    {
      crcChunkBytes: DEFAULT_CODEC_OPTIONS.crcChunkBytes,
      siteManifests: [forwarded ?? updates[i]!.manifest],
    },
  ).manifest;
}

let sequence = 10;
function entry(record: Partial<LogRecordBody>): LogEntry {
  const bytes = new Uint8Array([sequence]);
  return {
    sequence: sequence++,
    bytes,
    hash: sha256(bytes),
    record: {
      federation: context.federation,
      sequence,
      previousEntry: new Uint8Array(32),
      unixMs: 1,
      ...record,
    },
  };
}

const partial = (aggregator: string, manifest: Uint8Array): PartialRecordBody => ({
  round: context.round,
  attempt,
  aggregator,
  manifest,
});

const MODEL = new Uint8Array(32).fill(1);
const COMMIT = new Uint8Array(32).fill(2);
function vote(site: number, model = MODEL, cast: 'yes' | 'no' | 'abstain' = 'yes') {
  const member = `site-${site}`;
  const body: ControlBodies['vote'] = {
    federation: context.federation,
    round: context.round,
    member,
    yes: cast === 'yes',
    abstain: cast === 'abstain',
    commitHash: COMMIT,
    modelHash: model,
    reason: '',
    meanUpdateRms: 0,
    bytesSent: 0,
    stateHash: new Uint8Array(32),
    attempt,
    evaluation: null,
  };
  return {
    round: context.round,
    attempt,
    member,
    envelope: sealControl('vote', body, member, fx.signers.get(member)!),
  };
}

function decision(over: Partial<DecisionBody> = {}): DecisionBody {
  return {
    federation: context.federation,
    round: context.round,
    commit: true,
    commitHash: COMMIT,
    modelHash: MODEL,
    parent: context.baseCommit,
    height: context.version + 1,
    aggregateDigest: new Uint8Array(32),
    voters: ['site-0', 'site-1'],
    reason: '',
    kind: 'round',
    params: new Uint8Array(0),
    aggregate: {
      encoding: {} as never, // not read by the evidence rules
      totalParams: PARAMS,
      contributors: ASSIGNMENTS.map((a, i) => ({
        site: a.site,
        digest: updates[i]!.digest,
        weight: a.examples,
      })),
      totalWeight: 30,
      participants: 2,
      totalExamples: 30,
      object: 'round-7',
      objectBytes: 1,
    },
    rollbackTarget: new Uint8Array(0),
    stateHash: new Uint8Array(32),
    missing: [],
    exclusions: [],
    nextClip: 1,
    attempt,
    evaluation: null,
    culprits: [],
    ...over,
  };
}

/** A round with both partials and both votes logged (signatures checked). */
function fullRound(model1 = MODEL): RoundEvidence {
  const e = new RoundEvidence(open);
  e.addPartial(entry({}), partial('agg-a', partialOf('agg-a', 0)), keys);
  e.addPartial(entry({}), partial('agg-b', partialOf('agg-b', 1)), keys);
  e.addVote(entry({}), vote(0), keys);
  e.addVote(entry({}), vote(1, model1), keys);
  return e;
}

function violation(fn: () => unknown): EvidenceViolation {
  try {
    fn();
  } catch (err) {
    if (err instanceof EvidenceViolation) return err;
    throw err;
  }
  throw new Error('no violation');
}

describe('RoundEvidence', () => {
  it('accepts the partials and votes of a round and a COMMIT that agrees with them', () => {
    const e = fullRound();
    expect(e.partials.map((p) => p.aggregator)).toEqual(['agg-a', 'agg-b']);
    expect(() => e.checkDecision(entry({}), decision(), true)).not.toThrow();
    // An ABORT naming no voter (a restart's) needs no vote.
    expect(() => e.checkDecision(entry({}), decision({ commit: false, voters: [] }), true)).not.toThrow();
  });

  it('refuses a partial of another attempt, a second partial of an aggregator, or one signed by another key', () => {
    const e = new RoundEvidence(open);
    expect(
      violation(() =>
        e.addPartial(
          entry({}),
          { ...partial('agg-a', partialOf('agg-a', 0)), attempt: new Uint8Array(16) },
          keys,
        ),
      ).rule,
    ).toBe('PARTIAL_INVALID');
    e.addPartial(entry({}), partial('agg-a', partialOf('agg-a', 0)), keys);
    expect(violation(() => e.addPartial(entry({}), partial('agg-a', partialOf('agg-a', 0)), keys)).rule).toBe(
      'PARTIAL_INVALID',
    );
    const mallory = generateSigningKeyPair('falcon-512');
    expect(
      violation(() =>
        new RoundEvidence(open).addPartial(
          entry({}),
          partial('agg-b', partialOf('agg-b', 1, undefined, mallory)),
          keys,
        ),
      ).rule,
    ).toBe('PARTIAL_INVALID');
    // Without keys the structure is checked only.
    expect(() =>
      new RoundEvidence(open).addPartial(
        entry({}),
        partial('agg-b', partialOf('agg-b', 1, undefined, mallory)),
        undefined,
      ),
    ).not.toThrow();
  });

  it('refuses a partial listing a site with another site’s manifest: CONTRIBUTION_MISMATCH', () => {
    const v = violation(() =>
      new RoundEvidence(open).addPartial(
        entry({}),
        partial('agg-a', partialOf('agg-a', 0, updates[1]!.manifest)),
        keys,
      ),
    );
    expect(v.rule).toBe('CONTRIBUTION_MISMATCH');
  });

  it('a YES vote naming another H(w′): VOTE_MODEL_MISMATCH at the vote', () => {
    const e = new RoundEvidence(open);
    e.addPartial(entry({}), partial('agg-a', partialOf('agg-a', 0)), keys);
    e.addPartial(entry({}), partial('agg-b', partialOf('agg-b', 1)), keys);
    e.addVote(entry({}), vote(0), keys);
    const at = entry({});
    e.addVote(at, vote(1, new Uint8Array(32).fill(5)), keys);
    const v = violation(() => e.checkDecision(entry({}), decision(), true));
    expect([v.rule, v.at]).toEqual(['VOTE_MODEL_MISMATCH', at.sequence]);
    // A log written before evidence was recorded is not held to it.
    expect(() => e.checkDecision(entry({}), decision(), false)).not.toThrow();
  });

  it('a COMMIT may count an abstention among its voters, never a NO, and needs a YES majority of them', () => {
    const withVotes = (...casts: ('yes' | 'no' | 'abstain')[]) => {
      const e = new RoundEvidence(open);
      e.addPartial(entry({}), partial('agg-a', partialOf('agg-a', 0)), keys);
      e.addPartial(entry({}), partial('agg-b', partialOf('agg-b', 1)), keys);
      casts.forEach((cast, k) => {
        e.addVote(entry({}), vote(k, MODEL, cast), keys);
      });
      return e;
    };
    const voters = (n: number) => Array.from({ length: n }, (_, k) => `site-${k}`);
    expect(() =>
      withVotes('yes', 'yes', 'abstain').checkDecision(entry({}), decision({ voters: voters(3) }), true),
    ).not.toThrow();
    const no = violation(() => withVotes('yes', 'no').checkDecision(entry({}), decision(), true));
    expect([no.rule, no.message]).toEqual(['DECISION_INVALID', expect.stringContaining('site-1 voted NO')]);
    // No majority: one YES of two voters, or nobody vouching at all.
    const half = violation(() => withVotes('yes', 'abstain').checkDecision(entry({}), decision(), true));
    expect([half.rule, half.message]).toEqual([
      'DECISION_INVALID',
      expect.stringContaining('1 of its 2 voters'),
    ]);
    const none = violation(() => withVotes('abstain', 'abstain').checkDecision(entry({}), decision(), true));
    expect(none.message).toContain('0 of its 2 voters voted YES');
  });

  it('a COMMIT leaving out a listed site, naming one twice, or a voter without a logged vote', () => {
    const e = fullRound();
    const d = decision();
    const [c0, c1] = d.aggregate!.contributors;
    const missing = violation(() =>
      e.checkDecision(entry({}), decision({ aggregate: { ...d.aggregate!, contributors: [c0!] } }), true),
    );
    expect(missing.rule).toBe('CONTRIBUTION_MISSING');
    expect(missing.message).toContain('site-1');
    const twice = violation(() =>
      e.checkDecision(
        entry({}),
        decision({ aggregate: { ...d.aggregate!, contributors: [c0!, c1!, c1!] } }),
        true,
      ),
    );
    expect(twice.rule).toBe('CONTRIBUTION_DUPLICATE');
    const voter = violation(() =>
      e.checkDecision(entry({}), decision({ voters: ['site-0', 'site-1', 'site-9'] }), true),
    );
    expect(voter.rule).toBe('DECISION_INVALID');
    // A vote signed by another site than its record names.
    const forged = { ...vote(0), member: 'site-1' };
    expect(violation(() => new RoundEvidence(open).addVote(entry({}), forged, keys)).rule).toBe(
      'VOTE_INVALID',
    );
  });
});

describe('RoundEvidence in a two-level tree (RoundOpen `parents`: agg-b under agg-a)', () => {
  const treeOpen: ControlBodies['round-open'] = {
    ...open,
    parents: [
      { aggregator: 'agg-a', parent: '', deadlineUnixMs: 2 },
      { aggregator: 'agg-b', parent: 'agg-a', deadlineUnixMs: 1 },
    ],
  };

  /** agg-a's partial over both sites (its own and its child's), forwarding both manifests. */
  function topPartial(): Uint8Array {
    const v = new BlockVerifier({
      context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
    });
    const aggregate = sumUpdates(
      fx.ctx,
      updates.map((u) => v.verifyUpdate(u)),
    );
    return encodeAggregate(aggregate, { signer: 'agg-a', signing: aggKeys.get('agg-a')! }, context, {
      crcChunkBytes: DEFAULT_CODEC_OPTIONS.crcChunkBytes,
      siteManifests: updates.map((u) => u.manifest),
    }).manifest;
  }

  it('accepts the top aggregator listing the sites below it, and a COMMIT that agrees', () => {
    const e = new RoundEvidence(treeOpen);
    e.addPartial(entry({}), partial('agg-a', topPartial()), keys);
    expect(e.partials[0]!.sites.map((c) => c.site)).toEqual(['site-0', 'site-1']);
    e.addVote(entry({}), vote(0), keys);
    e.addVote(entry({}), vote(1), keys);
    expect(() => e.checkDecision(entry({}), decision(), true)).not.toThrow();
  });

  it('refuses a partial of an aggregator below the top, and any partial when the tree is not one', () => {
    // agg-b sends to agg-a, never to the coordinator: its partial in the log is not evidence.
    const e = new RoundEvidence(treeOpen);
    expect(violation(() => e.addPartial(entry({}), partial('agg-b', partialOf('agg-b', 1)), keys)).rule).toBe(
      'PARTIAL_INVALID',
    );
    const cyclic = new RoundEvidence({
      ...open,
      parents: [
        { aggregator: 'agg-a', parent: 'agg-b', deadlineUnixMs: 1 },
        { aggregator: 'agg-b', parent: 'agg-a', deadlineUnixMs: 2 },
      ],
    });
    const v = violation(() => cyclic.addPartial(entry({}), partial('agg-a', partialOf('agg-a', 0)), keys));
    expect(v.rule).toBe('PARTIAL_INVALID');
    expect(v.message).toContain('no valid tree');
  });
});

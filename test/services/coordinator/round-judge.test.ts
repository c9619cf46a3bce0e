import { describe, expect, it } from 'vitest';
import { sha256 } from '../../../crypto/digest/index.ts';
import type { ControlBodies } from '../../../src/protocol/index.ts';
import { isAggregateFault, judgeVotes } from '../../../src/services/coordinator/round-judge.ts';
import { bytesToHex, createCommit, genesisCommit } from '../../../src/versions/index.ts';

type Vote = ControlBodies['vote'];

const H = (text: string) => sha256(new TextEncoder().encode(text));
const PARAMS = new TextEncoder().encode('{"strategy":"fedavg"}');
const genesis = genesisCommit(new Float32Array([1, 2, 3]), PARAMS);
const AGGREGATE = H('aggregate 1');
/** The coordinator's commit for a model hash: round 1 on genesis with the round's aggregate. */
const expectedCommit = (modelHash: Uint8Array) =>
  createCommit({
    parent: genesis.hash,
    height: 1,
    round: 1,
    aggregateDigest: AGGREGATE,
    modelHash,
    params: PARAMS,
    kind: 'round',
  }).hash;
const MODEL = H('model 1');
const COMMIT = expectedCommit(MODEL);
const STATE = H('state 1');

function yes(member: string, over: Partial<Vote> = {}): Vote {
  return {
    federation: 'f',
    round: 1,
    member,
    yes: true,
    commitHash: COMMIT,
    modelHash: MODEL,
    reason: '',
    meanUpdateRms: 0.01,
    bytesSent: 1000,
    stateHash: STATE,
    attempt: new Uint8Array(16),
    evaluation: null,
    ...over,
  };
}

function no(member: string, reason: string): Vote {
  return {
    ...yes(member),
    yes: false,
    commitHash: new Uint8Array(0),
    modelHash: new Uint8Array(0),
    stateHash: new Uint8Array(0),
    reason,
  };
}

function judge(voters: string[], votes: Vote[]) {
  return judgeVotes({
    voters,
    votes: new Map(votes.map((v) => [v.member, v])),
    expectedCommit,
    voteTimeoutMs: 5000,
  });
}

const ABC = ['site-c', 'site-a', 'site-b'];

const EVAL = {
  model: H('parent'),
  examples: 5,
  correct: 3,
  lossSum: 1.75,
  classes: 2,
  confusion: [1, 1, 1, 2],
};

describe('judgeVotes', () => {
  it('records the evaluation totals the YES votes agree on; a YES without totals (a re-sent vote) does not count against them', () => {
    const v = judge(ABC, [
      yes('site-a', { evaluation: EVAL }),
      yes('site-b', { evaluation: { ...EVAL, confusion: [...EVAL.confusion] } }),
      yes('site-c'),
    ]);
    expect(v.commit).toBe(true);
    expect(v.evaluation).toEqual(EVAL);
    expect(judge(ABC, [yes('site-a'), yes('site-b'), yes('site-c')]).evaluation).toBeNull();
  });

  it('an abstention aborts nothing: it counts among the voters, is no NO, and is listed apart', () => {
    const abstain = (member: string) => ({ ...no(member, 'REPLAY_UNAVAILABLE: cannot read'), abstain: true });
    const v = judge(ABC, [yes('site-a'), yes('site-b'), abstain('site-c')]);
    expect(v).toMatchObject({
      commit: true,
      yes: ['site-a', 'site-b'],
      no: [],
      abstained: ['site-c'],
      missing: [],
    });
    // A YES majority is still needed: abstentions count among the voters it is taken of.
    const few = judge(ABC, [yes('site-a'), abstain('site-b'), abstain('site-c')]);
    expect(few).toMatchObject({ commit: false, no: [], abstained: ['site-b', 'site-c'] });
    expect(few.reason).toBe('1 of 3 voters voted YES within 5000 ms (abstained: site-b, site-c)');
    // A NO is still a NO beside an abstention.
    const objected = judge(ABC, [yes('site-a'), no('site-b', 'BLOCK_MAC_MISMATCH: x'), abstain('site-c')]);
    expect(objected).toMatchObject({ commit: false, no: ['site-b'], abstained: ['site-c'] });
    // `abstain` with YES is a YES.
    expect(judge(ABC, [yes('site-a'), yes('site-b'), yes('site-c', { abstain: true })]).yes).toEqual(
      [...ABC].sort(),
    );
  });

  it('aborts when YES votes name different evaluation totals', () => {
    const v = judge(ABC, [
      yes('site-a', { evaluation: EVAL }),
      yes('site-b', { evaluation: { ...EVAL, confusion: [2, 0, 1, 2] } }),
      yes('site-c', { evaluation: EVAL }),
    ]);
    expect(v).toMatchObject({
      commit: false,
      reason: 'votes name different evaluation totals (site-b against the majority)',
      deviants: ['site-b'],
    });
  });

  it('names as deviants the YES voters outside a strict majority of the candidate, and no one without one', () => {
    const four = ['site-a', 'site-b', 'site-c', 'site-d'];
    const other = { modelHash: H('model 1b') };
    expect(
      judge(four, [yes('site-a'), yes('site-b', other), yes('site-c'), yes('site-d', other)]),
    ).toMatchObject({ commit: false, reason: 'votes name different model hashes', deviants: [] });
    expect(
      judge(four, [yes('site-a', other), yes('site-b'), yes('site-c'), no('site-d', 'x')]),
    ).toMatchObject({ commit: false, no: ['site-d'], deviants: [] });
    expect(judge(four, [yes('site-a'), yes('site-b', other), yes('site-c'), yes('site-d')])).toMatchObject({
      commit: false,
      reason: 'votes name different model hashes (site-b against the majority)',
      deviants: ['site-b'],
    });
    // Two liars agreeing with each other are still a minority of the YES voters.
    const state = { stateHash: H('state 1b'), commitHash: H('fork') };
    expect(
      judge(
        [...four, 'site-e'],
        [yes('site-a', state), yes('site-b'), yes('site-c', state), yes('site-d'), yes('site-e')],
      ),
    ).toMatchObject({
      reason: 'votes name different commit hashes (site-a, site-c against the majority)',
      deviants: ['site-a', 'site-c'],
    });
    // A YES without totals (re-sent after a restart) is neither for nor against the totals.
    expect(
      judge(four, [
        yes('site-a', { evaluation: EVAL }),
        yes('site-b', { evaluation: EVAL }),
        yes('site-c', { evaluation: { ...EVAL, correct: 4 } }),
        yes('site-d'),
      ]),
    ).toMatchObject({ deviants: ['site-c'] });
    expect(judge(ABC, [yes('site-a'), yes('site-b'), yes('site-c')]).deviants).toEqual([]);
  });

  it('commits when every voter voted YES on the same hashes, the expected commit', () => {
    const v = judge(ABC, [yes('site-a'), yes('site-b'), yes('site-c')]);
    expect(v).toMatchObject({
      commit: true,
      reason: '',
      yes: ['site-a', 'site-b', 'site-c'],
      no: [],
      missing: [],
    });
    expect(bytesToHex(v.commitHash)).toBe(bytesToHex(COMMIT));
    expect(bytesToHex(v.modelHash)).toBe(bytesToHex(MODEL));
    expect(bytesToHex(v.stateHash)).toBe(bytesToHex(STATE));
  });

  it('commits with a YES majority, listing the silent voters as missing', () => {
    const v = judge(ABC, [yes('site-a'), yes('site-c')]);
    expect(v).toMatchObject({ commit: true, yes: ['site-a', 'site-c'], no: [], missing: ['site-b'] });
  });

  it('an aggregate every voter found wrong alike is an aggregate fault, not the voters’ (blame goes elsewhere)', () => {
    const mac = 'BLOCK_MAC_MISMATCH: the aggregate’s MAC does not hold';
    const all = judge(ABC, [no('site-a', mac), no('site-b', mac), no('site-c', mac)]);
    expect(all).toMatchObject({ commit: false, aggregateFault: true, no: ['site-a', 'site-b', 'site-c'] });
    // Silent voters do not change that (they are struck for their silence, not the aggregate).
    expect(judge(ABC, [no('site-a', mac), no('site-b', mac)])).toMatchObject({
      aggregateFault: true,
      missing: ['site-c'],
    });
    // One YES on the same aggregate: the check is deterministic, so a MAC NO is the voter's fault.
    expect(judge(ABC, [no('site-a', mac), yes('site-b'), yes('site-c')])).toMatchObject({
      commit: false,
      aggregateFault: false,
    });
    // Any other reason among the NOs: the voters answer for their own.
    expect(judge(ABC, [no('site-a', mac), no('site-b', 'disk full'), no('site-c', mac)]).aggregateFault).toBe(
      false,
    );
    // The code must lead the reason: a voter cannot claim it in passing.
    expect(judge(['site-a'], [no('site-a', `disk full (${mac})`)]).aggregateFault).toBe(false);
    expect(isAggregateFault(mac)).toBe(true);
  });

  it('ignores votes of members that are not voters', () => {
    const v = judge(['site-a'], [yes('site-a'), no('site-z', 'not a voter')]);
    expect(v).toMatchObject({ commit: true, yes: ['site-a'], no: [], missing: [] });
  });

  const aborts: [name: string, voters: string[], votes: Vote[], reason: string | RegExp][] = [
    ['no voters', [], [], 'no live site to vote'],
    [
      'a NO, naming it and its reason',
      ABC,
      [yes('site-a'), no('site-b', 'disk full'), yes('site-c')],
      'NO from site-b (disk full)',
    ],
    [
      'two NOs, one without a reason',
      ABC,
      [no('site-c', ''), yes('site-a'), no('site-b', 'headroom')],
      'NO from site-b (headroom), site-c (no reason)',
    ],
    [
      // A decision is a log entry: a thousand NO voters are counted and grouped, not all named.
      'many NOs, grouped by reason, the largest group first',
      Array.from({ length: 300 }, (_, i) => `site-${i + 1}`),
      Array.from({ length: 300 }, (_, i) =>
        no(`site-${i + 1}`, i < 250 ? 'LANE_OVERFLOW: slot 14' : i < 290 ? 'disk full' : `odd ${i}`),
      ),
      /^NO from 300 voters: 250 × LANE_OVERFLOW: slot 14 \(site-1, site-10, site-100, site-101, site-102 and 245 more\); 40 × disk full \(site-251, site-252, site-253, site-254, site-255 and 35 more\); 1 × odd 290 \(site-291\); 9 other reasons$/,
    ],
    [
      'a long reason, quoted up to 200 characters',
      ABC,
      [yes('site-a'), no('site-b', 'x'.repeat(5000)), yes('site-c')],
      `NO from site-b (${'x'.repeat(200)}…)`,
    ],
    [
      'many silent voters, the first five named',
      Array.from({ length: 30 }, (_, i) => `site-${String(i + 10)}`),
      [yes('site-10')],
      '1 of 30 voters voted YES within 5000 ms (no vote from site-11, site-12, site-13, site-14, site-15 and 24 more)',
    ],
    [
      'half of the voters voting YES',
      ['site-a', 'site-b', 'site-c', 'site-d'],
      [yes('site-a'), yes('site-b')],
      '2 of 4 voters voted YES within 5000 ms (no vote from site-c, site-d)',
    ],
    [
      'one of three voting YES',
      ABC,
      [yes('site-b')],
      '1 of 3 voters voted YES within 5000 ms (no vote from site-a, site-c)',
    ],
    [
      'YES votes on different commit hashes',
      ABC,
      [yes('site-a'), yes('site-b', { commitHash: H('fork') }), yes('site-c')],
      'votes name different commit hashes (site-b against the majority)',
    ],
    [
      'YES votes on different model hashes',
      ABC,
      [yes('site-a'), yes('site-b'), yes('site-c', { modelHash: H('model 1b') })],
      'votes name different model hashes (site-c against the majority)',
    ],
    [
      'YES votes on different strategy states',
      ABC,
      [yes('site-a', { stateHash: H('state 1b') }), yes('site-b'), yes('site-c')],
      'votes name different strategy states (site-a against the majority)',
    ],
    [
      'YES votes without a strategy-state hash',
      ABC,
      ABC.map((s) => yes(s, { stateHash: new Uint8Array(0) })),
      'votes name no strategy-state hash',
    ],
    [
      'YES votes agreeing on a commit hash that is not the expected one',
      ABC,
      ABC.map((s) => yes(s, { commitHash: H('elsewhere') })),
      /^voted commit hash [0-9a-f]{12} is not the commit of \(head, round, aggregate, model, params\), [0-9a-f]{12}$/,
    ],
    [
      'YES votes on an unusable model hash',
      ABC,
      ABC.map((s) => yes(s, { modelHash: new Uint8Array(31) })),
      /^votes carry an unusable model hash: /,
    ],
  ];

  it.each(aborts)('aborts on %s', (_name, voters, votes, reason) => {
    const v = judge(voters, votes);
    expect(v.commit).toBe(false);
    if (typeof reason === 'string') expect(v.reason).toBe(reason);
    else expect(v.reason).toMatch(reason);
    expect(v.commitHash).toHaveLength(0);
    expect(v.modelHash).toHaveLength(0);
    expect(v.stateHash).toHaveLength(0);
  });

  it('sorts the voters it reports on an abort too', () => {
    const v = judge(['site-d', ...ABC], [no('site-c', 'x'), yes('site-a'), yes('site-d')]);
    expect(v).toMatchObject({
      commit: false,
      yes: ['site-a', 'site-d'],
      no: ['site-c'],
      missing: ['site-b'],
    });
  });
});

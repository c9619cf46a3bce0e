// A NO vote that carries its aggregator's signed receipt of an update the aggregate left out names
// the aggregator and excuses the voter; anything short of proof does neither.
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair } from '../../../crypto/signature/index.ts';
import { type ControlBodies, sealControl } from '../../../src/protocol/index.ts';
import type { AcceptedPartial } from '../../../src/round/index.ts';
import { droppedUpdates } from '../../../src/services/coordinator/dropped-updates.ts';

const keys = new Map(['agg-1', 'agg-2'].map((a) => [a, generateSigningKeyPair('falcon-512')]));
const ATTEMPT = new Uint8Array(16).fill(3);
const open = {
  federation: 'fed',
  round: 9,
  attempt: ATTEMPT,
  assignments: [
    { site: 'site-1', aggregator: 'agg-1', examples: 10 },
    { site: 'site-2', aggregator: 'agg-1', examples: 10 },
    { site: 'site-3', aggregator: 'agg-2', examples: 10 },
  ],
} as unknown as ControlBodies['round-open'];

function receipt(over: Partial<ControlBodies['receipt']> = {}, signer = 'agg-1'): Uint8Array {
  return sealControl(
    'receipt',
    {
      federation: 'fed',
      round: 9,
      attempt: ATTEMPT,
      aggregator: 'agg-1',
      site: 'site-1',
      updateDigest: new Uint8Array(32).fill(1),
      exampleWeight: 10,
      ...over,
    },
    signer,
    keys.get(signer)!,
  );
}

function noVote(
  member: string,
  evidence: Uint8Array,
  reason = 'UPDATE_DROPPED: left out',
): ControlBodies['vote'] {
  return { member, yes: false, reason, receipt: evidence } as unknown as ControlBodies['vote'];
}

const partial = (aggregator: string, sites: string[]) =>
  ({ aggregator, sites: sites.map((site) => ({ site })) }) as unknown as AcceptedPartial;

function judge(
  vote: ControlBodies['vote'],
  partials = [partial('agg-1', ['site-2']), partial('agg-2', ['site-3'])],
) {
  return droppedUpdates({
    open,
    votes: new Map([[vote.member, vote]]),
    no: [vote.member],
    partials,
    keys: (id) => keys.get(id),
  });
}

describe('droppedUpdates', () => {
  it('a valid receipt of an update its aggregator’s partial leaves out names the aggregator', () => {
    expect(judge(noVote('site-1', receipt()))).toEqual({
      culprits: [expect.objectContaining({ member: 'agg-1', role: 'aggregator', fault: 'UPDATE_DROPPED' })],
      excused: ['site-1'],
    });
  });

  it('proves nothing when anything does not check', () => {
    const nothing = { culprits: [], excused: [] };
    // Another round, attempt, site or aggregator in the receipt; signed by another aggregator.
    expect(judge(noVote('site-1', receipt({ round: 8 })))).toEqual(nothing);
    expect(judge(noVote('site-1', receipt({ attempt: new Uint8Array(16) })))).toEqual(nothing);
    expect(judge(noVote('site-1', receipt({ site: 'site-2' })))).toEqual(nothing);
    expect(judge(noVote('site-1', receipt({ aggregator: 'agg-2' }, 'agg-2')))).toEqual(nothing);
    expect(judge(noVote('site-1', receipt({}, 'agg-2')))).toEqual(nothing);
    // Junk, no receipt, or another reason.
    expect(judge(noVote('site-1', new Uint8Array(40)))).toEqual(nothing);
    expect(judge(noVote('site-1', new Uint8Array(0)))).toEqual(nothing);
    expect(judge(noVote('site-1', receipt(), 'disk full'))).toEqual(nothing);
    // The partial lists the site after all, or never reached the coordinator.
    expect(judge(noVote('site-1', receipt()), [partial('agg-1', ['site-1', 'site-2'])])).toEqual(nothing);
    expect(judge(noVote('site-1', receipt()), [partial('agg-2', ['site-3'])])).toEqual(nothing);
  });
});

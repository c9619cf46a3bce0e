// The rules every reader of the log holds a re-shared key epoch to (src/round/threshold-epoch-record.ts),
// each attacked with a record that breaks it: the epoch id must be the one the roster and the
// public share digests give, each roster site must be enrolled and unrevoked at the epoch's first
// round, and each ready must be that site's own signed one for this epoch and first round.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair } from '../../crypto/signature/index.ts';
import { epochIdOfDigests, type ThresholdRoster } from '../../crypto/threshold/index.ts';
import { sealControl, type ThresholdEpochBody } from '../../src/protocol/index.ts';
import { thresholdEpochProblem } from '../../src/round/index.ts';

const F = 'rules';
const SITES = ['site-1', 'site-2', 'site-3'];
const keys = new Map(SITES.map((id) => [id, generateSigningKeyPair('falcon-512')]));
const roster: ThresholdRoster = {
  federation: F,
  paramsId: new Uint8Array(32).fill(1),
  threshold: 2,
  generation: 7,
  sites: SITES.map((id, k) => ({ id, point: k + 1 })),
};
const digests = SITES.map((id) => new Uint8Array(createHash('sha256').update(id).digest()));
const epochId = epochIdOfDigests(roster, digests);

const confirmation = new Uint8Array(32).fill(5);

function record(
  over: {
    fromRound?: number;
    readyRound?: number;
    signer?: string;
    confirm?: (site: string) => Uint8Array;
  } = {},
): ThresholdEpochBody {
  const fromRound = over.fromRound ?? 9;
  return {
    generation: roster.generation,
    epochId,
    paramsId: roster.paramsId,
    threshold: roster.threshold,
    sites: roster.sites.map((s) => ({ ...s, holds: true })),
    fromRound,
    publicShareDigests: digests,
    readies: SITES.map((id) =>
      sealControl(
        'epoch-ready',
        {
          federation: F,
          generation: roster.generation,
          site: id,
          epochId,
          fromRound: over.readyRound ?? fromRound,
          keyConfirmation: over.confirm?.(id) ?? confirmation,
        },
        over.signer ?? id,
        keys.get(over.signer ?? id)!,
      ),
    ),
  };
}

const registry = (revoked: string[] = []) => ({
  keys: (id: string) => keys.get(id),
  enrolledSite: (id: string) => SITES.includes(id) && !revoked.includes(id),
});

describe('thresholdEpochProblem', () => {
  it('accepts an epoch whose id, roster and readies hold', () => {
    expect(thresholdEpochProblem(record(), F, registry())).toBeUndefined();
  });

  it('refuses an id the roster and the public share digests do not give', () => {
    const r = { ...record(), epochId: new Uint8Array(32).fill(9) };
    expect(thresholdEpochProblem(r, F, undefined)).toMatch(
      /its id is not the one its roster and public share digests give/,
    );
  });

  it('refuses a roster site revoked by the epoch’s first round', () => {
    expect(thresholdEpochProblem(record(), F, registry(['site-2']))).toMatch(
      /site-2 is not an enrolled, unrevoked site at round 9/,
    );
  });

  it('refuses readies held back for another first round', () => {
    expect(thresholdEpochProblem(record({ readyRound: 8 }), F, registry())).toMatch(
      /the ready of site-1 is for another epoch/,
    );
  });

  it('refuses a ready another site signed', () => {
    expect(thresholdEpochProblem(record({ signer: 'site-3' }), F, registry())).toMatch(/the ready of site-1/);
  });

  it('refuses readies that confirm different data keys, or none', () => {
    const other = (site: string) => (site === 'site-2' ? new Uint8Array(32).fill(6) : confirmation);
    expect(thresholdEpochProblem(record({ confirm: other }), F, registry())).toMatch(
      /the ready of site-2 confirms another data key than site-1's/,
    );
    expect(thresholdEpochProblem(record({ confirm: () => new Uint8Array(0) }), F, registry())).toMatch(
      /the ready of site-1 confirms no data key/,
    );
  });

  it('refuses generation 0 (the key ceremony’s, never logged) and a short ready list', () => {
    expect(thresholdEpochProblem({ ...record(), generation: 0 }, F, undefined)).toMatch(/not ≥ 1/);
    expect(thresholdEpochProblem({ ...record(), readies: record().readies.slice(1) }, F, undefined)).toMatch(
      /2 readies for 3 sites/,
    );
  });
});

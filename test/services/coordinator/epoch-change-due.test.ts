// When the coordinator re-shares the threshold key epoch because the configuration's committee or
// threshold changed: `EpochChanges.due` against a hand-made epoch in force, with every site enrolled
// and live. A site the configuration no longer names a holder holds rounds back (it would hold a
// share of what is encrypted next); other changes re-share without holding them.
import { describe, expect, it } from 'vitest';
import type { ThresholdRoster } from '../../../crypto/threshold/index.ts';
import { type EpochChangeHost, EpochChanges } from '../../../src/services/coordinator/epoch-change.ts';

const SITES = ['site-1', 'site-2', 'site-3', 'site-4', 'site-5'];

function host(
  roster: Omit<ThresholdRoster, 'federation' | 'paramsId' | 'generation' | 'sites'>,
  threshold: {
    holders?: string[];
    sites?: number;
  },
): EpochChangeHost {
  const view = { role: () => 'site', isRevoked: () => false };
  return {
    ctx: {
      config: {
        crypto: { threshold: { ...threshold, rotateEveryRounds: 0 } },
        round: { minContributors: 2 },
        members: { sites: SITES.map((id) => ({ id })) },
      },
      members: { sites: SITES.map((id) => ({ id })) },
      registryView: view,
    },
    log: { history: { registry: view, thresholdEpochs: [] } },
    membership: { isLive: () => true },
    threshold: {
      roster: {
        federation: 'f',
        paramsId: new Uint8Array(32),
        generation: 1,
        sites: SITES.map((id, k) => ({ id, point: k + 1 })),
        ...roster,
      },
      epochId: new Uint8Array(32),
      fromRound: 1,
    },
  } as unknown as EpochChangeHost;
}

describe('re-sharing due to a configuration change', () => {
  it('the epoch in force stands when its holders and threshold are the configured ones', () => {
    expect(new EpochChanges().due(host({ threshold: 4 }, {}), 5)).toBeUndefined();
    const committee = { holders: ['site-1', 'site-2', 'site-3'] };
    expect(new EpochChanges().due(host({ threshold: 2, ...committee }, committee), 5)).toBeUndefined();
  });

  it('a holder the configuration no longer names: a re-sharing that holds rounds back', () => {
    const due = new EpochChanges().due(
      host({ threshold: 4 }, { holders: ['site-1', 'site-2', 'site-3'] }),
      5,
    );
    expect(due?.mandatory).toBe(true);
    expect(due?.why).toMatch(/site-4, site-5 no longer configured as key holders/);
  });

  it('a committee dropped, or t raised, in the configuration: a re-sharing that does not hold rounds', () => {
    const dropped = new EpochChanges().due(
      host({ threshold: 2, holders: ['site-1', 'site-2', 'site-3'] }, {}),
      5,
    );
    expect(dropped).toMatchObject({ mandatory: false });
    expect(dropped?.why).toMatch(/the configuration changed: its holders/);
    const raised = new EpochChanges().due(host({ threshold: 4 }, { sites: 5 }), 5);
    expect(raised).toMatchObject({ mandatory: false });
    expect(raised?.why).toMatch(/threshold 4 below 5/);
  });
});

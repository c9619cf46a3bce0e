// A decryption committee (issue 23): with `crypto.threshold.holders`, every site deals a share of
// its secret only to the key holders, and the holders seal their data contributions to every
// site, so dealing is linear in the number of sites. Real coordinator, aggregator and site agents
// over a real nats-server: rounds commit with every site's update, only holders are asked for
// decryption shares, a non-holder's key file holds its own secret and nothing else, an online
// rotation stores one envelope per (dealer, holder) and (holder, site) pair and nothing else, a
// coordinator that moves the committee gets no deal, and a dealer that seals garbage to a holder
// is named by that holder's complaint and left out with it.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadThresholdKey, type ThresholdLaneContext } from '../../crypto/threshold/index.ts';
import {
  type ControlBodies,
  openControl,
  sealControl,
  type ThresholdEpochBody,
} from '../../src/protocol/index.ts';
import {
  decodeSharesObject,
  epochDealObjectName,
  epochPublicObjectName,
  epochRoster,
  epochShareObjectName,
  sharesObjectName,
} from '../../src/round/index.ts';
import type { CoordinatorHandle } from '../../src/services/coordinator/index.ts';
import { loadEpochDataKeys } from '../../src/services/site-threshold.ts';
import { aggregateStore, readWriteOnceObject } from '../../src/services/store/index.ts';
import { e2eOverrides } from '../helpers/e2e-overrides.ts';
import { expectSingleChain, Federation, waitFor } from '../helpers/federation.ts';

const F = 'committee';
const SITES = ['site-1', 'site-2', 'site-3', 'site-4', 'site-5'];
const HOLDERS = ['site-1', 'site-2', 'site-3'];
const OVERRIDES = {
  ...e2eOverrides({ minContributors: 2, voteTimeoutMs: 8000 }),
  crypto: {
    keys: 'threshold' as const,
    threshold: { holders: HOLDERS, rotateEveryRounds: 2, reshareTimeoutMs: 8000 },
  },
  log: { level: 'warn' as const },
};

describe('a decryption committee (real nats-server, real members)', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  let decided: readonly { round: number; commit: boolean; contributors: number }[] = [];
  const epochs = async (): Promise<ThresholdEpochBody[]> =>
    (await f.logEntries()).flatMap((e) => (e.record.thresholdEpoch ? [e.record.thresholdEpoch] : []));
  /** An object of the aggregates store as the coordinator reads it; undefined when absent. */
  const stored = async (name: string) =>
    (await readWriteOnceObject(f.coord.transport.connection, aggregateStore(F), name, {
      maxBytes: 64 * 1024 * 1024,
      timeoutMs: 5000,
    })) ?? undefined;

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 1, sites: SITES.length, overrides: OVERRIDES });
    await f.startAggregator(f.dep.aggregators[0]!);
    for (const s of f.dep.sites) await f.startAgent(s);
    ({ coordinator, decided } = f.startDecidingCoordinator());
  }, 120_000);
  afterAll(async () => {
    await coordinator?.stop();
    await f?.stop();
  });

  it('the ceremony deals to the holders only: a non-holder holds its own secret and no share', () => {
    const keys = f.dep.config.members!.keysDir;
    const lanes = f.coord.ckks as ThresholdLaneContext;
    for (const s of SITES) {
      const k = loadThresholdKey(lanes.tc, join(keys, s, `${s}.threshold`), F);
      expect(k.roster.holders).toEqual(HOLDERS);
      expect(k.roster.threshold).toBe(2); // ⌈2·3/3⌉ of the holders
      expect([...k.shares.keys()].sort()).toEqual(HOLDERS.includes(s) ? SITES : []);
    }
    const envelopes = readdirSync(join(keys, 'public')).filter((n) => n.endsWith('.tshare.env'));
    expect(envelopes).toHaveLength(5 * 3 + 3 * 2);
    expect(envelopes).not.toContain('site-4.to.site-5.tshare.env');
  });

  it('rounds commit with every site’s update; only holders are asked to decrypt', async () => {
    await waitFor(
      'two commits of five sites',
      () => decided.filter((d) => d.commit && d.contributors === 5).length >= 2,
      120_000,
    );
    for (const d of (await f.decisions()).filter((x) => x.commit)) {
      const { request } = decodeSharesObject((await stored(sharesObjectName(d.round)))!);
      const body = openControl(request, 'share-request', f.coord.keys).body;
      expect(body.decrypting).toHaveLength(2);
      for (const x of body.decrypting) expect(HOLDERS).toContain(x.site);
    }
    expectSingleChain(await f.decisions(), f.genesis);
  }, 180_000);

  it('an online rotation stores one envelope per dealer→holder and holder→site pair; every site derives the data key', async () => {
    await waitFor('a rotation', async () => (await epochs()).length >= 1, 120_000);
    const [epoch] = await epochs();
    expect(epoch!.sites.map((s) => [s.id, s.holds])).toEqual(SITES.map((s) => [s, HOLDERS.includes(s)]));
    const g = epochRoster(F, epoch!);
    for (const dealer of SITES) {
      expect(await stored(epochDealObjectName(g, dealer))).toBeDefined();
      expect(await stored(epochPublicObjectName(g, dealer))).toBeDefined();
      for (const recipient of SITES) {
        const expected = HOLDERS.includes(recipient) || HOLDERS.includes(dealer);
        expect(
          (await stored(epochShareObjectName(g, dealer, recipient))) !== undefined,
          `${dealer} → ${recipient}`,
        ).toBe(expected);
      }
    }
    await waitFor(
      'a commit of five sites under it',
      () => decided.some((d) => d.commit && d.round >= epoch!.fromRound && d.contributors === 5),
      120_000,
    );
    // The holders' contributions reached every site: each holds the same data key of the epoch.
    const keys = f.dep.config.members!.keysDir;
    const id = Buffer.from(epoch!.epochId).toString('hex');
    const dataKeys = SITES.map((s) => Buffer.from(loadEpochDataKeys(keys, s).get(id)!).toString('hex'));
    expect(new Set(dataKeys).size).toBe(1);
  }, 300_000);

  it('a coordinator that moves the committee, or drops it, gets no deal', async () => {
    // A second connection of the coordinator's: it may read what sites send on their epoch subjects.
    const wire = (await f.member('coordinator')).transport.connection;
    // Deals for the generation asked (the coordinator's own rotations run meanwhile).
    const heard: string[] = [];
    let asked = 0;
    const tap = wire.subscribe(`cohort.${F}.epoch.*`, {
      callback: (_e, m) => {
        try {
          if (openControl(m.data, 'epoch-deal', f.coord.keys).body.generation === asked)
            heard.push(m.subject);
        } catch {
          // a ready, or chunks of a large deal
        }
      },
    });
    const lanes = f.coord.ckks as ThresholdLaneContext;
    const ask = async (holds: (site: string) => boolean) => {
      const body: ControlBodies['epoch-request'] = {
        federation: F,
        generation: Math.floor(Date.now() / 1000) + 100_000,
        paramsId: lanes.tc.paramsId,
        threshold: 2,
        sites: SITES.map((id, k) => ({ id, point: k + 1, holds: holds(id) })),
        phase: 'deal',
        fromRound: (await f.decisions()).at(-1)!.round + 1,
        deadlineUnixMs: Date.now() + 10_000,
      };
      heard.length = 0;
      asked = body.generation;
      await f.coord.transport.publish(
        f.coord.subjects.epochRequest,
        sealControl('epoch-request', body, f.coord.member, f.coord.signing),
      );
      await new Promise((r) => setTimeout(r, 2500));
      return [...new Set(heard)].sort();
    };
    const refused = () => SITES.reduce((n, s) => n + f.agents.get(s)!.stats().epochRequestsRefused, 0);
    const refusedBefore = refused();
    try {
      // The committee moved onto site-4 and site-5 (a coalition could then read every update).
      expect(await ask((s) => s !== 'site-1')).toEqual([]);
      // Every site a holder: all-to-all, not what the configuration names.
      expect(await ask(() => true)).toEqual([]);
      // Each site counted both refusals.
      expect(refused() - refusedBefore).toBeGreaterThanOrEqual(2 * SITES.length);
      // The configured committee: every site deals.
      expect((await ask((s) => HOLDERS.includes(s))).length).toBe(SITES.length);
    } finally {
      tap.unsubscribe();
    }
  }, 60_000);

  it('a dealer that seals garbage to a holder draws its complaint: the next epoch leaves out both, and rounds go on', async () => {
    // site-5 runs as a process that seals 64 signed bytes, not a share, to site-1 in every deal.
    const garbage = await f.agentProcessInstead('site-5', 'agent.epoch-deal-garbage:skip');
    try {
      const before = (await epochs()).length;
      await waitFor(
        'an epoch without site-1 and site-5',
        async () =>
          (await epochs())
            .slice(before)
            .some((e) => !e.sites.some((s) => s.id === 'site-1' || s.id === 'site-5')),
        180_000,
      );
      const epoch = (await epochs()).slice(before).find((e) => !e.sites.some((s) => s.id === 'site-1'))!;
      expect(f.agents.get('site-1')!.stats().complaintsSent).toBeGreaterThanOrEqual(1);
      // The remaining holders still make the threshold the configuration promises.
      expect(epoch.sites.filter((s) => s.holds).map((s) => s.id)).toEqual(['site-2', 'site-3']);
      expect(epoch.threshold).toBe(2);
      // Without the complaint, site-1 alone would have been left out (it could not collect), and
      // site-5 would have sealed garbage to the next holder in the next attempt.
      await waitFor(
        'a commit under it',
        () => decided.some((d) => d.commit && d.round >= epoch.fromRound),
        120_000,
      );
      expectSingleChain(await f.decisions(), f.genesis);
    } finally {
      garbage.child.kill('SIGKILL');
      await garbage.exited;
    }
  }, 300_000);
});

// Registry changes in a running federation (real coordinator, aggregator and agents in this
// process, a real nats-server with the members' NKEY users and mutual TLS; changes sent with the
// operator's CLI over NATS):
//   1. site-1's key is rotated from round r: from r on its old key's messages are refused by the
//      coordinator and by the aggregator's view, its new key's accepted, and it contributes again;
//   2. site-4 is revoked from round r': from then on its heartbeats and votes are refused, it is
//      never assigned again, and rounds still commit.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateSigningKeyPair,
  type SigningKeyPair,
  savePublicKey,
  saveSigningKeyPair,
} from '../../crypto/signature/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { openControl, sealControl } from '../../src/protocol/index.ts';
import type { CoordinatorEvent, CoordinatorHandle } from '../../src/services/coordinator/index.ts';
import type { MemberContext } from '../../src/services/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { expectSingleChain, Federation, waitFor } from '../helpers/federation.ts';
import { cohort } from '../helpers/run-cli.ts';

const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 8000,
    voteTimeoutMs: 8000,
    quorum: 5,
    minContributors: 2,
  },
  learning: { model: 'logreg', trainLimit: 800, testLimit: 200, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

describe('registry changes in a running federation', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  let aggregatorView: MemberContext;
  let siteView: MemberContext;
  const decided: Extract<CoordinatorEvent, { type: 'decision' }>['summary'][] = [];
  let oldKey: SigningKeyPair;

  beforeAll(async () => {
    f = await Federation.create('regfed', { aggregators: 1, sites: 4, overrides: OVERRIDES });
    await f.startAggregator('agg-1');
    for (const s of f.dep.sites) await f.startAgent(s);
    // Second connections of agg-1 and site-2: their registry views follow the log like the services'.
    aggregatorView = await f.member('agg-1');
    siteView = await f.member('site-2');
    oldKey = (await f.member('site-1')).signing;
    coordinator = f.startCoordinator({
      rounds: 0,
      switchWaitMs: 5000,
      onEvent: (e) => {
        if (e.type === 'decision') decided.push(e.summary);
      },
    });
  });
  afterAll(async () => {
    await f?.stop();
  });

  const config = () => f.dep.configPath;
  const heartbeat = (site: string, key: SigningKeyPair) =>
    sealControl(
      'heartbeat',
      {
        federation: 'regfed',
        member: site,
        role: 'site',
        sentUnixMs: Date.now(),
        head: new Uint8Array(32),
        examples: 1,
        state: 'READY',
        height: 0,
      },
      site,
      key,
    );
  const committedAfter = (round: number, check: (d: (typeof decided)[number]) => boolean = () => true) =>
    waitFor(
      `a COMMIT after round ${round}`,
      () => decided.some((d) => d.round > round && d.commit && check(d)),
      90_000,
    );

  it('a rotation from round r: the old key is refused from r on, the new key accepted', async () => {
    await committedAfter(0);
    // site-1 goes down and its operator makes a new key pair (the old one stays for the check below).
    await f.agents.get('site-1')!.stop();
    await waitFor('site-1 not live', () => !coordinator.stats().liveSites.includes('site-1'), 10_000);
    const next = generateSigningKeyPair('falcon-512');
    const own = join(f.dep.config.members!.keysDir, 'site-1');
    saveSigningKeyPair(join(own, 'site-1.key'), next);
    savePublicKey(join(own, 'site-1.next.pub'), next);
    const from = coordinator.stats().round + 1;

    const run = await cohort(
      'registry',
      'rotate',
      '--config',
      config(),
      '--officer-key',
      f.dep.officer.key,
      '--member',
      'site-1',
      '--from-round',
      String(from),
      '--signing-pub',
      join(own, 'site-1.next.pub'),
      '--reason',
      'test rotation',
      '--wait',
    );
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.split('\n')[0]!)).toEqual({
      queued: true,
      kind: 'rotate',
      member: 'site-1',
      fromRound: from,
    });
    expect(run.stdout).toContain(`logged rotate site-1 from round ${from}`);

    // The log holds it right before round `from` opens, and every view switches.
    const entries = await f.logEntries();
    const at = entries.findIndex((e) => e.record.registryChange);
    expect(entries[at + 1]!.record.roundOpen?.round).toBe(from);
    expect(f.coord.keys('site-1')!.keyId).toBe(next.keyId);
    await waitFor('the aggregator’s view', () => aggregatorView.keys('site-1')?.keyId === next.keyId, 10_000);
    await waitFor('a site’s view', () => siteView.keys('site-1')?.keyId === next.keyId, 10_000);
    expect(aggregatorView.registryView.keyFor('site-1', from - 1)!.keyId).toBe(oldKey.keyId);

    // Old key: refused everywhere; new key: accepted.
    for (const view of [f.coord, aggregatorView, siteView]) {
      expect(errorCode(() => openControl(heartbeat('site-1', oldKey), 'heartbeat', view.keys))).toBe(
        'BLOCK_WRONG_SIGNER',
      );
      expect(openControl(heartbeat('site-1', next), 'heartbeat', view.keys).signer).toBe('site-1');
    }

    // site-1 restarts with its new key, catches up and contributes again.
    await f.startAgent('site-1');
    await committedAfter(from, (d) => d.contributors === 4);
    const later = (await f.decisions()).filter((d) => d.round >= from && d.commit);
    expect(
      later.some(
        (d) => d.voters.includes('site-1') && d.aggregate!.contributors.some((c) => c.site === 'site-1'),
      ),
    ).toBe(true);
  }, 150_000);

  it('a revocation from round r′: heartbeats and votes refused, never assigned again, rounds still commit', async () => {
    const from = coordinator.stats().round + 1;
    const refusedBefore = coordinator.stats().rejectedByReason.BLOCK_WRONG_SIGNER ?? 0;
    const run = await cohort(
      'registry',
      'revoke',
      '--config',
      config(),
      '--officer-key',
      f.dep.officer.key,
      '--member',
      'site-4',
      '--from-round',
      String(from),
      '--wait',
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`logged revoke site-4 from round ${from}`);
    await committedAfter(from + 1);

    // Never assigned again, never a voter, and the rounds commit with the three others.
    const entries = await f.logEntries();
    const opens = entries.map((e) => e.record.roundOpen).filter((o) => o != null && o.round >= from);
    expect(opens.length).toBeGreaterThanOrEqual(2);
    for (const o of opens) expect(o!.assignments.map((a) => a.site)).not.toContain('site-4');
    const after = (await f.decisions()).filter((d) => d.round >= from);
    expect(after.filter((d) => d.commit).length).toBeGreaterThanOrEqual(2);
    for (const d of after) expect(d.voters).not.toContain('site-4');
    expect(coordinator.stats().liveSites).not.toContain('site-4');
    // Its agent keeps heartbeating: every one is refused now.
    expect(coordinator.stats().rejectedByReason.BLOCK_WRONG_SIGNER ?? 0).toBeGreaterThan(refusedBefore);

    // Its messages are refused by every view, whatever key it signs with.
    const site4 = (await f.member('site-4').catch(() => undefined))?.signing;
    const vote = (key: SigningKeyPair) =>
      sealControl(
        'vote',
        {
          federation: 'regfed',
          round: from + 1,
          member: 'site-4',
          yes: true,
          commitHash: new Uint8Array(32),
          modelHash: new Uint8Array(32),
          reason: '',
          meanUpdateRms: 0,
          bytesSent: 0,
          stateHash: new Uint8Array(32),
          attempt: new Uint8Array(16),
          evaluation: null,
        },
        'site-4',
        key,
      );
    expect(site4).toBeDefined();
    for (const view of [f.coord, aggregatorView, siteView]) {
      await waitFor('site-4 revoked in every view', () => view.keys('site-4') === undefined, 10_000);
      expect(errorCode(() => openControl(vote(site4!), 'vote', view.keys))).toBe('BLOCK_WRONG_SIGNER');
    }

    // A revoked member is never enrolled again under its id.
    const again = await cohort(
      'registry',
      'enroll',
      '--config',
      config(),
      '--officer-key',
      f.dep.officer.key,
      '--member',
      'site-4',
      '--signing-pub',
      join(f.dep.config.members!.keysDir, 'public', 'site-4.pub'),
      '--kem-pub',
      join(f.dep.config.members!.keysDir, 'public', 'site-4.kem.pub'),
    );
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/REGISTRY_CHANGE_REFUSED|never reused/);
    expectSingleChain(await f.decisions(), f.genesis);
  }, 150_000);
});

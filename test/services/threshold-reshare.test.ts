// Re-sharing of the threshold key epoch (issue 23), end to end over a real nats-server with the
// real coordinator, aggregator and site agents: an enrollment, a scheduled rotation and a site
// that never re-shares each lead to a new key epoch logged from a round, after which rounds
// commit under it; every epoch in the log is checked by the log's own history rules and by the
// auditor; old key files are erased where the new epoch is in force.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packedBytes, type ThresholdLaneContext, wipe } from '../../crypto/threshold/index.ts';
import type { AuditReport } from '../../src/audit/index.ts';
import {
  type ControlBodies,
  openControl,
  sealControl,
  type ThresholdEpochBody,
} from '../../src/protocol/index.ts';
import { epochRoster } from '../../src/round/index.ts';
import type { CoordinatorHandle } from '../../src/services/coordinator/index.ts';
import { enrollSite } from '../../src/services/index.ts';
import { loadEpochDataKeys } from '../../src/services/site-threshold.ts';
import { makeDeal } from '../../src/services/threshold-dealing.ts';
import { e2eOverrides } from '../helpers/e2e-overrides.ts';
import { expectSingleChain, Federation, waitFor } from '../helpers/federation.ts';
import { auditExport, cohort } from '../helpers/run-cli.ts';

const F = 'reshare';
const OVERRIDES = {
  // Round 1 runs before site-4 is enrolled: three sites and the aggregator are the quorum.
  ...e2eOverrides({ minContributors: 2, voteTimeoutMs: 8000, quorum: 4 }),
  crypto: { keys: 'threshold' as const, threshold: { rotateEveryRounds: 3, reshareTimeoutMs: 4000 } },
  log: { level: 'warn' as const },
};

describe('re-sharing the threshold key epoch (real nats-server, real members)', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  let decided: readonly { round: number; commit: boolean; contributors: number }[] = [];
  /** Logged epochs; read at most every 250 ms while waiting (each read verifies the whole log). */
  let read = { at: 0, epochs: [] as ThresholdEpochBody[] };
  const epochs = async (): Promise<ThresholdEpochBody[]> => {
    if (Date.now() - read.at > 250) {
      const entries = await f.logEntries();
      read = {
        at: Date.now(),
        epochs: entries.flatMap((e) => (e.record.thresholdEpoch ? [e.record.thresholdEpoch] : [])),
      };
    }
    return read.epochs;
  };
  const fresh = async () => {
    read = { at: 0, epochs: [] };
    return epochs();
  };

  beforeAll(async () => {
    f = await Federation.create(F, {
      aggregators: 1,
      sites: 4,
      unenrolled: ['site-4'],
      overrides: OVERRIDES,
    });
    await f.startAggregator(f.dep.aggregators[0]!);
    for (const s of ['site-1', 'site-2', 'site-3']) await f.startAgent(s);
    ({ coordinator, decided } = f.startDecidingCoordinator());
  }, 120_000);
  afterAll(async () => {
    await coordinator?.stop();
    await f?.stop();
  });

  it('an enrolled site joins through a re-sharing logged before it contributes, under the new epoch', async () => {
    // First a scheduled rotation among the three sites (from round 4): site-4 will hold no data key
    // of that epoch, so it cannot replay its rounds and must join from the snapshot written at the
    // first commit of the epoch that includes it.
    await waitFor('round 1 committed', () => decided.some((d) => d.round === 1 && d.commit), 60_000);
    await waitFor('a rotation among three sites', async () => (await epochs()).length >= 1, 120_000);
    await waitFor(
      'a commit under it',
      async () => {
        const [e] = await epochs();
        return decided.some((d) => d.commit && d.round >= e!.fromRound);
      },
      60_000,
    );
    // The sponsor passes on the data key only: under threshold keys there is no CKKS secret to give.
    const keys = f.dep.config.members!.keysDir;
    const files = enrollSite({
      dir: keys,
      federation: F,
      sponsor: 'site-1',
      site: 'site-4',
      algorithm: 'falcon-512',
      ckks: undefined,
    });
    expect(readdirSync(join(keys, 'public'))).not.toContain('site-4.ckks.env');
    // Its agent runs before the enrollment is logged (its heartbeats are refused until then).
    await f.startAgent('site-4');
    const from = coordinator.stats().round + 2;
    const enrolled = await cohort(
      'registry',
      'enroll',
      '--config',
      f.dep.configPath,
      '--officer-key',
      f.dep.officer.key,
      '--member',
      'site-4',
      '--signing-pub',
      files.signingPublicKey,
      '--kem-pub',
      files.kemPublicKey,
      '--from-round',
      String(from),
      '--wait',
    );
    expect(enrolled.status, enrolled.stderr).toBe(0);
    await waitFor(
      'a commit with site-4',
      () => decided.some((d) => d.commit && d.contributors === 4),
      90_000,
    );
    // A scheduled rotation of the three first sites may come first; the join is the epoch with site-4.
    const epoch = (await fresh()).find((e) => e.sites.some((x) => x.id === 'site-4'));
    expect(epoch!.fromRound).toBeGreaterThanOrEqual(from);
    expect(epoch!.sites.map((s) => s.id)).toEqual(['site-1', 'site-2', 'site-3', 'site-4']);
    expect(epoch!.threshold).toBe(3); // ⌈2·4/3⌉
    expect(epoch!.readies).toHaveLength(4);
    // site-4 contributes only from the epoch that holds its secret.
    for (const d of await f.decisions()) {
      const sites = d.aggregate?.contributors.map((c) => c.site) ?? [];
      if (sites.includes('site-4')) expect(d.round).toBeGreaterThanOrEqual(epoch!.fromRound);
    }
    // It joined from the snapshot of the epoch's first commit (under the epoch's data key), not by
    // replaying the rotated epoch's rounds, whose shares are sealed under a data key it never held.
    const entries = await f.logEntries();
    const firstCommit = (await f.decisions()).find((d) => d.commit && d.round >= epoch!.fromRound)!;
    expect(entries.some((e) => e.record.snapshot?.height === firstCommit.height)).toBe(true);
    expect(f.agents.get('site-4')!.stats().snapshotsJoined).toBeGreaterThanOrEqual(1);
    const keys3 = loadEpochDataKeys(keys, 'site-3');
    expect(keys3.has(Buffer.from(epoch!.epochId).toString('hex'))).toBe(true);
    expect(
      loadEpochDataKeys(keys, 'site-4').has(Buffer.from((await fresh())[0]!.epochId).toString('hex')),
    ).toBe(false);
    // Each site holds one key file, of this epoch or a later rotation, once it switched.
    const held = (s: string) => readdirSync(join(keys, s)).filter((n) => n.endsWith('.threshold'));
    await waitFor('every site switched', () =>
      ['site-1', 'site-2', 'site-3', 'site-4'].every((s) => {
        const files = held(s);
        const g = Number(/\.g(\d+)\.threshold$/.exec(files[0] ?? '')?.[1] ?? -1);
        return files.length === 1 && g >= epoch!.generation;
      }),
    );
  }, 240_000);

  it('rotates every three rounds: a new epoch with fresh secrets for the same sites', async () => {
    const joined = (all: readonly ThresholdEpochBody[]) =>
      all.findIndex((e) => e.sites.some((x) => x.id === 'site-4'));
    await waitFor(
      'a rotation after the join',
      async () => {
        const all = await epochs();
        return all.length > joined(all) + 1;
      },
      120_000,
    );
    const all = await fresh();
    const first = all[joined(all)];
    const second = all[joined(all) + 1];
    expect(second!.fromRound).toBe(first!.fromRound + 3);
    expect(second!.sites).toEqual(first!.sites);
    expect(second!.generation).toBeGreaterThan(first!.generation);
    expect(Buffer.from(second!.epochId).equals(Buffer.from(first!.epochId))).toBe(false);
    // Fresh secrets: every public share differs from the epoch before.
    second!.publicShareDigests.forEach((d, k) => {
      expect(Buffer.from(d).equals(Buffer.from(first!.publicShareDigests[k]!))).toBe(false);
    });
    await waitFor(
      'a commit under it',
      () => decided.some((d) => d.commit && d.round >= second!.fromRound),
      60_000,
    );
  }, 180_000);

  it('a site that never re-shares is left out of the next attempt; the federation goes on without it', async () => {
    // site-3 runs as a process that ignores every epoch request.
    const silent = await f.agentProcessInstead('site-3', 'agent.epoch-request:skip');
    // Meanwhile site-3's credentials (its signing key and NATS user, opened here as a second
    // connection) attack the re-sharing intake while its slot is empty: every message a site can
    // send on its one subject, `epoch.site-3`, that is not its honest deal is refused, by reason.
    const hostile = await f.member('site-3');
    const refusals = new Map<string, string>();
    let attacked: Promise<void> | undefined;
    const attack = async (r: ControlBodies['epoch-request']) => {
      const roster = epochRoster(F, r);
      const tc = (hostile.ckks as ThresholdLaneContext).tc;
      const deal = makeDeal({
        site: 'site-3',
        roster,
        ctx: tc,
        signingKey: hostile.signing,
        kemKeys: (id) => hostile.registryView.currentKemKey(id),
      });
      wipe(deal.secret);
      const body: ControlBodies['epoch-deal'] = {
        federation: F,
        generation: r.generation,
        site: 'site-3',
        publicShare: deal.publicShare,
        envelopes: deal.envelopes.map((e) => ({ recipient: e.recipient, envelope: e.envelope })),
      };
      const seal = (b: ControlBodies['epoch-deal']) =>
        sealControl('epoch-deal', b, 'site-3', hostile.signing);
      // A public share made for another roster (another generation's seed), validly signed.
      const other = makeDeal({
        site: 'site-3',
        roster: { ...roster, generation: roster.generation + 1 },
        ctx: tc,
        signingKey: hostile.signing,
        kemKeys: (id) => hostile.registryView.currentKemKey(id),
      });
      wipe(other.secret);
      const attempts: [string, Uint8Array][] = [
        ['garbage', new Uint8Array(64).fill(7)],
        ['a deal naming another site', seal({ ...body, site: 'site-1' })],
        ['a deal of another generation', seal({ ...body, generation: r.generation - 1 })],
        ['a deal of another federation', seal({ ...body, federation: 'elsewhere' })],
        ['a public share of another roster', seal({ ...body, publicShare: other.publicShare })],
        ['envelopes out of roster order', seal({ ...body, envelopes: [...body.envelopes].reverse() })],
        ['an envelope missing', seal({ ...body, envelopes: body.envelopes.slice(1) })],
        [
          'a public share without its polynomial',
          seal({
            ...body,
            publicShare: deal.publicShare.subarray(0, deal.publicShare.length - packedBytes(tc)),
          }),
        ],
        [
          'an envelope whose signature does not verify',
          seal({
            ...body,
            envelopes: body.envelopes.map((e, k) => {
              if (k !== 0) return e;
              const bad = e.envelope.slice();
              bad[bad.length - 1]! ^= 1;
              return { ...e, envelope: bad };
            }),
          }),
        ],
        [
          'an oversized envelope',
          seal({
            ...body,
            envelopes: body.envelopes.map((e) => ({ ...e, envelope: new Uint8Array(tc.polyBytes + 20_000) })),
          }),
        ],
        [
          'a ready in the deal phase',
          sealControl(
            'epoch-ready',
            {
              federation: F,
              generation: r.generation,
              site: 'site-3',
              epochId: new Uint8Array(32),
              fromRound: r.fromRound,
              keyConfirmation: new Uint8Array(32),
            },
            'site-3',
            hostile.signing,
          ),
        ],
      ];
      for (const [what, bytes] of attempts) {
        const code = await hostile.transport.request(hostile.subjects.epoch('site-3'), bytes).then(
          () => 'accepted',
          (err: { details?: { remoteCode?: string }; code?: string }) =>
            err.details?.remoteCode ?? err.code ?? '?',
        );
        refusals.set(what, code);
      }
    };
    const listen = hostile.transport.subscribe(hostile.subjects.epochRequest, async (m) => {
      const r = openControl(m.data, 'epoch-request', hostile.keys, { signer: f.dep.coordinator }).body;
      if (attacked === undefined && r.phase === 'deal' && r.sites.some((x) => x.id === 'site-3'))
        attacked = attack(r);
      return undefined;
    });
    await listen.ready();
    try {
      await waitFor('site-3 ready as a process', () => silent.output.includes('agent ready'), 60_000);
      const before = (await fresh()).length;
      await waitFor('the next rotation', async () => (await epochs()).length > before, 120_000);
      const last = (await fresh()).at(-1)!;
      expect(last.sites.map((s) => s.id)).toEqual(['site-1', 'site-2', 'site-4']);
      await waitFor(
        'a commit under it',
        () => decided.some((d) => d.commit && d.round >= last.fromRound),
        60_000,
      );
      const d = (await f.decisions()).find((x) => x.commit && x.round >= last.fromRound)!;
      expect(d.aggregate!.contributors.map((c) => c.site)).not.toContain('site-3');
      expectSingleChain(await f.decisions(), f.genesis);
      await attacked;
      expect(Object.fromEntries(refusals)).toEqual({
        garbage: 'BLOCK_MALFORMED',
        'a deal naming another site': 'BLOCK_WRONG_CONTEXT',
        'a deal of another generation': 'BLOCK_WRONG_CONTEXT',
        'a deal of another federation': 'BLOCK_WRONG_CONTEXT',
        'a public share of another roster': 'PUBLIC_SHARE_INVALID',
        'a public share without its polynomial': 'BLOCK_MALFORMED',
        'envelopes out of roster order': 'BLOCK_MALFORMED',
        'an envelope missing': 'BLOCK_MALFORMED',
        'an envelope whose signature does not verify': 'BLOCK_MALFORMED',
        'an oversized envelope': 'BLOCK_MALFORMED',
        'a ready in the deal phase': 'BLOCK_MALFORMED',
      });
      // None was stored: the attempt that waited for site-3 logged nothing, the next left it out.
      expect(last.sites.map((x) => x.id)).not.toContain('site-3');
    } finally {
      await listen.unsubscribe();
      silent.child.kill('SIGKILL');
      await silent.exited;
    }
  }, 240_000);

  it('the auditor verifies the log with its re-sharings: every ready signed by its site', async () => {
    await coordinator.stop();
    const dir = mkdtempSync(join(tmpdir(), 'cohort-reshare-audit-'));
    try {
      const path = join(dir, 'audit.bin');
      await auditExport(f.dep.configPath, path);
      const r = await cohort('audit', 'verify', '--bundle', path, '--config', f.dep.configPath, '--json');
      const report = JSON.parse(r.stdout) as AuditReport;
      expect(report.problems).toEqual([]);
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a coordinator cannot lower the threshold or pack the roster: sites deal only to what the federation promises', async () => {
    // The coordinator's own key signs requests that would weaken the key: t = 1 (every share a
    // whole secret), and a roster naming a site that is not enrolled. No site deals to either; the
    // same request with the federation's threshold is answered (the tap can see a deal).
    await coordinator.stop();
    const wire = (await f.member('coordinator')).transport.connection;
    const heard: string[] = [];
    const tap = wire.subscribe(`cohort.${F}.epoch.*`, {
      callback: (_e, m) => {
        heard.push(m.subject);
      },
    });
    const lanes = f.coord.ckks as ThresholdLaneContext;
    const all = await fresh();
    const live = all.at(-1)!.sites.map((x) => ({ id: x.id, point: x.point, holds: true }));
    const ask = async (over: Partial<ControlBodies['epoch-request']>) => {
      const body: ControlBodies['epoch-request'] = {
        federation: F,
        generation: Math.floor(Date.now() / 1000) + 100_000,
        paramsId: lanes.tc.paramsId,
        threshold: 3,
        sites: live,
        phase: 'deal',
        fromRound: (await f.decisions()).at(-1)!.round + 1,
        deadlineUnixMs: Date.now() + 10_000,
        ...over,
      };
      heard.length = 0;
      await f.coord.transport.publish(
        f.coord.subjects.epochRequest,
        sealControl('epoch-request', body, f.coord.member, f.coord.signing),
      );
      await new Promise((r) => setTimeout(r, 2500));
      return [...new Set(heard)].sort();
    };
    try {
      expect(await ask({ threshold: 1 })).toEqual([]);
      expect(await ask({ sites: [...live, { id: 'site-9', point: 9, holds: true }] })).toEqual([]);
      // A committee the configuration does not name (every site holds here): no deal either.
      expect(await ask({ sites: live.map((x, k) => ({ ...x, holds: k > 0 })) })).toEqual([]);
      expect((await ask({})).length).toBeGreaterThan(0);
    } finally {
      tap.unsubscribe();
    }
  }, 60_000);
});

// End to end in `plain` mode with a robust rule (docs/security.md, "plain mode"): the real
// coordinator, aggregators and site agents over a real nats-server. Updates travel as signed,
// quantized plaintext; the aggregators sum them and keep each one; the coordinator reads every
// update back, applies Multi-Krum and commits the aggregate update Δ̄ by its digest, which every
// site checks before voting. One site trains honestly and then sends −20× its update: Multi-Krum
// leaves it out of every round. The test recomputes Δ̄ from the stored updates itself, a late site
// catches up by replaying the robust commits, and the auditor's CLI recomputes every Δ̄ from the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlainLaneContext, PlainLaneKeyset } from '../../crypto/ckks/index.ts';
import { sha256 } from '../../crypto/digest/index.ts';
import { l2Norm } from '../../federation/index.ts';
import { createCpuEngine, type TrainingEngine } from '../../gpu/index.ts';
import { openLiveAuditSource } from '../../src/audit/index.ts';
import { recomputeAggregate } from '../../src/audit/recompute-check.ts';
import { decodeManifestBody, FRAME_KIND, openControl, unframe } from '../../src/protocol/index.ts';
import type { AcceptedPartial } from '../../src/round/index.ts';
import {
  contributionReader,
  decodeAggregateObject,
  decodeContribution,
  decodeRoundParams,
  encodeContribution,
  openContribution,
  type RoundRobust,
} from '../../src/round/index.ts';
import { type AgentService, startAgent } from '../../src/services/agent/index.ts';
import { contributionWriter } from '../../src/services/aggregator/index.ts';
import { startCoordinator } from '../../src/services/coordinator/index.ts';
import { nextRoundClip } from '../../src/services/coordinator/next-clip.ts';
import { robustRound, robustStep } from '../../src/services/coordinator/robust-round.ts';
import type { RoundHost } from '../../src/services/coordinator/round-host.ts';
import { ckksParamsOf, openMember } from '../../src/services/index.ts';
import {
  decodeRobustDelta,
  plainUpdateDelta,
  robustDeltaObjectName,
} from '../../src/services/robust-plan.ts';
import {
  aggregateStore,
  type ContributionKey,
  readStoredContribution,
  readWriteOnceObject,
} from '../../src/services/store/index.ts';
import { e2eOverrides } from '../helpers/e2e-overrides.ts';
import { expectSingleChain, Federation, hex, waitFor } from '../helpers/federation.ts';
import { auditLive } from '../helpers/run-cli.ts';

const HOSTILE = 'site-5';
const LATE = 'site-6';

const OVERRIDES = e2eOverrides(
  // Round 1 waits for five sites and both aggregators: site-6 joins late.
  { minContributors: 5, quorum: 7 },
  { trainLimit: 2400 },
  { federation: { id: 'e2eplain', mode: 'plain', aggregation: { name: 'multi-krum', byzantine: 1 } } },
);

/** A stored contribution, as the coordinator reads it back (its encoding, `encodeContribution`). */
async function storedContribution(f: Federation, key: ContributionKey): Promise<Uint8Array> {
  const read = await readStoredContribution(f.coord.transport.connection, f.dep.config.federation.id, key, {
    maxFrames: 64,
    maxBytes: 64 << 20,
  });
  if (read.status !== 'found') throw new Error(`contribution of ${key.site}: ${read.status}`);
  const [manifest, ...blocks] = read.frames;
  return encodeContribution({ manifest: manifest!, blocks });
}

/** Trains like any site, then sends `factor` times its update (the scaling attack, sign flipped). */
function hostileEngine(factor: number): TrainingEngine {
  const inner = createCpuEngine();
  return {
    ...inner,
    kind: inner.kind,
    description: `${inner.description} (sends ${factor}× its update)`,
    async train(spec, initial, data, config) {
      const trained = await inner.train(spec, initial, data, config);
      const parameters = trained.parameters.map((p, i) => initial[i]! + factor * (p - initial[i]!));
      return { ...trained, parameters };
    },
  };
}

describe('plain mode with Multi-Krum end to end (real nats-server)', () => {
  let f: Federation;
  const started: AgentService[] = [];

  beforeAll(async () => {
    f = await Federation.create('e2eplain', { aggregators: 2, sites: 6, overrides: OVERRIDES });
    for (const a of f.dep.aggregators) await f.startAggregator(a);
    for (const s of f.dep.sites.filter((s) => s !== HOSTILE && s !== LATE)) await f.startAgent(s);
    const hostile = await startAgent(await f.member(HOSTILE), { engine: hostileEngine(-20) });
    started.push(hostile);
    f.agents.set(HOSTILE, hostile);
  }, 60_000);
  afterAll(async () => {
    for (const a of started) await a.stop().catch(() => undefined);
    await f?.stop();
  });

  it('commits Multi-Krum of the plaintext updates, leaving the hostile site out', async () => {
    const robust: { round: number; kept: readonly string[]; dropped: readonly string[] }[] = [];
    const summary = await f.runCoordinator(2, (e) => {
      if (e.type === 'robust') robust.push({ round: e.round, kept: e.kept, dropped: e.dropped });
    });
    expect(summary.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([
      [1, true, 5],
      [2, true, 5],
    ]);
    const entries = await f.decisions();
    expectSingleChain(entries, f.genesis);
    const log = await f.logEntries();
    // The operator's view (event, metric, log line): Multi-Krum left the hostile site out each round.
    expect(robust.map((r) => [r.round, r.dropped])).toEqual([
      [1, [HOSTILE]],
      [2, [HOSTILE]],
    ]);
    const lanes = f.coord.ckks;
    expect(lanes).toBeInstanceOf(PlainLaneContext);
    const keyset = new PlainLaneKeyset(lanes as PlainLaneContext);
    const honest = f.dep.sites.filter((s) => s !== HOSTILE && s !== LATE).sort();

    /** The stored updates of `round`, decoded one by one (the first `parameters` values). */
    const readRoundUpdates = async (round: number, parameters: number) => {
      const open = log.flatMap((e) => (e.record.roundOpen?.round === round ? [e.record.roundOpen] : []))[0]!;
      const updates = new Map<string, Float32Array>();
      const { verifier } = contributionReader({
        open,
        blocks: 1,
        lanes,
        keys: f.coord.keys,
        allowedAlgorithms: f.dep.config.crypto.signature.allowed,
      });
      for (const partial of log.flatMap((e) =>
        e.record.partial?.round === round ? [e.record.partial] : [],
      )) {
        const units = decodeManifestBody(unframe(partial.manifest, FRAME_KIND.manifest));
        for (const [i, listed] of units.contributorList.entries()) {
          const update = openContribution(
            await storedContribution(f, {
              aggregator: open.assignments.find((a) => a.site === listed.site)!.aggregator,
              round: round,
              attempt: open.attempt,
              site: listed.site,
            }),
            units.siteManifests[i]!,
            listed,
            verifier,
          );
          if (typeof update === 'string') throw new Error(update);
          updates.set(listed.site, plainUpdateDelta(keyset, update, parameters));
        }
      }
      return updates;
    };

    for (const decision of entries) {
      const params = decodeRoundParams(decision.params);
      const record = params.robust!;
      expect(record.rule).toEqual({ name: 'multi-krum', byzantine: 1 });
      expect(record.selected).toEqual(honest);
      expect(decision.aggregate!.encoding.ckksParamsId).toEqual(lanes.paramsId);

      // Δ̄ as stored: what the commit's record names, and the mean of the kept sites' updates as
      // this test decodes them from the updates store.
      const nc = f.coord.transport.connection;
      const stored = await readWriteOnceObject(
        nc,
        aggregateStore(f.coord.subjects.federation),
        robustDeltaObjectName(decision.round),
        {
          maxBytes: 4 * record.parameters,
        },
      );
      expect(sha256(stored!)).toEqual(record.delta);
      const delta = decodeRobustDelta(stored!, record.parameters);
      const updates = await readRoundUpdates(decision.round, record.parameters);
      expect([...updates.keys()].sort()).toEqual([...honest, HOSTILE].sort());
      const mean = new Float32Array(record.parameters);
      for (const site of honest) {
        const u = updates.get(site)!;
        for (let i = 0; i < u.length; i++) mean[i]! += u[i]! / honest.length;
      }
      let worst = 0;
      for (let i = 0; i < mean.length; i++) worst = Math.max(worst, Math.abs(mean[i]! - delta[i]!));
      expect(worst).toBeLessThan(1e-6);
      // What Multi-Krum's scores saw: the hostile update points against the honest mean, and
      // FedAvg of all five would have moved the model another way than the commit did.
      const hostile = updates.get(HOSTILE)!;
      let dot = 0;
      for (let i = 0; i < mean.length; i++) dot += hostile[i]! * mean[i]!;
      expect(dot / (l2Norm(hostile) * l2Norm(mean))).toBeLessThan(-0.2);
    }

    // Round 2's clip follows the contributors' median RMS, which every YES voter read from the
    // aggregate's histogram lanes: all report the same value, none its own RMS.
    const reported = log
      .flatMap((e) => (e.record.votes?.round === 1 ? e.record.votes.votes : []))
      .map((v) => openControl(v.envelope, 'vote', f.coord.keys).body)
      .filter((v) => v.yes);
    const values = new Set(reported.map((v) => v.meanUpdateRms));
    expect(values.size).toBe(1);
    const median = [...values][0]!;
    const open2 = log.flatMap((e) => (e.record.roundOpen?.round === 2 ? [e.record.roundOpen] : []))[0]!;
    expect(open2.clip).toBe(Math.fround(nextRoundClip(0, [median], f.dep.config.round.clipMultiplier)));
    // Within half an octave (a bucket) of the lower median RMS of the round-1 updates as stored
    // (quantized: a site's bucket is of the update before quantization, so an RMS near a bucket's
    // edge may fall either side); the hostile site's huge RMS does not move it.
    const round1 = await readRoundUpdates(1, decodeRoundParams(entries[0]!.params).robust!.parameters);
    const rmsOf = (u: Float32Array) => Math.sqrt(u.reduce((a, x) => a + x * x, 0) / u.length);
    const all = [...round1.values()].map(rmsOf).sort((a, b) => a - b);
    const lowerMedian = all[Math.ceil(all.length / 2) - 1]!;
    expect(Math.abs(Math.log2(median / lowerMedian))).toBeLessThanOrEqual(0.5 + 0.01);
    expect(open2.clip).toBeLessThanOrEqual(
      Math.fround(
        f.dep.config.round.clipMultiplier * Math.max(...honest.map((h) => rmsOf(round1.get(h)!))) * 2 ** 0.51,
      ),
    );

    // Every site, the hostile one included, applied the same Δ̄ and holds the head.
    const head = entries.at(-1)!.commitHash;
    for (const agent of f.agents.values()) expect(hex(agent.head()!.hash)).toBe(hex(head));
  }, 180_000);

  it('a late site replays the robust commits to the same model', async () => {
    const entries = await f.decisions();
    const head = entries.at(-1)!.commitHash;
    const late = await f.startAgent(LATE);
    await waitFor(
      `${LATE} at the head`,
      () => late.head() !== null && hex(late.head()!.hash) === hex(head),
      60_000,
    );
    expect(hex(late.head()!.modelHash)).toBe(hex(f.agents.get('site-1')!.head()!.modelHash));
  }, 90_000);

  it('a coordinator aggregating by another rule than the federation’s gets no YES vote', async () => {
    const cfg = f.dep.config;
    const median = { ...cfg, federation: { ...cfg.federation, aggregation: { name: 'median' as const } } };
    const ctx = await openMember(median, f.dep.coordinator);
    try {
      // The start-up run counts the log's rounds: two are decided, so it runs round 3.
      const summary = await startCoordinator(ctx, { rounds: 3, switchWaitMs: 5000 }).done;
      expect(summary.rounds.map((r) => [r.round, r.commit])).toEqual([[3, false]]);
      expect([...summary.rounds[0]!.noVoters].sort()).toEqual([...f.dep.sites].sort());
    } finally {
      await ctx.close();
    }
    // Every site checked the commit's robust record against the federation's rule before reading Δ̄.
    for (const agent of f.agents.values()) {
      expect(agent.stats().lastVote?.reason ?? '').toContain(
        'the round records rule {"name":"median"}, this federation\'s is {"byzantine":1,"name":"multi-krum"}',
      );
    }
  }, 90_000);

  it('the auditor recomputes every Δ̄ from the stored updates: no problem', async () => {
    const report = await auditLive(f.dep.configPath);
    expect(report.problems).toEqual([]);
    expect(report.checked.recomputed).toBe(2);
    expect(report.checked.robustAggregates).toBe(2);
  }, 60_000);

  it('the audit names a robust record that keeps other sites or another Δ̄ than the rule gives', async () => {
    const log = await f.logEntries();
    const decision = (await f.decisions()).find((d) => d.round === 1)!;
    const open = log.flatMap((e) => (e.record.roundOpen?.round === 1 ? [e.record.roundOpen] : []))[0]!;
    const info = decision.aggregate!;
    const nc = f.coord.transport.connection;
    const aggregate = await readWriteOnceObject(
      nc,
      aggregateStore(f.coord.subjects.federation),
      info.object,
      {
        maxBytes: 64 << 20,
      },
    );
    const record = decodeRoundParams(decision.params).robust!;
    const check = (robust: RoundRobust) =>
      openLiveAuditSource(nc, { federation: f.dep.config.federation.id, member: f.dep.coordinator }).then(
        (source) =>
          recomputeAggregate({
            source,
            sequence: decision.sequence,
            open,
            info,
            aggregate: aggregate!,
            partials: log.flatMap((e) =>
              e.record.partial?.round === 1 ? [{ sequence: e.sequence, record: e.record.partial }] : [],
            ),
            siteKey: (id) => f.coord.keys(id),
            ckksParams: [ckksParamsOf(f.dep.config)],
            robust,
          }),
      );
    const honest = await check(record);
    expect(honest).toMatchObject({ contributions: 5, robust: true, problems: [] });
    const swapped = await check({ ...record, selected: ['site-1', 'site-2', 'site-3', HOSTILE] });
    expect(swapped.problems).toEqual([
      {
        sequence: decision.sequence,
        code: 'ROBUST_AGGREGATE_MISMATCH',
        message: `round 1: multi-krum keeps site-1, site-2, site-3, site-4; the commit records site-1, site-2, site-3, ${HOSTILE}`,
      },
    ]);
    const other = await check({ ...record, delta: new Uint8Array(32) });
    expect(other.problems.map((p) => [p.code, p.message])).toEqual([
      [
        'ROBUST_AGGREGATE_MISMATCH',
        'round 1: the multi-krum of the stored contributions is not the aggregate update the commit records',
      ],
    ]);
  }, 60_000);

  it('the coordinator fails a round whose stored updates are missing or not the ones listed, naming the site', async () => {
    const log = await f.logEntries();
    const open = log.flatMap((e) => (e.record.roundOpen?.round === 2 ? [e.record.roundOpen] : []))[0]!;
    const partials: AcceptedPartial[] = log.flatMap((e) => {
      const p = e.record.partial;
      if (p?.round !== 2) return [];
      const m = decodeManifestBody(unframe(p.manifest, FRAME_KIND.manifest));
      return [
        {
          aggregator: p.aggregator,
          sites: m.contributorList,
          manifest: p.manifest,
          siteManifests: m.siteManifests,
          ciphertexts: [],
          blocks: [],
        },
      ];
    });
    const decision = (await f.decisions()).find((d) => d.round === 2)!;
    const host = {
      ctx: f.coord,
      parameterCount: decodeRoundParams(decision.params).robust!.parameters,
    } as unknown as RoundHost;
    const input = {
      open,
      encoding: decision.aggregate!.encoding,
      partials,
      rule: { name: 'multi-krum' as const, byzantine: 1 },
    };
    // As stored, the inputs give the committed Δ̄.
    const again = await robustRound(host, input);
    expect(again.digest).toEqual(decodeRoundParams(decision.params).robust!.delta);
    // Another attempt of the round: nothing was stored under its names.
    const missing = await robustStep(host, {
      ...input,
      open: { ...open, attempt: new Uint8Array(16).fill(7) },
    });
    expect('failed' in missing && missing.failed).toMatch(
      /^robust aggregation \(multi-krum\) \[CONTRIBUTION_UNAVAILABLE\]: the update of site-\d \(stored by agg-\d, listed by agg-\d\) is not in the contributions stream$/,
    );
    // The aggregator assigned the site did not keep what it summed: it is the culprit, not the sites.
    expect('failed' in missing && missing.culprit).toMatchObject({
      role: 'aggregator',
      fault: 'CONTRIBUTION_NOT_STORED',
      member: expect.stringMatching(/^agg-\d$/),
    });
    // An aggregator tries to overwrite site-1's stored update with site-2's: each subject is
    // write-once (and an aggregator may write only its own), so the round still reads what was summed.
    const keyOf = (site: string): ContributionKey => ({
      aggregator: open.assignments.find((a) => a.site === site)!.aggregator,
      round: 2,
      attempt: open.attempt,
      site,
    });
    const owner = keyOf('site-1').aggregator;
    const agg = await f.member(owner);
    const write = contributionWriter(agg.transport.connection, agg.config.federation.id, owner);
    const { manifest, blocks } = decodeContribution(await storedContribution(f, keyOf('site-2')));
    await expect(write(keyOf('site-1'), { manifest, blocks })).rejects.toMatchObject({
      code: 'CONTRIBUTION_NOT_STORED',
      // The writer expects an empty subject; without that header the stream refuses it anyway.
      message: expect.stringMatching(/wrong last sequence|maximum messages per subject exceeded/),
    });
    expect((await robustRound(host, input)).digest).toEqual(again.digest);
    // Under a fresh attempt (subjects nobody wrote), the aggregator stores site-2's update as
    // site-1's: the robust step finds it is not the update site-1 signed.
    const fresh = new Uint8Array(16).fill(9);
    await write({ ...keyOf('site-1'), attempt: fresh }, { manifest, blocks });
    const ownPartials = partials.filter((p) => p.aggregator === owner);
    for (const { site } of ownPartials.flatMap((p) => p.sites)) {
      if (site === 'site-1') continue;
      await write(
        { ...keyOf(site), attempt: fresh },
        decodeContribution(await storedContribution(f, keyOf(site))),
      );
    }
    await expect(
      robustRound(host, { ...input, partials: ownPartials, open: { ...open, attempt: fresh } }),
    ).rejects.toMatchObject({
      code: 'CONTRIBUTION_MISMATCH',
      message: expect.stringContaining('the update of site-1'),
      culprit: { member: owner, role: 'aggregator', fault: 'CONTRIBUTION_NOT_STORED' },
    });
  }, 60_000);
});

describe('plain mode with FedAvg of the sum end to end (real nats-server)', () => {
  let f: Federation;

  beforeAll(async () => {
    f = await Federation.create('e2eplainavg', {
      aggregators: 1,
      sites: 3,
      overrides: e2eOverrides(
        { minContributors: 2, quorum: 4 },
        { trainLimit: 2400 },
        { federation: { id: 'e2eplainavg', mode: 'plain' } },
      ),
    });
    await f.startAggregator(f.dep.aggregators[0]!);
    for (const s of f.dep.sites) await f.startAgent(s);
  }, 60_000);
  afterAll(async () => {
    await f?.stop();
  });

  it('sums signed plaintext updates, commits, and the audit re-adds every sum byte for byte', async () => {
    const summary = await f.runCoordinator(2);
    expect(summary.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([
      [1, true, 3],
      [2, true, 3],
    ]);
    const entries = await f.decisions();
    expectSingleChain(entries, f.genesis);
    const lanes = f.coord.ckks as PlainLaneContext;
    expect(lanes).toBeInstanceOf(PlainLaneContext);
    for (const d of entries) {
      expect(d.aggregate!.encoding.ckksParamsId).toEqual(lanes.paramsId);
      expect(decodeRoundParams(d.params).robust).toBeUndefined();
    }
    // The stored sum is readable as it is: 3 sites' presence lanes and the mean of their levels.
    const stored = await readWriteOnceObject(
      f.coord.transport.connection,
      aggregateStore(f.coord.subjects.federation),
      'round-2',
      {
        maxBytes: 64 << 20,
      },
    );
    const payloads = decodeAggregateObject(stored!);
    const slots = new PlainLaneKeyset(lanes).decrypt(payloads[0]!);
    expect(slots.some((v) => v > 0)).toBe(true);
    const report = await auditLive(f.dep.configPath);
    expect(report.problems).toEqual([]);
    expect(report.checked.recomputed).toBe(2);
    expect(report.checked.contributions).toBe(6);
    expect(report.checked.robustAggregates).toBe(0);
  }, 120_000);
});

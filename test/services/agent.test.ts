import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Aggregate,
  type AggregateInfo,
  assembleUpdate,
  BlockVerifier,
  type ControlBodies,
  codecEncoding,
  FRAME_KIND,
  openControl,
  RMS_BUCKETS,
  sealControl,
  sumUpdates,
  type VerifiedBlock,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { aggregateDigest, encodeAggregateObject } from '../../src/round/index.ts';
import { type AgentService, federationGenesis, startAgent } from '../../src/services/agent/index.ts';
import {
  ensureLogStream,
  type FederationLogWriter,
  LOG_ORIGIN,
  type LogEntry,
  openLogWriter,
} from '../../src/services/federation-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import { aggregateStore, lazyWriteOnceStore } from '../../src/services/store/index.ts';
import { bytesToHex, type Commit } from '../../src/versions/index.ts';
import { waitFor } from '../helpers/federation.ts';
import { siteAggregate } from '../helpers/site-aggregate.ts';

const FEDERATION = 'agenttest';
const PARAMS = new TextEncoder().encode('round params: fedavg, 8 bits');
/** Parameters of the 2NN (784·200 + 200 + 200·200 + 200 + 200·10 + 10). */
const PARAMETER_COUNT = 199_210;
/** The attempt id of `round`'s one opening in these tests. */
const attemptOf = (round: number) => new Uint8Array(16).fill(round & 0xff);

interface AggregatorRound {
  readonly verifier: BlockVerifier;
  readonly blocks: Map<string, VerifiedBlock[]>;
  readonly updates: VerifiedUpdate[];
}

describe('site agent (two sites; the test plays coordinator and aggregator)', () => {
  let dir: string;
  let deployment: LocalDeployment;
  let coordinator: MemberContext;
  let aggregator: MemberContext;
  const sites: MemberContext[] = [];
  const agents: AgentService[] = [];
  const votes: ControlBodies['vote'][] = [];
  const switched: ControlBodies['switched'][] = [];
  const heartbeats: ControlBodies['heartbeat'][] = [];
  let goodEnvelope: Uint8Array | undefined;
  let aggRound: AggregatorRound | null = null;
  /** One aggregate per round: a PREPARE's aggregate must carry its own round's (and attempt's) MAC. */
  const aggregatesOf = new Map<number, Aggregate>();

  /**
   * An aggregate of `round` on `head`: site-1's update of that round (a small, fixed step), encoded
   * with site-1's keys as the site would, and summed as an aggregator would. The same on every call.
   */
  function aggregateOf(round: number, head: Pick<Commit, 'hash' | 'height'>): Aggregate {
    const known = aggregatesOf.get(round);
    if (known !== undefined) return known;
    const aggregate = siteAggregate(sites[0]!, aggregator, {
      context: { federation: FEDERATION, round, baseCommit: head.hash, version: head.height },
      options: codec,
      params: PARAMETER_COUNT,
      examples: 1000,
      roundingSeed: { key0: 1, key1: 1 }, // the same levels every round: only the MAC's round differs
      attempt: attemptOf(round),
    });
    aggregatesOf.set(round, aggregate);
    return aggregate;
  }

  const codec = { bits: 8 as const, clip: 0.05, maxContributors: 32, crcChunkBytes: 16_384 };
  /** The test plays the coordinator: it writes the real federation log and broadcasts its entries. */
  let logWriter: FederationLogWriter;
  const opened = new Set<number>();
  const aggregates = new Map<number, AggregateInfo>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-agent-'));
    deployment = await createLocalDeployment({
      dir,
      federation: FEDERATION,
      aggregators: 1,
      sites: 2,
      overrides: {
        learning: { trainLimit: 2000, testLimit: 500 },
        // Two sites: an aggregate of fewer than the default three is refused, and the test needs them.
        round: { heartbeatMs: 200, deadlineMs: 20_000, voteTimeoutMs: 10_000, minContributors: 1 },
        history: { decisionTimeoutMs: 1500 },
        log: { level: 'warn' },
        // The test plays the coordinator and aggregator of a shared-key round (each site decrypts the
        // PREPARE's aggregate itself); threshold rounds run between real members in
        // threshold-round.test.ts and threshold-committee.test.ts.
        crypto: { keys: 'shared' },
      },
    });
    coordinator = await openMember(deployment.config, 'coordinator');
    aggregator = await openMember(deployment.config, 'agg-1');
    const s = coordinator.subjects;
    const subs = [
      coordinator.transport.subscribe(`cohort.${FEDERATION}.vote.*`, async (m) => {
        votes.push(openControl(m.data, 'vote', coordinator.keys).body);
      }),
      coordinator.transport.subscribe(`cohort.${FEDERATION}.switched.*`, async (m) => {
        switched.push(openControl(m.data, 'switched', coordinator.keys).body);
      }),
      coordinator.transport.subscribe(`cohort.${FEDERATION}.heartbeat.*`, async (m) => {
        heartbeats.push(openControl(m.data, 'heartbeat', coordinator.keys).body);
      }),
      aggregator.transport.subscribe(aggregator.subjects.updatesFor('agg-1'), async (m) => {
        const r = aggRound;
        if (r === null) throw new Error('no round open');
        const site = m.subject.split('.').at(-1)!;
        if (m.data[5] === FRAME_KIND.block) {
          const block = r.verifier.verifyBlock(m.data);
          expect(block.signer).toBe(site);
          r.blocks.set(site, [...(r.blocks.get(site) ?? []), block]);
        } else {
          const manifest = r.verifier.verifyManifest(m.data);
          expect(manifest.signer).toBe(site);
          r.updates.push(assembleUpdate(manifest, r.blocks.get(site) ?? []));
        }
      }),
    ];
    await Promise.all(subs.map((x) => x.ready()));
    expect(s.roundOpen).toBe(`cohort.${FEDERATION}.round.open`);
    const nc = coordinator.transport.connection;
    await ensureLogStream(await (await import('@nats-io/jetstream')).jetstreamManager(nc), {
      federation: FEDERATION,
      replicas: 1,
      maxBytes: 64 << 20,
    });
    logWriter = await openLogWriter(nc, {
      federation: FEDERATION,
      signer: 'coordinator',
      signing: coordinator.signing,
      start: LOG_ORIGIN,
    });
    for (const [i, id] of deployment.sites.entries()) {
      const ctx = await openMember(deployment.config, id);
      sites.push(ctx);
      agents.push(await startAgent(ctx, { evaluate: i === 0 }));
    }
  });

  afterAll(async () => {
    for (const a of agents) await a.stop();
    for (const c of [...sites, coordinator, aggregator]) await c?.close();
    await deployment?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The RoundOpen of `round` on `head`, assigning `assigned` to agg-1. */
  function roundOpen(round: number, head: Pick<Commit, 'hash' | 'height'>, assigned: readonly string[]) {
    return {
      federation: FEDERATION,
      round,
      version: head.height,
      baseCommit: head.hash,
      assignments: assigned.map((site) => ({ site, aggregator: 'agg-1', examples: 1000 })),
      ...codec,
      deadlineUnixMs: Date.now() + 20_000,
      totalExamples: 1000 * assigned.length,
      totalParams: PARAMETER_COUNT + RMS_BUCKETS,
      attempt: attemptOf(round),
    };
  }

  /** Logs round `round` as opened (once), as the coordinator does before announcing it. */
  async function logOpen(round: number, head: Pick<Commit, 'hash' | 'height'>): Promise<void> {
    if (opened.has(round)) return;
    opened.add(round);
    await logWriter.append({ roundOpen: roundOpen(round, head, deployment.sites) });
  }

  /** Logs and publishes a RoundOpen on `head` assigning every site to agg-1, and arms the test aggregator. */
  async function openRound(round: number, head: Pick<Commit, 'hash' | 'height'>): Promise<void> {
    const context = { federation: FEDERATION, round, baseCommit: head.hash, version: head.height };
    aggRound = {
      verifier: new BlockVerifier({
        context,
        ckksParamsId: aggregator.ckks.paramsId,
        encoding: codecEncoding(aggregator.ckks, codec),
        keys: aggregator.keys,
        allowedAlgorithms: deployment.config.crypto.signature.allowed,
      }),
      blocks: new Map(),
      updates: [],
    };
    await logOpen(round, head);
    await coordinator.transport.publish(
      coordinator.subjects.roundOpen,
      sealControl('round-open', roundOpen(round, head, deployment.sites), 'coordinator', coordinator.signing),
    );
  }

  /** Stores the aggregate (as the coordinator does, for catch-up) and publishes PREPARE. */
  async function prepare(
    round: number,
    head: Commit,
    aggregate: Aggregate,
    params = PARAMS,
    byReference = false,
  ): Promise<Uint8Array> {
    await logOpen(round, head);
    const digest = aggregateDigest(aggregate.ciphertexts);
    const object = encodeAggregateObject(aggregate.ciphertexts);
    const store = await lazyWriteOnceStore(coordinator.transport.connection, aggregateStore(FEDERATION), {
      replicas: 1,
    })();
    await store.put(`round-${round}`, object);
    aggregates.set(round, {
      encoding: aggregate.encoding,
      totalParams: aggregate.totalParams,
      contributors: [...aggregate.sites],
      totalWeight: aggregate.totalWeight,
      participants: deployment.sites.length,
      totalExamples: 2000,
      object: `round-${round}`,
      objectBytes: object.length,
    });
    await coordinator.transport.publish(
      coordinator.subjects.prepare,
      sealControl(
        'prepare',
        {
          federation: FEDERATION,
          round,
          version: head.height,
          baseCommit: head.hash,
          aggregateDigest: digest,
          contributors: [...aggregate.sites],
          totalWeight: aggregate.totalWeight,
          participants: deployment.sites.length,
          totalExamples: 2000,
          encoding: aggregate.encoding,
          totalParams: aggregate.totalParams,
          ciphertexts: byReference ? [] : [...aggregate.ciphertexts],
          params,
          kind: 'round',
          rollbackTarget: new Uint8Array(0),
          aggregateObject: byReference ? `round-${round}` : '',
          attempt: attemptOf(round),
        },
        'coordinator',
        coordinator.signing,
      ),
    );
    return digest;
  }

  /** Logs the decision and (unless `announce` is false) broadcasts the log entry. */
  async function decide(
    round: number,
    head: Commit,
    commit: boolean,
    vote: ControlBodies['vote'],
    digest: Uint8Array,
    announce = true,
  ): Promise<LogEntry> {
    const entry = await logWriter.append({
      decision: {
        federation: FEDERATION,
        round,
        commit,
        commitHash: commit ? vote.commitHash : new Uint8Array(0),
        modelHash: commit ? vote.modelHash : new Uint8Array(0),
        parent: head.hash,
        height: commit ? head.height + 1 : head.height,
        aggregateDigest: digest,
        voters: deployment.sites.slice(),
        reason: commit ? '' : 'a site voted NO',
        kind: commit ? 'round' : '',
        params: commit ? PARAMS : new Uint8Array(0),
        aggregate: aggregates.get(round) ?? null,
        rollbackTarget: new Uint8Array(0),
        stateHash: commit ? vote.stateHash : new Uint8Array(0),
        missing: [],
        exclusions: [],
        nextClip: codec.clip,
        attempt: attemptOf(round),
        evaluation: null,
        culprits: [],
      },
    });
    if (announce) await coordinator.transport.publish(coordinator.subjects.decision, entry.bytes);
    return entry;
  }

  it('starts at the shared genesis and heartbeats its head and shard size', async () => {
    const genesis = federationGenesis(deployment.config).commit;
    for (const a of agents) {
      expect(a.state).toBe('READY');
      expect(bytesToHex(a.head()!.hash)).toBe(bytesToHex(genesis.hash));
      expect(a.stats().examples).toBe(1000);
      expect(a.stats().keysetError).toBeNull();
    }
    await waitFor('heartbeats of both sites', () =>
      deployment.sites.every((id) => heartbeats.some((h) => h.member === id)),
    );
    const hb = heartbeats.find((h) => h.member === 'site-1')!;
    expect(hb).toMatchObject({ role: 'site', examples: 1000, federation: FEDERATION });
    expect(bytesToHex(hb.head)).toBe(bytesToHex(genesis.hash));
  });

  it('trains, sends, votes YES on one candidate and switches on COMMIT', async () => {
    const head = agents[0]!.head()!;
    await openRound(1, head);
    await waitFor('both updates at the aggregator', () => aggRound!.updates.length === 2);
    await waitFor('both agents back to READY', () => agents.every((a) => a.state === 'READY'));
    expect(agents.map((a) => a.stats().updatesSent)).toEqual([1, 1]);
    const aggregate = sumUpdates(aggregator.ckks, aggRound!.updates);
    expect(aggregate.contributors).toBe(2);
    expect(aggregate.totalWeight).toBe(2000);

    const digest = await prepare(1, head, aggregate);
    await waitFor('two votes', () => votes.filter((v) => v.round === 1).length === 2);
    const round1 = votes.filter((v) => v.round === 1);
    for (const v of round1) {
      expect(v.yes, v.reason).toBe(true);
      expect(v.meanUpdateRms).toBeGreaterThan(0);
      expect(v.stateHash).toHaveLength(32);
    }
    expect(new Set(round1.map((v) => bytesToHex(v.commitHash))).size).toBe(1);
    expect(new Set(round1.map((v) => bytesToHex(v.modelHash))).size).toBe(1);
    expect(agents.map((a) => a.state)).toEqual(['PREPARED', 'PREPARED']);
    expect(bytesToHex(agents[0]!.head()!.hash)).toBe(bytesToHex(head.hash)); // prepared, not switched

    await decide(1, head, true, round1[0]!, digest);
    // Members, not messages: the evaluating site reports twice (the switch, then its accuracy).
    await waitFor(
      'both switched',
      () => new Set(switched.filter((s) => s.round === 1).map((s) => s.member)).size === 2,
    );
    for (const a of agents) {
      expect(a.state).toBe('READY');
      const h = a.head()!;
      expect(bytesToHex(h.hash)).toBe(bytesToHex(round1[0]!.commitHash));
      expect(bytesToHex(h.modelHash)).toBe(bytesToHex(round1[0]!.modelHash));
      expect(bytesToHex(h.parent)).toBe(bytesToHex(head.hash));
      expect(h).toMatchObject({ height: 1, round: 1, kind: 'round' });
      expect(bytesToHex(h.aggregateDigest)).toBe(bytesToHex(digest));
    }
    // The evaluating agent reports again once it scored the model; the other only switches.
    await waitFor('site-1 accuracy', () => switched.some((s) => s.round === 1 && s.testAccuracy > 0));
    const bySite = new Map(switched.filter((s) => s.round === 1).map((s) => [s.member, s]));
    expect(
      switched.find((s) => s.round === 1 && s.member === 'site-1' && s.testAccuracy > 0)!.testAccuracy,
    ).toBeGreaterThan(0.5);
    expect(bySite.get('site-2')!.testAccuracy).toBe(-1);
    // Both residuals were staged when the updates were sent and made current by the commit.
    for (const a of agents) expect(a.stats()).toMatchObject({ residualsApplied: 1, residualsDropped: 0 });
    expect(bytesToHex(bySite.get('site-2')!.commitHash)).toBe(bytesToHex(round1[0]!.commitHash));
  });

  it('a site whose CKKS key cannot be loaded votes NO with the reason; on ABORT nobody switches', async () => {
    // Restart site-2 with a corrupt key envelope: it reopens its store at the committed head.
    await agents[1]!.stop();
    await sites[1]!.close();
    goodEnvelope = readFileSync(join(deployment.config.members!.keysDir, 'public', 'site-2.ckks.env'));
    writeFileSync(
      join(deployment.config.members!.keysDir, 'public', 'site-2.ckks.env'),
      new Uint8Array(64).fill(7),
    );
    sites[1] = await openMember(deployment.config, 'site-2');
    agents[1] = await startAgent(sites[1]);
    expect(agents[1].stats().keysetError).toMatch(/\S/);
    const head = agents[0]!.head()!;
    expect(bytesToHex(agents[1].head()!.hash)).toBe(bytesToHex(head.hash));

    await openRound(2, head);
    await waitFor('site-1 update at the aggregator', () => aggRound!.updates.length === 1);
    await waitFor('site-2 skipped the round', () => agents[1]!.stats().roundsSkipped === 1);
    expect(aggRound!.updates[0]!.signer).toBe('site-1');
    await waitFor('site-1 back to READY', () => agents[0]!.state === 'READY');

    const digest = await prepare(2, head, sumUpdates(aggregator.ckks, aggRound!.updates));
    await waitFor('two votes', () => votes.filter((v) => v.round === 2).length === 2);
    const byMember = new Map(votes.filter((v) => v.round === 2).map((v) => [v.member, v]));
    expect(byMember.get('site-1')!.yes).toBe(true);
    const no = byMember.get('site-2')!;
    expect(no.yes).toBe(false);
    expect(no.reason).toMatch(/^cannot decrypt: /);
    expect(agents.map((a) => a.state)).toEqual(['PREPARED', 'READY']);

    await decide(2, head, false, byMember.get('site-1')!, digest);
    await waitFor('site-1 aborted', () => agents[0]!.state === 'READY' && agents[0]!.stats().aborts === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(switched.filter((s) => s.round === 2)).toEqual([]);
    for (const a of agents) expect(bytesToHex(a.head()!.hash)).toBe(bytesToHex(head.hash));
    expect(agents[0]!.stats()).toMatchObject({ commits: 1, aborts: 1, votesYes: 2, votesNo: 0 });
    expect(agents[1]!.stats()).toMatchObject({ votesNo: 1, votesYes: 0 });
    // site-1's residual of the aborted round was dropped: the one before the round stays current.
    expect(agents[0]!.stats()).toMatchObject({ residualsApplied: 1, residualsDropped: 1 });
  });

  it('a restarted agent keeps its prepared candidate and settles it from the log', async () => {
    const restart = async (i: number) => {
      await agents[i]!.stop();
      await sites[i]!.close();
      sites[i] = await openMember(deployment.config, deployment.sites[i]!);
      agents[i] = await startAgent(sites[i]!, { evaluate: i === 0 });
    };
    // Round 3: site-1 prepares (the aggregate of round 2 is reused: PREPARE carries it inline), crashes, comes back.
    const head = agents[0]!.head()!;
    const digest = await prepare(3, head, aggregateOf(3, head));
    await waitFor('two votes', () => votes.filter((v) => v.round === 3).length === 2);
    const yes3 = votes.find((v) => v.round === 3 && v.member === 'site-1')!;
    expect(yes3.yes, yes3.reason).toBe(true);
    await restart(0);
    expect(agents[0]!.state).toBe('PREPARED');
    expect(agents[0]!.machine.history.map((t) => t.to)).toEqual(['LOADING', 'RECOVERING', 'PREPARED']);
    await decide(3, head, true, yes3, digest);
    await waitFor('site-1 switched to round 3', () => switched.some((s) => s.round === 3));
    expect(bytesToHex(agents[0]!.head()!.hash)).toBe(bytesToHex(yes3.commitHash));
    expect(agents[0]!.state).toBe('READY');
    // site-2 voted NO (no key) and did not prepare: it cannot replay without its key, so it stays behind.
    await waitFor('site-2 READY', () => agents[1]!.state === 'READY');
    expect(bytesToHex(agents[1]!.head()!.hash)).toBe(bytesToHex(head.hash));

    // Round 4: prepared, crash, and the decision is missed; RoundOpen 5 makes it read the log.
    const head3 = agents[0]!.head()!;
    const digest4 = await prepare(4, head3, aggregateOf(4, head3));
    await waitFor('site-1 vote of round 4', () => votes.some((v) => v.round === 4 && v.member === 'site-1'));
    const yes4 = votes.find((v) => v.round === 4 && v.member === 'site-1')!;
    expect(yes4.yes).toBe(true);
    await restart(0);
    expect(agents[0]!.state).toBe('PREPARED');
    await decide(4, head3, true, yes4, digest4, false);
    await openRound(5, { hash: yes4.commitHash, height: head3.height + 1 });
    await waitFor('site-1 trained on the settled head', () => aggRound!.updates.length === 1);
    expect(bytesToHex(agents[0]!.head()!.hash)).toBe(bytesToHex(yes4.commitHash));
    await waitFor('switched of round 4', () => switched.some((x) => x.round === 4 && x.member === 'site-1'));
    await waitFor('site-1 READY', () => agents[0]!.state === 'READY');
    expect(agents[0]!.machine.history.map((t) => t.to)).toContain('RECOVERING');
    const aborted5 = await decide(5, agents[0]!.head()!, false, yes4, new Uint8Array(0));
    expect(aborted5.record.decision!.commit).toBe(false);
  });

  it('a prepared agent whose decision is never announced reads it from the log after the decision timeout', async () => {
    const head = agents[0]!.head()!;
    const digest = await prepare(6, head, aggregateOf(6, head));
    await waitFor('site-1 vote of round 6', () => votes.some((v) => v.round === 6 && v.member === 'site-1'));
    const yes6 = votes.find((v) => v.round === 6 && v.member === 'site-1')!;
    expect(agents[0]!.state).toBe('PREPARED');
    await decide(6, head, true, yes6, digest, false); // logged, never broadcast
    await waitFor(
      'site-1 committed round 6 from the log',
      () => bytesToHex(agents[0]!.head()!.hash) === bytesToHex(yes6.commitHash),
    );
    expect(agents[0]!.state).toBe('READY');
  });

  it('answers a repeated PREPARE with the same vote, and a different PREPARE for the same round with NO', async () => {
    const head = agents[0]!.head()!;
    const digest = await prepare(7, head, aggregateOf(7, head));
    await waitFor('site-1 vote of round 7', () => votes.some((v) => v.round === 7 && v.member === 'site-1'));
    const first = votes.find((v) => v.round === 7 && v.member === 'site-1')!;
    expect(first.yes).toBe(true);
    await prepare(7, head, aggregateOf(7, head));
    await waitFor(
      'a second vote',
      () => votes.filter((v) => v.round === 7 && v.member === 'site-1').length === 2,
    );
    const repeat = votes.filter((v) => v.round === 7 && v.member === 'site-1')[1]!;
    expect(repeat.yes).toBe(true);
    expect(bytesToHex(repeat.commitHash)).toBe(bytesToHex(first.commitHash));
    await prepare(7, head, aggregateOf(7, head), new TextEncoder().encode('other round params'));
    await waitFor(
      'a third vote',
      () => votes.filter((v) => v.round === 7 && v.member === 'site-1').length === 3,
    );
    const other = votes.filter((v) => v.round === 7 && v.member === 'site-1')[2]!;
    expect(other.yes).toBe(false);
    expect(other.reason).toBe('a different PREPARE for round 7 than the one prepared');
    expect(agents[0]!.state).toBe('PREPARED');
    await decide(7, head, false, first, digest);
    await waitFor('site-1 aborted round 7', () => agents[0]!.state === 'READY');
    expect(bytesToHex(agents[0]!.head()!.hash)).toBe(bytesToHex(head.hash));
  });

  it('reads an aggregate sent by reference (a large model) from the store to the same candidate', async () => {
    const head = agents[0]!.head()!;
    const inline = await prepare(8, head, aggregateOf(8, head));
    await waitFor('site-1 vote of round 8', () => votes.some((v) => v.round === 8 && v.member === 'site-1'));
    const yesInline = votes.find((v) => v.round === 8 && v.member === 'site-1')!;
    await decide(8, head, false, yesInline, inline);
    await waitFor('site-1 READY', () => agents[0]!.state === 'READY');
    // The same aggregate by reference gives the same candidate (its commit differs by the round only).
    const digest = await prepare(9, head, aggregateOf(9, head), PARAMS, true);
    await waitFor('site-1 vote of round 9', () => votes.some((v) => v.round === 9 && v.member === 'site-1'));
    const yes = votes.find((v) => v.round === 9 && v.member === 'site-1')!;
    expect(yes.yes, yes.reason).toBe(true);
    expect(bytesToHex(yes.modelHash)).toBe(bytesToHex(yesInline.modelHash));
    await decide(9, head, false, yes, digest);
    await waitFor('site-1 READY again', () => agents[0]!.state === 'READY');
  });

  it('a site behind by several commits catches up by replaying the log to the same model', async () => {
    // site-2 gets its key back and restarts: it replays rounds 3, 4 and 6 from the stored aggregates.
    await agents[1]!.stop();
    await sites[1]!.close();
    writeFileSync(join(deployment.config.members!.keysDir, 'public', 'site-2.ckks.env'), goodEnvelope!);
    sites[1] = await openMember(deployment.config, 'site-2');
    agents[1] = await startAgent(sites[1]!);
    const target = agents[0]!.head()!;
    expect(bytesToHex(agents[1]!.head()!.hash)).toBe(bytesToHex(target.hash));
    expect(agents[1]!.stats().replayed).toBe(3);
    expect(agents[1]!.state).toBe('READY');
    expect(agents[1]!.machine.history.map((t) => t.to)).toEqual([
      'LOADING',
      'RECOVERING',
      'LOADING',
      'READY',
    ]);
  });

  it('trains once for a RoundOpen delivered twice: the copy is skipped, the staged residual stays the first', async () => {
    // NATS may deliver a message twice (a reconnect, a republished announcement): training again
    // would replace the staged residual with one whose update was never summed.
    const head = agents[0]!.head()!;
    await openRound(10, head);
    await waitFor('both updates of round 10', () => aggRound!.updates.length === 2);
    await waitFor('both agents READY', () => agents.every((a) => a.state === 'READY'));
    const pending = (site: string) =>
      readFileSync(join(deployment.config.paths.dataDir, site, 'pending-residual-10.f32'));
    const staged = deployment.sites.map(pending);
    const before = agents.map((a) => a.stats());
    const blocks = () => [...aggRound!.blocks.values()].reduce((n, b) => n + b.length, 0);
    const sentBlocks = blocks();
    await coordinator.transport.publish(
      coordinator.subjects.roundOpen,
      sealControl('round-open', roundOpen(10, head, deployment.sites), 'coordinator', coordinator.signing),
    );
    await waitFor(
      'the copy skipped by both agents, or trained on',
      () =>
        blocks() > sentBlocks || agents.every((a, i) => a.stats().roundsSkipped > before[i]!.roundsSkipped),
    );
    await waitFor('both agents READY again', () => agents.every((a) => a.state === 'READY'));
    expect(blocks()).toBe(sentBlocks);
    expect(agents.map((a) => a.stats().updatesSent)).toEqual(before.map((b) => b.updatesSent));
    for (const [i, site] of deployment.sites.entries()) expect(pending(site).equals(staged[i]!)).toBe(true);
  });
});

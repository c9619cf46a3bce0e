import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import type { LaneKeyset } from '../../crypto/lanes/index.ts';
import type { AggregateMacKey } from '../../crypto/mac/index.ts';
import { createStrategy, meanFromSum, type StrategyState } from '../../federation/index.ts';
import { registerCoordinatorCommand } from '../../src/cli/commands/coordinator.ts';
import { encodeAggregate } from '../../src/protocol/encode-aggregate.ts';
import {
  AggregateBuilder,
  assembleUpdate,
  BlockVerifier,
  type ControlBodies,
  type DecisionBody,
  decodeAggregate,
  encodeUpdate,
  openControl,
  RMS_BUCKETS,
  rmsLevels,
  sealControl,
} from '../../src/protocol/index.ts';
import { aggregateDigest, decodeRoundParams, federationGenesis } from '../../src/round/index.ts';
import { type CoordinatorEvent, startCoordinator } from '../../src/services/coordinator/index.ts';
import { type LogEntry, openLogReader } from '../../src/services/federation-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  loadSiteKeyset,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import { aggregateStore, readWriteOnceObject } from '../../src/services/store/index.ts';
import { bytesToHex, commitHash, modelHash, strategyStateHash } from '../../src/versions/index.ts';
import { macOf, siteMacKey } from '../helpers/site-aggregate.ts';

const F = 'ctest';
const PARAMS = 784 * 10 + 10; // logistic regression
const EXAMPLES = 50;

let dir: string;
let dep: LocalDeployment;
let coord: MemberContext;
let aggs: MemberContext[];
let sites: MemberContext[];
let keysets: Map<string, LaneKeyset>;
let macKeys: Map<string, AggregateMacKey>;
const timers: NodeJS.Timeout[] = [];
const beats = new Map<string, NodeJS.Timeout>();

/** How the test-sites vote, by round. */
const noVoter = new Map<number, string>();
/** Messages the test-members received. */
const seen = {
  opens: [] as ControlBodies['round-open'][],
  prepares: [] as ControlBodies['prepare'][],
  decisions: [] as (DecisionBody & { sequence: number })[],
};
const heads = new Map<string, { hash: Uint8Array; height: number }>();
const updates = new Map<string, Float32Array>();

/** Each test-site's own model and strategy state: genesis, then each COMMIT's candidate. */
const siteModels = new Map<string, { parameters: Float32Array; state: StrategyState | null }>();
/** The candidate w′ each test-site computed on PREPARE, by `${round}/${site}`. */
const candidates = new Map<string, { parameters: Float32Array; state: StrategyState; hash: Uint8Array }>();
/** COMMITs a test-site could not follow (its candidate is not the committed model). */
const unfollowed: string[] = [];
/** Rounds in which a test-site computes a different w′ (one parameter 1 ulp off), by round. */
const divergent = new Map<number, string>();
/** How much later than its real switch site-2 reports it (`switchedUnixMs`). */
const LATE_SWITCH_MS = 5000;

const hex = (b: Uint8Array) => bytesToHex(b);

function siteUpdate(site: string, round: number): Float32Array {
  const u = new Float32Array(PARAMS);
  const sign = site.endsWith('1') ? 1 : -1;
  for (let i = 0; i < PARAMS; i++) u[i] = sign * 0.01 * ((i % 5) / 5) + 0.001 * round;
  return u;
}

/** A test-aggregator: on RoundOpen, encodes its sites' updates (as the sites would), sums and sends the partial. */
function playAggregator(agg: MemberContext): void {
  agg.transport.subscribe(agg.subjects.roundOpen, async (msg) => {
    const open = openControl(msg.data, 'round-open', agg.keys).body;
    const mine = open.assignments.filter((a) => a.aggregator === agg.member).map((a) => a.site);
    if (mine.length === 0) return;
    const context = { federation: F, round: open.round, baseCommit: open.baseCommit, version: open.version };
    const options = {
      bits: open.bits as 8,
      clip: open.clip,
      maxContributors: open.maxContributors,
      crcChunkBytes: open.crcChunkBytes,
    };
    const verifier = new BlockVerifier({
      context,
      ckksParamsId: agg.ckks.paramsId,
      keys: agg.keys,
      allowedAlgorithms: ['falcon-512'],
    });
    const builder = new AggregateBuilder(agg.ckks);
    const siteManifests: Uint8Array[] = [];
    for (const site of mine) {
      const siteCtx = sites.find((s) => s.member === site)!;
      const update = siteUpdate(site, open.round);
      updates.set(`${open.round}/${site}`, update);
      const enc = encodeUpdate({
        update,
        residual: null,
        credentials: {
          signer: site,
          ckks: keysets.get(site)!,
          signing: siteCtx.signing,
          mac: macOf(macKeys.get(site)!, open),
        },
        context,
        options,
        exampleWeight: EXAMPLES,
        // The RMS histogram every training update carries after its parameters.
        extraLevels: rmsLevels(0.01, open.clip),
      });
      const blocks = enc.blocks.map((b) => verifier.verifyBlock(b));
      builder.add(assembleUpdate(verifier.verifyManifest(enc.manifest), blocks));
      siteManifests.push(enc.manifest); // forwarded with the partial: the coordinator checks each
    }
    const partial = encodeAggregate(builder.finish(), { signer: agg.member, signing: agg.signing }, context, {
      crcChunkBytes: open.crcChunkBytes,
      siteManifests,
    });
    const blocks = partial.blocks.map((b, i) => {
      if (tamperRound !== open.round || i > 0) return b;
      const bad = b.slice();
      bad[bad.length - 1]! ^= 0xff; // in the block's audit path: it no longer leads to the signed root
      return bad;
    });
    for (const b of blocks) {
      await agg.transport.request(agg.subjects.partial(agg.member), b).catch(() => undefined);
    }
    await agg.transport.request(agg.subjects.partial(agg.member), partial.manifest).catch(() => undefined);
  });
}

/** Rounds in which every test-aggregator corrupts the first block of its partial. */
let tamperRound = 0;

/**
 * A test-site: on PREPARE, decrypts the aggregate with its own CKKS key, applies FedAvg to its own
 * model and votes YES on its own H(w′) (NO in the rounds of `noVoter`); on COMMIT, switches to its
 * candidate when it is the committed model.
 */
function playSite(site: MemberContext): void {
  const id = site.member;
  const strategy = createStrategy({ name: 'fedavg' });
  siteModels.set(id, { parameters: federationGenesis(dep.config).parameters.slice(), state: null });
  site.transport.subscribe(site.subjects.roundOpen, async (msg) => {
    const open = openControl(msg.data, 'round-open', site.keys).body;
    if (id === 'site-1') seen.opens.push(open);
  });
  const candidateFor = (p: ControlBodies['prepare']) => {
    const decoded = decodeAggregate(
      keysets.get(id)!,
      {
        encoding: p.encoding,
        totalParams: p.totalParams,
        sites: p.contributors,
        contributors: p.contributors.length,
        totalWeight: p.totalWeight,
        ciphertexts: p.ciphertexts,
      },
      macOf(macKeys.get(id)!, p),
    );
    // The sum holds Σ n_k·Δ_k·m/N: FedAvg's mean is sum·N/(m·W).
    const mean = meanFromSum(
      decoded.sum.subarray(0, PARAMS),
      (p.participants * p.totalWeight) / p.totalExamples,
    );
    const own = siteModels.get(id)!;
    const next = strategy.apply(own.parameters, mean, own.state);
    const parameters = next.parameters.slice();
    if (divergent.get(p.round) === id) new Uint32Array(parameters.buffer, 0, 1)[0]! ^= 1;
    const candidate = { parameters, state: next.state, hash: modelHash(parameters) };
    candidates.set(`${p.round}/${id}`, candidate);
    return candidate;
  };
  site.transport.subscribe(site.subjects.prepare, async (msg) => {
    const p = openControl(msg.data, 'prepare', site.keys).body;
    if (id === 'site-1') seen.prepares.push(p);
    const no = noVoter.get(p.round) === id;
    const candidate = no ? null : candidateFor(p);
    const vote: ControlBodies['vote'] = {
      federation: F,
      round: p.round,
      member: id,
      yes: !no,
      commitHash: candidate
        ? commitHash({
            parent: p.baseCommit,
            height: p.version + 1,
            round: p.round,
            aggregateDigest: p.aggregateDigest,
            modelHash: candidate.hash,
            params: p.params,
            kind: 'round',
          })
        : new Uint8Array(0),
      modelHash: candidate ? candidate.hash : new Uint8Array(0),
      reason: no ? 'cannot decrypt (test)' : '',
      meanUpdateRms: 0.004,
      bytesSent: 1000,
      stateHash: candidate ? strategyStateHash(candidate.state) : new Uint8Array(0),
      attempt: p.attempt,
      evaluation: null,
    };
    await site.transport.request(site.subjects.vote(id), sealControl('vote', vote, id, site.signing));
  });
  site.transport.subscribe(site.subjects.decision, async (msg) => {
    const record = openControl(msg.data, 'log-record', site.keys).body;
    const d = record.decision!;
    if (id === 'site-1') seen.decisions.push({ ...d, sequence: record.sequence });
    if (!d.commit) return;
    const candidate = candidates.get(`${d.round}/${id}`);
    if (candidate === undefined || !bytesEqual(candidate.hash, d.modelHash)) {
      unfollowed.push(`${id} round ${d.round}`);
      return;
    }
    siteModels.set(id, { parameters: candidate.parameters, state: candidate.state });
    heads.set(id, { hash: d.commitHash, height: d.height });
    const sw: ControlBodies['switched'] = {
      federation: F,
      round: d.round,
      member: id,
      commitHash: d.commitHash,
      switchedUnixMs: Date.now() + (id === 'site-2' ? LATE_SWITCH_MS : 0),
      testAccuracy: 0.9,
    };
    await site.transport.publish(site.subjects.switched(id), sealControl('switched', sw, id, site.signing));
  });
}

function heartbeat(m: MemberContext, role: 'site' | 'aggregator'): void {
  const beat = () => {
    const body: ControlBodies['heartbeat'] = {
      federation: F,
      member: m.member,
      role,
      sentUnixMs: Date.now(),
      head:
        role === 'site'
          ? (heads.get(m.member)?.hash ?? federationGenesis(dep.config).commit.hash)
          : new Uint8Array(0),
      height: heads.get(m.member)?.height ?? 0,
      examples: role === 'site' ? EXAMPLES : 0,
      state: 'IDLE',
    };
    m.transport
      .publish(m.subjects.heartbeat(m.member), sealControl('heartbeat', body, m.member, m.signing))
      .catch(() => undefined);
  };
  beat();
  const timer = setInterval(beat, 100);
  timers.push(timer);
  beats.set(m.member, timer);
}

/** The log's decisions (every entry verified: signature, chain). */
async function logEntries(): Promise<(LogEntry & { body: DecisionBody })[]> {
  const log = await openLogReader(coord.transport.connection, {
    federation: F,
    coordinator: coord.member,
    keys: coord.keys,
  });
  const out: (LogEntry & { body: DecisionBody })[] = [];
  for await (const e of log.entries()) if (e.record.decision) out.push({ ...e, body: e.record.decision });
  return out;
}

/** Every entry's record kind, in log order. */
async function allRecords(): Promise<LogEntry['record'][]> {
  const log = await openLogReader(coord.transport.connection, {
    federation: F,
    coordinator: coord.member,
    keys: coord.keys,
  });
  const out: LogEntry['record'][] = [];
  for await (const e of log.entries()) out.push(e.record);
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-coordinator-'));
  dep = await createLocalDeployment({
    dir,
    federation: F,
    aggregators: 2,
    sites: 2,
    overrides: {
      // Two sites, and rounds where one sits out: small aggregates are allowed here (default minimum 3).
      round: {
        count: 2,
        deadlineMs: 8000,
        voteTimeoutMs: 8000,
        heartbeatMs: 100,
        missedHeartbeats: 20,
        minContributors: 1,
      },
      learning: { model: 'logreg', trainLimit: 200 },
      log: { level: 'warn' },
      // The test plays the sites and aggregators of a shared-key round (it decrypts with a site's
      // key); threshold rounds run between real members in threshold-round.test.ts.
      crypto: { keys: 'shared' },
    },
  });
  coord = await openMember(dep.config, 'coordinator');
  aggs = await Promise.all(dep.aggregators.map((a) => openMember(dep.config, a)));
  sites = await Promise.all(dep.sites.map((s) => openMember(dep.config, s)));
  keysets = new Map(sites.map((s) => [s.member, loadSiteKeyset(s.ckks, s.keysDir, s.member, F)]));
  macKeys = new Map(sites.map((s) => [s.member, siteMacKey(s)]));
  for (const a of aggs) playAggregator(a);
  for (const s of sites) playSite(s);
  for (const m of [...aggs, ...sites]) await m.transport.flush();
  for (const a of aggs) heartbeat(a, 'aggregator');
  for (const s of sites) heartbeat(s, 'site');
});

afterAll(async () => {
  for (const t of timers) clearInterval(t);
  for (const k of keysets?.values() ?? []) k.delete();
  for (const k of macKeys?.values() ?? []) k.delete();
  for (const m of [...(aggs ?? []), ...(sites ?? []), ...(coord ? [coord] : [])]) await m.close();
  await dep?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('coordinator', () => {
  it('commits a round all sites vote YES on, and aborts one a site votes NO on', async () => {
    noVoter.set(2, 'site-2');
    const events: CoordinatorEvent[] = [];
    const handle = startCoordinator(coord, { rounds: 2, onEvent: (e) => events.push(e), switchWaitMs: 3000 });
    const summary = await handle.done;

    // Round 1: RoundOpen from genesis with every site assigned.
    const genesis = federationGenesis(dep.config).commit;
    const open1 = seen.opens[0]!;
    expect(open1.round).toBe(1);
    expect(hex(open1.baseCommit)).toBe(hex(genesis.hash));
    expect(open1.version).toBe(0);
    expect(open1.assignments.map((a) => a.site).sort()).toEqual(['site-1', 'site-2']);
    for (const a of open1.assignments) expect(dep.aggregators).toContain(a.aggregator);
    expect(open1.totalExamples).toBe(2 * EXAMPLES);
    expect(open1.clip).toBe(Math.fround(dep.config.codec.clip));

    // Prepare: the sum of both updates, digest and params as documented.
    const prep1 = seen.prepares[0]!;
    expect(prep1.contributors.map((c) => c.site).sort()).toEqual(['site-1', 'site-2']);
    expect(prep1.totalWeight).toBe(2 * EXAMPLES);
    expect(prep1.participants).toBe(2);
    expect(prep1.totalParams).toBe(PARAMS + RMS_BUCKETS);
    expect(hex(prep1.aggregateDigest)).toBe(hex(aggregateDigest(prep1.ciphertexts)));
    expect(decodeRoundParams(prep1.params)).toMatchObject({ round: 1, bits: 8, strategy: 'fedavg' });
    // Read as a site reads it (single messages of the aggregates stream: no consumer).
    const stored = await readWriteOnceObject(coord.transport.connection, aggregateStore(F), 'round-1', {
      maxBytes: 64 << 20,
      timeoutMs: 3000,
    });
    expect(hex(sha256(stored!))).toBe(hex(prep1.aggregateDigest));
    const decoded = decodeAggregate(
      keysets.get('site-1')!,
      {
        encoding: prep1.encoding,
        totalParams: prep1.totalParams,
        sites: prep1.contributors,
        contributors: prep1.contributors.length,
        totalWeight: prep1.totalWeight,
        ciphertexts: prep1.ciphertexts,
      },
      macOf(macKeys.get('site-1')!, prep1),
    );
    const u1 = updates.get('1/site-1')!;
    const u2 = updates.get('1/site-2')!;
    for (const i of [0, 1, 2, 3, 4, 777, PARAMS - 1]) {
      expect(Math.abs(decoded.sum[i]! - (u1[i]! + u2[i]!))).toBeLessThan(0.002);
    }

    // Decisions: COMMIT then ABORT, logged before they were published.
    expect(summary.rounds.map((r) => [r.round, r.commit])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(summary.rounds[1]!.reason).toContain('site-2');
    expect(summary.rounds[1]!.noVoters).toEqual(['site-2']);
    const entries = await logEntries();
    expect(entries.map((e) => [e.body.round, e.body.commit])).toEqual([
      [1, true],
      [2, false],
    ]);
    // Each site computed w′ itself, from its own decryption: the same bytes, a new model.
    const w1 = candidates.get('1/site-1')!;
    expect(hex(candidates.get('1/site-2')!.hash)).toBe(hex(w1.hash));
    expect(hex(w1.hash)).not.toBe(hex(modelHash(federationGenesis(dep.config).parameters)));
    expect(hex(entries[0]!.body.modelHash)).toBe(hex(w1.hash));
    const commit1 = commitHash({
      parent: genesis.hash,
      height: 1,
      round: 1,
      aggregateDigest: prep1.aggregateDigest,
      modelHash: w1.hash,
      params: prep1.params,
      kind: 'round',
    });
    expect(hex(entries[0]!.body.commitHash)).toBe(hex(commit1));
    expect(entries[0]!.body.height).toBe(1);
    expect(entries[0]!.body.voters).toEqual(['site-1', 'site-2']);
    expect(entries[1]!.body.reason).toContain('NO from site-2');
    // Each round is opened in the log (entry 1) before it is decided, with its accepted partials
    // and counted votes logged in between (docs/log-format.md), and the decision is published as logged.
    expect(seen.decisions.map((d) => [d.round, d.commit, d.sequence])).toEqual(
      entries.map((e) => [e.body.round, e.body.commit, e.sequence]),
    );
    const all = await allRecords();
    // The coordinator's start record claims the log's tail first (a paused predecessor's late
    // append is refused), then round 1 opens.
    expect(all[0]!.record).toBe('adminAction');
    const round1 = all.slice(1, entries[0]!.sequence).map((r) => r.record);
    expect(round1[0]).toBe('roundOpen');
    expect(round1.filter((k) => k === 'partial').length).toBeGreaterThanOrEqual(1);
    // Both votes in one entry (a batch holds as many as fit under the entry cap), voters order.
    expect(round1.filter((k) => k === 'vote' || k === 'votes')).toEqual(['votes']);
    const batch = all.slice(0, entries[0]!.sequence).find((r) => r.record === 'votes')!.votes!;
    expect([batch.round, batch.votes.map((v) => v.member)]).toEqual([1, ['site-1', 'site-2']]);
    expect(round1[round1.length - 1]).toBe('decision');
    expect(hex(entries[0]!.body.stateHash)).toBe(hex(strategyStateHash(w1.state)));
    expect(entries[1]!.body.exclusions).toEqual([
      { site: 'site-2', strikes: 1, sinceRound: 2, atHeight: 1, excluded: true },
    ]);
    // Round 2 opened on the round-1 commit, with the clip from the votes' RMS.
    const open2 = seen.opens[1]!;
    expect(hex(open2.baseCommit)).toBe(hex(commit1));
    expect(open2.version).toBe(1);
    expect(open2.clip).toBe(Math.fround(dep.config.round.clipMultiplier * 0.004));

    expect(summary.committed).toBe(1);
    expect(summary.aborted).toBe(1);
    expect(summary.head).toBe(bytesToHex(commit1));
    // Sync latency: the summary's percentiles are of the latencies measured per switch (site-2
    // reports its switch LATE_SWITCH_MS after it got the decision, so its latency is at least that).
    const latencies = events
      .filter((e) => e.type === 'switched' && e.round === 1)
      .map((e) => (e as Extract<CoordinatorEvent, { type: 'switched' }>).latencyMs);
    expect(latencies).toHaveLength(2);
    expect(Math.max(...latencies)).toBeGreaterThanOrEqual(LATE_SWITCH_MS);
    expect(summary.switchLatency).toMatchObject({
      count: 2,
      p50Ms: Math.min(...latencies),
      p99Ms: Math.max(...latencies),
    });
    expect(summary.testAccuracy).toBeCloseTo(0.9);
    expect(events.some((e) => e.type === 'partial')).toBe(true);
    expect(handle.stats().phase).toBe('done');
  });

  it('continues from the log after a restart and never decides a logged round again', async () => {
    noVoter.clear();
    const handle = startCoordinator(coord, { rounds: 3, switchWaitMs: 3000 });
    const summary = await handle.done;
    expect(summary.rounds.map((r) => [r.round, r.commit])).toEqual([[3, true]]);
    const entries = await logEntries();
    expect(entries.map((e) => e.body.round)).toEqual([1, 2, 3]);
    const open3 = seen.opens.at(-1)!;
    expect(open3.round).toBe(3);
    expect(hex(open3.baseCommit)).toBe(hex(entries[0]!.body.commitHash));
    expect(hex(entries[2]!.body.parent)).toBe(hex(entries[0]!.body.commitHash));
    expect(entries[2]!.body.height).toBe(2);

    // The restart kept what the log recorded with round 2's decision: site-2, which voted NO, sat
    // round 3 out (it is readmitted only after a later commit), and the clip adapted after round 1.
    expect(open3.assignments.map((a) => a.site)).toEqual(['site-1']);
    expect(entries[2]!.body.voters).toEqual(['site-1']);
    expect(open3.clip).toBe(Math.fround(dep.config.round.clipMultiplier * 0.004));
    // site-2 sat round 3 out but followed its COMMIT: both sites hold the committed model.
    for (const s of ['site-1', 'site-2']) {
      expect(hex(modelHash(siteModels.get(s)!.parameters))).toBe(hex(entries[2]!.body.modelHash));
    }

    // Nothing left to run: the log already holds round 3. The restarted coordinator announces the
    // last decision again, and accepts the sites' `switched` for it (its switch record came from
    // the log), so nothing is refused.
    const events: CoordinatorEvent[] = [];
    const again = await startCoordinator(coord, {
      rounds: 3,
      onEvent: (e) => events.push(e),
      switchWaitMs: 3000,
    }).done;
    expect(again.rounds).toEqual([]);
    expect(again.height).toBe(2);
    expect(events.filter((e) => e.type === 'recovered')).toEqual([
      { type: 'recovered', action: 'reannounced', round: 3 },
    ]);
    expect(events.some((e) => e.type === 'switched' && e.member === 'site-1' && e.round === 3)).toBe(true);
    expect(events.filter((e) => e.type === 'rejected')).toEqual([]);
  });

  it('a refused partial does not hold the round until the deadline', async () => {
    tamperRound = 4;
    const events: { at: number; e: CoordinatorEvent }[] = [];
    const summary = await startCoordinator(coord, {
      rounds: 4,
      onEvent: (e) => events.push({ at: Date.now(), e }),
      switchWaitMs: 1000,
    }).done;
    tamperRound = 0;
    expect(summary.rounds.map((r) => [r.round, r.commit, r.reason])).toEqual([
      [4, false, 'no contributions'],
    ]);
    const open = events.find((x) => x.e.type === 'round-open')!;
    const decided = events.find((x) => x.e.type === 'decision')!;
    const deadline = (open.e as Extract<CoordinatorEvent, { type: 'round-open' }>).deadlineUnixMs;
    expect(decided.at).toBeLessThan(deadline);
    const refused = events
      .filter((x) => x.e.type === 'rejected')
      .map((x) => x.e as { from: string; reason: string });
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.reason).toBe('BLOCK_BAD_SIGNATURE');
  });

  it('re-assigns the sites of a silent aggregator (through the CLI command)', async () => {
    clearInterval(beats.get('agg-2')!);
    const window = dep.config.round.missedHeartbeats * dep.config.round.heartbeatMs;
    await new Promise((r) => setTimeout(r, window + 300));
    let out = '';
    const program = new Command('cohort').exitOverride();
    registerCoordinatorCommand(program, {
      stdout: { write: () => true },
      stderr: { write: (t: string) => (out += t) },
      env: {},
    });
    await program.parseAsync(['coordinator', '--config', dep.configPath, '--rounds', '5'], { from: 'user' });
    const open5 = seen.opens.at(-1)!;
    expect(open5.round).toBe(5);
    expect(open5.assignments.map((a) => a.aggregator)).toEqual(['agg-1', 'agg-1']);
    expect(out).toMatch(/round 5: 2\/2 contributors, COMMIT [0-9a-f]{12} \(height 3\)/);
    expect(out).toMatch(/done: 1 rounds, 1 committed, 0 aborted/);
  });

  it('a site that computes a different model makes the round abort, and nobody switches', async () => {
    divergent.set(6, 'site-2');
    const headsBefore = [...heads].map(([id, h]) => [id, hex(h.hash), h.height]);
    const summary = await startCoordinator(coord, { rounds: 6, switchWaitMs: 1000 }).done;
    expect(summary.rounds.map((r) => [r.round, r.commit])).toEqual([[6, false]]);
    // The model hash is in the commit hash: the commits the two YES votes name differ first.
    expect(summary.rounds[0]!.reason).toBe('votes name different commit hashes');
    const votes = (await allRecords())
      .filter((r) => r.votes?.round === 6)
      .flatMap((r) => r.votes!.votes.map((v) => openControl(v.envelope, 'vote', coord.keys).body))
      .sort((a, b) => (a.member < b.member ? -1 : 1));
    expect(votes.map((v) => [v.member, v.yes])).toEqual([
      ['site-1', true],
      ['site-2', true],
    ]);
    for (const v of votes) expect(hex(v.modelHash)).toBe(hex(candidates.get(`6/${v.member}`)!.hash));
    expect(hex(votes[1]!.modelHash)).not.toBe(hex(votes[0]!.modelHash));
    const last = (await logEntries()).at(-1)!;
    expect([last.body.round, last.body.commit, hex(last.body.commitHash)]).toEqual([6, false, '']);
    expect([...heads].map(([id, h]) => [id, hex(h.hash), h.height])).toEqual(headsBefore);
    // Every COMMIT of this file was followed by every site from its own candidate.
    expect(unfollowed).toEqual([]);
  });
});

// A site that trains slowly is no longer a straggler that holds rounds up: its training is cut
// at the round's deadline (what it learned is sent), a PREPARE that arrives while it trains stops
// the training so it votes at once, and it heartbeats while it trains.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assembleUpdate,
  BlockVerifier,
  type ControlBodies,
  codecEncoding,
  FRAME_KIND,
  openControl,
  RMS_BUCKETS,
  sealControl,
  type VerifiedBlock,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { aggregateDigest } from '../../src/round/index.ts';
import { type AgentService, startAgent } from '../../src/services/agent/index.ts';
import {
  ensureLogStream,
  type FederationLogWriter,
  LOG_ORIGIN,
  openLogWriter,
} from '../../src/services/federation-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import type { Commit } from '../../src/versions/index.ts';
import { waitFor } from '../helpers/federation.ts';
import { emptyDecision } from '../helpers/log-records.ts';
import { siteAggregate } from '../helpers/site-aggregate.ts';

const F = 'slowsite';
const codec = { bits: 8 as const, clip: 0.05, maxContributors: 32, crcChunkBytes: 16_384 };

describe('a slow site (many local epochs)', () => {
  let dir: string;
  let dep: LocalDeployment;
  let coordinator: MemberContext;
  let aggregator: MemberContext;
  let site: MemberContext;
  let agent: AgentService;
  /** The test plays the coordinator: RoundOpens go to the real log before they are announced. */
  let logWriter: FederationLogWriter;
  let lastOpened: number | null = null;
  const votes: ControlBodies['vote'][] = [];
  const heartbeats: { at: number; state: string }[] = [];
  let updates: VerifiedUpdate[] = [];
  let verifier: BlockVerifier | null = null;
  const blocks: VerifiedBlock[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-slow-'));
    dep = await createLocalDeployment({
      dir,
      federation: F,
      aggregators: 1,
      sites: 1,
      overrides: {
        // 400 epochs of 2000 rows: far longer than any round below.
        learning: { model: 'logreg', trainLimit: 2000, epochs: 400 },
        // One site: an aggregate of one is refused by default (it is that site's update).
        round: { heartbeatMs: 100, minContributors: 1 },
        log: { level: 'warn' },
        // The test plays the coordinator of a shared-key round (the site decrypts the PREPARE's
        // aggregate itself); threshold rounds run between real members in threshold-round.test.ts.
        crypto: { keys: 'shared' },
      },
    });
    coordinator = await openMember(dep.config, 'coordinator');
    aggregator = await openMember(dep.config, 'agg-1');
    const subs = [
      coordinator.transport.subscribe(`cohort.${F}.vote.*`, async (m) => {
        votes.push(openControl(m.data, 'vote', coordinator.keys).body);
      }),
      coordinator.transport.subscribe(`cohort.${F}.heartbeat.*`, async (m) => {
        heartbeats.push({
          at: Date.now(),
          state: openControl(m.data, 'heartbeat', coordinator.keys).body.state,
        });
      }),
      aggregator.transport.subscribe(aggregator.subjects.updatesFor('agg-1'), async (m) => {
        if (m.data[5] === FRAME_KIND.block) blocks.push(verifier!.verifyBlock(m.data));
        else updates.push(assembleUpdate(verifier!.verifyManifest(m.data), blocks.splice(0)));
      }),
    ];
    await Promise.all(subs.map((s) => s.ready()));
    const nc = coordinator.transport.connection;
    await ensureLogStream(await (await import('@nats-io/jetstream')).jetstreamManager(nc), {
      federation: F,
      replicas: 1,
      maxBytes: 64 << 20,
    });
    logWriter = await openLogWriter(nc, {
      federation: F,
      signer: 'coordinator',
      signing: coordinator.signing,
      start: LOG_ORIGIN,
    });
    site = await openMember(dep.config, 'site-1');
    agent = await startAgent(site);
  });

  afterAll(async () => {
    await agent?.stop();
    for (const m of [site, aggregator, coordinator]) await m?.close();
    await dep?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function open(round: number, head: Commit, deadlineUnixMs: number): Promise<void> {
    verifier = new BlockVerifier({
      context: { federation: F, round, baseCommit: head.hash, version: head.height },
      ckksParamsId: aggregator.ckks.paramsId,
      encoding: codecEncoding(aggregator.ckks, codec),
      keys: aggregator.keys,
      allowedAlgorithms: dep.config.crypto.signature.allowed,
    });
    updates = [];
    const body: ControlBodies['round-open'] = {
      federation: F,
      round,
      version: head.height,
      baseCommit: head.hash,
      assignments: [{ site: 'site-1', aggregator: 'agg-1', examples: 2000 }],
      ...codec,
      deadlineUnixMs,
      totalExamples: 2000,
      totalParams: 7850 + RMS_BUCKETS, // the parameters, then the RMS histogram
      attempt: new Uint8Array(16).fill(round),
    };
    if (lastOpened !== null) {
      // The log allows one open round: the previous one is aborted first, as the coordinator would.
      const abort = { ...emptyDecision(F, lastOpened, head), reason: 'test: next round' };
      await logWriter.append({ decision: { ...abort, attempt: new Uint8Array(16).fill(lastOpened) } });
    }
    lastOpened = round;
    await logWriter.append({ roundOpen: body });
    await coordinator.transport.publish(
      coordinator.subjects.roundOpen,
      sealControl('round-open', body, 'coordinator', coordinator.signing),
    );
  }

  it('cuts training at the deadline and sends what it learned before it; heartbeats meanwhile', async () => {
    const head = agent.head()!;
    await open(1, head, Date.now() + 3000);
    // The agent counts the update once the aggregator's receipt is back, just after it arrived here.
    await waitFor(
      'the cut update at the aggregator, and its receipt at the agent',
      () => updates.length === 1 && agent.stats().updatesSent === 1,
      20_000,
    );
    expect(agent.stats()).toMatchObject({ roundsTrained: 1, trainingCut: 1, updatesSent: 1 });
    expect(heartbeats.filter((h) => h.state === 'TRAINING').length).toBeGreaterThan(3);
  });

  it('stops training when PREPARE arrives, and votes at once', async () => {
    const head = agent.head()!;
    // An aggregate of round 2 (its MAC bound to round 2's opening): site-1's round-1 step, re-encoded.
    const previous = siteAggregate(site, aggregator, {
      context: { federation: F, round: 2, baseCommit: head.hash, version: head.height },
      options: codec,
      params: 7850,
      examples: 2000,
      attempt: new Uint8Array(16).fill(2),
    });
    await open(2, head, Date.now() + 120_000);
    await waitFor('training', () => agent.state === 'TRAINING');
    const prepare: ControlBodies['prepare'] = {
      federation: F,
      round: 2,
      version: head.height,
      baseCommit: head.hash,
      aggregateDigest: aggregateDigest(previous.ciphertexts),
      contributors: [...previous.sites],
      totalWeight: previous.totalWeight,
      participants: 1,
      totalExamples: 2000,
      encoding: previous.encoding,
      totalParams: previous.totalParams,
      ciphertexts: [...previous.ciphertexts],
      params: new TextEncoder().encode('params'),
      kind: 'round',
      rollbackTarget: new Uint8Array(0),
      aggregateObject: '',
      attempt: new Uint8Array(16).fill(2),
    };
    await coordinator.transport.publish(
      coordinator.subjects.prepare,
      sealControl('prepare', prepare, 'coordinator', coordinator.signing),
    );
    // 400 epochs would take minutes: the vote comes well within the test's timeout only because
    // the PREPARE stopped the training.
    await waitFor('the vote of round 2', () => votes.some((v) => v.round === 2), 20_000);
    const vote = votes.find((v) => v.round === 2)!;
    expect(vote.yes, vote.reason).toBe(true);
    expect(agent.state).toBe('PREPARED');
    expect(agent.stats().updatesSent).toBe(1); // the interrupted round sent nothing
  });
});

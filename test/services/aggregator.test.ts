import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LaneKeyset } from '../../crypto/lanes/index.ts';
import type { AggregateMacKey } from '../../crypto/mac/index.ts';
import { loadSigningKeyPair, type SigningKeyPair } from '../../crypto/signature/index.ts';
import {
  type Aggregate,
  type Assignment,
  assembleUpdate,
  BlockVerifier,
  type CodecOptions,
  decodeAggregate,
  decodeBlockBody,
  decodeManifestBody,
  type EncodedUpdate,
  encodeUpdate,
  FRAME_KIND,
  frame,
  openControl,
  type RoundContext,
  sealControl,
  unframe,
  type VerifiedBlock,
} from '../../src/protocol/index.ts';
import { maxContributionFrameBytes } from '../../src/round/index.ts';
import { type AggregatorService, startAggregator } from '../../src/services/aggregator/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  loadSiteKeyset,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import { ensureContributionStream, readStoredContribution } from '../../src/services/store/index.ts';
import { TransportError } from '../../src/transport/index.ts';
import { macOf, siteMacKey } from '../helpers/site-aggregate.ts';

const CODEC: CodecOptions = { bits: 8, clip: 0.05, maxContributors: 32, crcChunkBytes: 16_384 };
/** 2 blocks at 8 bits / 32 contributors (12,288 parameters per block under the default CKKS). */
const PARAMS = 15_000;
const ACK = Uint8Array.of(1);

let dir: string;
let dep: LocalDeployment;
let coordinator: MemberContext;
let coordinatorKey: SigningKeyPair;
let agg: MemberContext;
let service: AggregatorService;
const sites: MemberContext[] = [];
const keysets: LaneKeyset[] = [];
const macKeys: AggregateMacKey[] = [];
/** The MAC of `round`'s one opening in these tests (its attempt: 16 bytes of the round number). */
const macIn = (key: AggregateMacKey, round: number) =>
  macOf(key, { federation: dep.config.federation.id, round, attempt: new Uint8Array(16).fill(round) });
/** Frames received on partial(agg-1), in arrival order. */
const partials: Uint8Array[] = [];
const heartbeats: { role: string; state: string }[] = [];

function context(round: number): RoundContext {
  return {
    federation: dep.config.federation.id,
    round,
    version: round - 1,
    baseCommit: createHash('sha256').update(`base-${round}`).digest(),
  };
}

/** `site` assigned to `aggregator` with the weight its updates declare (100 · (index + 1)). */
function assigned(site: string, aggregator: string): Assignment {
  return { site, aggregator, examples: 100 * (dep.sites.indexOf(site) + 1) };
}

async function openRound(round: number, assignments: Assignment[], deadlineMs: number): Promise<void> {
  const c = context(round);
  const body = {
    federation: c.federation,
    round,
    version: c.version,
    baseCommit: c.baseCommit,
    assignments,
    bits: CODEC.bits,
    clip: Math.fround(CODEC.clip),
    maxContributors: CODEC.maxContributors,
    crcChunkBytes: CODEC.crcChunkBytes,
    deadlineUnixMs: Date.now() + deadlineMs,
    totalExamples: 600,
    totalParams: PARAMS,
    attempt: new Uint8Array(16).fill(round),
  };
  await coordinator.transport.publish(
    coordinator.subjects.roundOpen,
    sealControl('round-open', body, dep.coordinator, coordinatorKey),
  );
  await until(() => service.stats().round === round, 5_000);
}

function encode(siteIndex: number, round: number): EncodedUpdate {
  const site = sites[siteIndex]!;
  const update = new Float32Array(PARAMS);
  for (let i = 0; i < PARAMS; i++) update[i] = Math.sin(i * 0.37 + siteIndex + round) * 0.04;
  return encodeUpdate({
    update,
    residual: null,
    credentials: {
      signer: site.member,
      ckks: keysets[siteIndex]!,
      signing: site.signing,
      mac: macIn(macKeys[siteIndex]!, round),
    },
    context: context(round),
    options: CODEC,
    exampleWeight: 100 * (siteIndex + 1),
  });
}

async function send(siteIndex: number, frame: Uint8Array, aggregator = 'agg-1'): Promise<Uint8Array> {
  const site = sites[siteIndex]!;
  return site.transport.request(site.subjects.update(aggregator, site.member), frame);
}

/**
 * Sends a whole update: each block is acknowledged, and the manifest, which completes it, is
 * answered with the aggregator's signed receipt of it.
 */
async function sendAll(siteIndex: number, u: EncodedUpdate, aggregator = 'agg-1'): Promise<void> {
  for (const frame of u.blocks) expect([...(await send(siteIndex, frame, aggregator))]).toEqual([...ACK]);
  const reply = await send(siteIndex, u.manifest, aggregator);
  const receipt = openControl(reply, 'receipt', coordinator.keys, { signer: aggregator }).body;
  expect(receipt).toMatchObject({
    site: sites[siteIndex]!.member,
    aggregator,
    federation: dep.config.federation.id,
  });
  expect(receipt.updateDigest).toEqual(u.digest);
}

async function remoteFailure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof TransportError) return err.code;
    throw err;
  }
  return 'accepted';
}

/** The remote refusal's message (`handler on … failed: <CODE>: <message>`), or 'accepted'. */
async function remoteMessage(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof TransportError) return err.message;
    throw err;
  }
  return 'accepted';
}

async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The partial of `round` once its manifest has arrived: verified, assembled, decoded. */
async function partialOf(round: number, timeoutMs: number) {
  const ofRound = () =>
    partials.filter(
      (f) =>
        (f[5] === FRAME_KIND.block
          ? decodeBlockBody(unframe(f, FRAME_KIND.block))
          : decodeManifestBody(unframe(f, FRAME_KIND.manifest))
        ).round === round,
    );
  await until(() => ofRound().some((f) => f[5] === FRAME_KIND.manifest), timeoutMs);
  const frames = ofRound();
  const verifier = new BlockVerifier({
    context: context(round),
    ckksParamsId: coordinator.ckks.paramsId,
    keys: coordinator.keys,
    allowedAlgorithms: dep.config.crypto.signature.allowed,
  });
  const blocks: VerifiedBlock[] = frames
    .filter((f) => f[5] === FRAME_KIND.block)
    .map((f) => verifier.verifyBlock(f));
  const manifest = verifier.verifyManifest(frames.find((f) => f[5] === FRAME_KIND.manifest)!);
  const update = assembleUpdate(manifest, blocks);
  const aggregate: Aggregate = {
    encoding: update.encoding,
    totalParams: update.totalParams,
    sites: update.sites,
    contributors: update.contributors,
    totalWeight: update.exampleWeight,
    ciphertexts: update.ciphertexts,
  };
  return {
    manifest,
    decoded: decodeAggregate(keysets[0]!, aggregate, macIn(macKeys[0]!, round)),
  };
}

function expectSumOf(laneSums: Float64Array, updates: EncodedUpdate[]): void {
  expect(laneSums.length).toBe(PARAMS);
  let mismatches = 0;
  for (let i = 0; i < PARAMS; i++) {
    let sum = 0;
    for (const u of updates) sum += u.levels[i]!;
    if (laneSums[i] !== sum) mismatches++;
  }
  expect(mismatches).toBe(0);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-aggregator-'));
  dep = await createLocalDeployment({
    dir,
    aggregators: 2,
    sites: 3,
    overrides: {
      log: { level: 'error' },
      round: { heartbeatMs: 200 },
      nats: { timeoutMs: 2_000, maxRetry: 1 },
      // The test plays the sites and coordinator of a shared-key round (it encrypts and decrypts
      // with a site's key); threshold rounds run between real members in threshold-round.test.ts.
      crypto: { keys: 'shared' },
    },
  });
  const keysDir = dep.config.members!.keysDir;
  coordinator = await openMember(dep.config, dep.coordinator);
  // The coordinator creates the stream where aggregators keep the updates they sum (for the audit).
  await ensureContributionStream(
    await jetstreamManager(coordinator.transport.connection),
    dep.config.federation.id,
    {
      replicas: 1,
      retentionMs: 3_600_000,
      maxFrameBytes: maxContributionFrameBytes(coordinator.ckks.maxCiphertextBytes),
    },
  );
  coordinatorKey = loadSigningKeyPair(join(keysDir, dep.coordinator, `${dep.coordinator}.key`));
  for (const id of dep.sites) {
    const site = await openMember(dep.config, id);
    sites.push(site);
    keysets.push(loadSiteKeyset(site.ckks, keysDir, id, dep.config.federation.id));
    macKeys.push(siteMacKey(site));
  }
  const partialSub = coordinator.transport.subscribe(coordinator.subjects.partial('agg-1'), async (msg) => {
    partials.push(msg.data);
    return ACK;
  });
  const heartbeatSub = coordinator.transport.subscribe(
    coordinator.subjects.heartbeat('agg-1'),
    async (msg) => {
      const hb = openControl(msg.data, 'heartbeat', coordinator.keys);
      if (hb.signer === 'agg-1') heartbeats.push({ role: hb.body.role, state: hb.body.state });
    },
  );
  await Promise.all([partialSub.ready(), heartbeatSub.ready()]);
  agg = await openMember(dep.config, 'agg-1');
  service = await startAggregator(agg);
}, 60_000);

afterAll(async () => {
  await service?.stop();
  for (const c of [agg, coordinator, ...sites]) await c?.close();
  for (const k of keysets) k.delete();
  for (const k of macKeys) k.delete();
  await dep?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('aggregator service over NATS', () => {
  const round1: EncodedUpdate[] = [];

  it('sums the updates of its three sites into a signed partial that decrypts to the exact sum', async () => {
    for (let i = 0; i < 3; i++) round1.push(encode(i, 1));
    const all = dep.sites.map((site) => assigned(site, 'agg-1'));
    await openRound(1, all, 15_000);

    // A block whose ciphertext was altered in transit: refused, and the sender hears so.
    const tampered = round1[0]!.blocks[0]!.slice();
    tampered[Math.floor(tampered.length / 2)]! ^= 0x01;
    expect(await remoteFailure(send(0, tampered))).toBe('TRANSPORT_REMOTE');
    expect(service.stats().rejections).toEqual({ CRC_MISMATCH: 1 });

    await Promise.all([0, 1, 2].map((i) => sendAll(i, round1[i]!)));
    const { manifest, decoded } = await partialOf(1, 10_000);
    expect(manifest.signer).toBe('agg-1');
    expect(manifest.contributors).toBe(3);
    const listed = [...manifest.contributorList].sort((a, b) => a.site.localeCompare(b.site));
    expect(listed.map((c) => c.site)).toEqual(['site-1', 'site-2', 'site-3']);
    listed.forEach((c, i) => {
      expect(Buffer.from(c.digest).equals(Buffer.from(round1[i]!.digest))).toBe(true);
      expect(c.weight).toBe(100 * (i + 1));
    });
    expect(decoded.contributors).toBe(3);
    expect(decoded.totalWeight).toBe(600);
    expectSumOf(decoded.laneSums, round1);

    // The site is in the sum: sending its manifest again with a new message id is a duplicate.
    expect(await remoteFailure(send(1, round1[1]!.manifest))).toBe('TRANSPORT_REMOTE');
    await until(() => service.stats().partialsSent === 1, 3_000);
    const s = service.stats();
    expect(s.updatesAdded).toBe(3);
    expect(s.partialsSent).toBe(1);
    expect(s.lastPartial).toMatchObject({ round: 1, contributors: 3, sent: true });
    expect(s.rejections['DUPLICATE']).toBe(1);
    // Each summed update is kept for the audit, its manifest and blocks exactly as the site sent them.
    expect(s.contributionsStored).toBe(3);
    for (const [i, site] of ['site-1', 'site-2', 'site-3'].entries()) {
      const key = { aggregator: 'agg-1', round: 1, attempt: new Uint8Array(16).fill(1), site };
      const read = await readStoredContribution(
        coordinator.transport.connection,
        dep.config.federation.id,
        key,
        {
          maxFrames: 64,
          maxBytes: 64 << 20,
          timeoutMs: 3000,
        },
      );
      if (read.status !== 'found') throw new Error(`contribution of ${site}: ${read.status}`);
      const [manifest, ...blocks] = read.frames;
      expect(Buffer.from(manifest!).equals(Buffer.from(round1[i]!.manifest))).toBe(true);
      expect(blocks.map((b) => Buffer.from(b).toString('hex'))).toEqual(
        round1[i]!.blocks.map((b) => Buffer.from(b).toString('hex')),
      );
    }
  });

  it('cuts a straggler at the deadline and refuses a block of an earlier round', async () => {
    const all = dep.sites.map((site) => assigned(site, 'agg-1'));
    const round2 = [encode(0, 2), encode(1, 2)];
    await openRound(2, all, 1_500);
    const before = service.stats().rejections['WRONG_CONTEXT'] ?? 0;
    // A replay of site-3's round-1 block: wrong round.
    expect(await remoteFailure(send(2, round1[2]!.blocks[0]!))).toBe('TRANSPORT_REMOTE');
    expect(service.stats().rejections['WRONG_CONTEXT']).toBe(before + 1);

    await Promise.all([0, 1].map((i) => sendAll(i, round2[i]!)));
    expect(partials.filter((f) => f[5] === FRAME_KIND.manifest)).toHaveLength(1); // still waiting for site-3
    const { manifest, decoded } = await partialOf(2, 5_000);
    expect(manifest.contributors).toBe(2);
    expect(manifest.contributorList.map((c) => c.site).sort()).toEqual(['site-1', 'site-2']);
    expectSumOf(decoded.laneSums, round2);
    // The aggregator records the partial once the manifest's ack is back, just after we got it.
    await until(() => service.stats().lastPartial?.round === 2, 3_000);
    expect(service.stats().lastPartial).toMatchObject({ round: 2, contributors: 2, sent: true });
  });

  it('refuses a site assigned to another aggregator and a round-open not signed by the coordinator; sends nothing without updates', async () => {
    // A RoundOpen signed by a site is ignored.
    const forged = sealControl(
      'round-open',
      {
        federation: dep.config.federation.id,
        round: 9,
        version: 8,
        baseCommit: context(9).baseCommit,
        assignments: [],
        bits: 8,
        clip: Math.fround(0.05),
        maxContributors: 32,
        crcChunkBytes: 16_384,
        deadlineUnixMs: Date.now() + 1000,
        totalExamples: 1,
        totalParams: PARAMS,
        attempt: new Uint8Array(16),
      },
      'site-1',
      sites[0]!.signing,
    );
    await coordinator.transport.publish(coordinator.subjects.roundOpen, forged);
    await until(() => service.stats().roundOpensRefused === 1, 3_000);
    expect(service.stats().round).toBe(2);

    const u = encode(2, 3);
    await openRound(
      3,
      [assigned('site-1', 'agg-1'), assigned('site-2', 'agg-1'), assigned('site-3', 'agg-2')],
      800,
    );
    const before = service.stats();
    expect(await remoteFailure(send(2, u.blocks[0]!))).toBe('TRANSPORT_REMOTE');
    const after = service.stats();
    expect(after.rejected).toBe(before.rejected + 1);
    expect(after.rejections['WRONG_CONTEXT']).toBe((before.rejections['WRONG_CONTEXT'] ?? 0) + 1);
    expect(after.blocksAccepted).toBe(before.blocksAccepted);

    await until(() => service.stats().emptyRounds === 1, 5_000);
    expect(service.stats().partialsSent).toBe(2);
    expect(partials.filter((f) => f[5] === FRAME_KIND.manifest)).toHaveLength(2);

    expect(heartbeats.length).toBeGreaterThan(2);
    expect(heartbeats.every((h) => h.role === 'aggregator')).toBe(true);
  });

  it('holds a block that outruns its RoundOpen until the round opens, then finishes once its site is in', async () => {
    const u = encode(0, 4);
    const early = send(0, u.blocks[0]!); // the aggregator has not seen round 4 yet
    await new Promise((r) => setTimeout(r, 100));
    await openRound(4, [assigned('site-1', 'agg-1')], 10_000);
    expect([...(await early)]).toEqual([...ACK]);
    for (const frame of u.blocks.slice(1)) expect([...(await send(0, frame))]).toEqual([...ACK]);
    // The manifest completes the update: its answer is the receipt.
    const receipt = openControl(await send(0, u.manifest), 'receipt', coordinator.keys, { signer: 'agg-1' });
    expect(receipt.body).toMatchObject({ round: 4, site: 'site-1' });
    const { manifest, decoded } = await partialOf(4, 5_000);
    expect(manifest.contributorList.map((c) => c.site)).toEqual(['site-1']);
    expectSumOf(decoded.laneSums, [u]);
  });

  it('decides from the header, before decoding: a site not assigned here, a round too far ahead, one early frame per site', async () => {
    await openRound(5, [assigned('site-1', 'agg-1'), assigned('site-2', 'agg-2')], 10_000);
    const count = (reason: string) => service.stats().rejections[reason] ?? 0;
    const before = { wrong: count('WRONG_CONTEXT'), bad: count('BAD_HEADER'), malformed: count('MALFORMED') };
    // site-2 (assigned to agg-2): a "block" of round 5 whose body past its round and signer is
    // junk (no encoding): the decode would refuse it BAD_HEADER; it is refused for its site first.
    const name = [...Buffer.from('site-2')];
    const junk = frame(
      FRAME_KIND.block,
      Uint8Array.from([
        0x0a,
        0x80,
        0x20,
        ...new Array<number>(4096).fill(1),
        0x38,
        5,
        0x42,
        name.length,
        ...name,
      ]),
    );
    expect(await remoteMessage(send(1, junk))).toMatch(
      /WRONG_CONTEXT: site "site-2" is not assigned here in round 5/,
    );
    expect(count('WRONG_CONTEXT')).toBe(before.wrong + 1);
    expect(count('BAD_HEADER')).toBe(before.bad);
    expect(count('MALFORMED')).toBe(before.malformed);
    // A real block of site-1 for round 50: refused on arrival, not held for a RoundOpen.
    expect(await remoteMessage(send(0, encode(0, 50).blocks[0]!))).toMatch(
      /block is for round 50, more than one round ahead of the current round 5/,
    );
    // Two blocks of site-1 for round 6 at once: the first waits for its RoundOpen, the second is refused.
    const u = encode(0, 6);
    const first = send(0, u.blocks[0]!);
    const second = remoteMessage(send(0, u.blocks[1]!));
    expect(await second).toMatch(/round 6, not open here yet, and a frame of "site-1" already waits/);
    await openRound(6, [assigned('site-1', 'agg-1')], 10_000);
    expect([...(await first)]).toEqual([...ACK]);
    expect(count('WRONG_CONTEXT')).toBe(before.wrong + 3);
    expect(count('BAD_HEADER')).toBe(before.bad);
  });
});

// The contributions stream on a real nats-server (2.9.10 in CI): what the coordinator creates, what
// it refuses to use, what an honest writer and a reader see, and what a reader reports on a stream
// weaker than write-once (made here by hand with an all-powerful user).
import { DiscardPolicy, jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect, type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContributionError } from '../../../src/round/index.ts';
import { contributionWriter } from '../../../src/services/aggregator/index.ts';
import {
  CONTRIBUTION_HEADER_BYTES,
  type ContributionKey,
  contributionFrameSubject,
  contributionName,
  contributionStreamSettings,
  ensureContributionStream,
  readStoredContribution,
  StoreError,
} from '../../../src/services/store/index.ts';
import { federationSubjects } from '../../../src/transport/index.ts';
import { rejection } from '../../helpers/error-code.ts';
import { type NatsServerHandle, startNatsServer } from '../../helpers/nats-server.ts';

const F = 'cstream';
const S = federationSubjects(F);
const OPTIONS = { replicas: 1, retentionMs: 3_600_000, maxFrameBytes: 1024 };
const LIMITS = { maxFrames: 8, maxBytes: 1 << 16, timeoutMs: 2000 };
const key = (site: string, round = 1): ContributionKey => ({
  aggregator: 'agg-1',
  round,
  attempt: new Uint8Array(16).fill(round),
  site,
});
const bytes = (s: string) => new TextEncoder().encode(s);

describe('the contributions stream', () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true });
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('is created write-once, rollup-free, capped at a frame, kept for the retention; a second call accepts it', async () => {
    const jsm = await jetstreamManager(nc);
    expect(await ensureContributionStream(jsm, F, OPTIONS)).toBe(S.contributionsStream);
    const c = (await jsm.streams.info(S.contributionsStream)).config;
    expect(c).toMatchObject({
      subjects: [`cohort.${F}.contribution.>`],
      storage: 'file',
      discard: 'new',
      deny_delete: true,
      deny_purge: true,
      allow_rollup_hdrs: false,
      max_msgs_per_subject: 1,
      discard_new_per_subject: true,
      max_msg_size: 1024 + CONTRIBUTION_HEADER_BYTES,
      max_age: 3_600_000 * 1_000_000,
    });
    expect(await ensureContributionStream(jsm, F, OPTIONS)).toBe(S.contributionsStream);
    expect(contributionStreamSettings(F, OPTIONS).maxMsgsPerSubject).toBe(1);
  });

  it('an honest writer stores each frame once; a reader gets them back in order', async () => {
    const write = contributionWriter(nc, F, 'agg-1');
    const stored = { manifest: bytes('manifest'), blocks: [bytes('block-0'), bytes('block-1')] };
    await write(key('site-a'), stored);
    expect(await readStoredContribution(nc, F, key('site-a'), LIMITS)).toEqual({
      status: 'found',
      frames: [stored.manifest, ...stored.blocks],
    });
    // Written again (a retry, an overwrite): refused, the first stays.
    const again = await rejection(
      write(key('site-a'), { manifest: bytes('other'), blocks: [] }),
      ContributionError,
    );
    expect(again).toMatchObject({ code: 'CONTRIBUTION_NOT_STORED' });
    expect(again.message).toMatch(/wrong last sequence/);
    expect((await readStoredContribution(nc, F, key('site-a'), LIMITS)).status).toBe('found');
    // A frame larger than the stream's cap is refused by the stream.
    const big = await rejection(
      write(key('site-b'), { manifest: new Uint8Array(4096), blocks: [] }),
      ContributionError,
    );
    expect(big.message).toMatch(/message size exceeds maximum allowed/);
    // Rollups are refused whatever the subject.
    const rollup = natsHeaders();
    rollup.set('Nats-Rollup', 'all');
    await expect(
      jetstream(nc).publish(contributionFrameSubject(F, key('site-c'), 0), bytes('x'), { headers: rollup }),
    ).rejects.toThrow(/rollup not permitted/);
    expect(contributionName(key('site-a'))).toBe(`round-1/${'01'.repeat(16)}/agg-1/site-a`);
  });

  it('a reader reports a missing contribution, frames with a gap or too many, and one over its byte cap', async () => {
    const js = jetstream(nc);
    expect(await readStoredContribution(nc, F, key('nobody'), LIMITS)).toEqual({ status: 'absent' });
    // Frames 0 and 2 only.
    await js.publish(contributionFrameSubject(F, key('gap'), 0), bytes('m'));
    await js.publish(contributionFrameSubject(F, key('gap'), 2), bytes('b'));
    expect(await readStoredContribution(nc, F, key('gap'), LIMITS)).toEqual({
      status: 'corrupt',
      reason: 'frames 0, 2 are stored: frame 1 is missing',
    });
    for (let i = 0; i < 9; i++) await js.publish(contributionFrameSubject(F, key('many'), i), bytes('f'));
    expect(await readStoredContribution(nc, F, key('many'), LIMITS)).toMatchObject({ status: 'too-large' });
    for (let i = 0; i < 3; i++)
      await js.publish(contributionFrameSubject(F, key('heavy'), i), new Uint8Array(1000));
    expect(await readStoredContribution(nc, F, key('heavy'), { ...LIMITS, maxBytes: 2500 })).toMatchObject({
      status: 'too-large',
    });
    // No stream at all (another federation): absent.
    expect(await readStoredContribution(nc, 'nofed', key('site-a'), LIMITS)).toEqual({ status: 'absent' });
  });

  it('a stream weaker than write-once is refused by the coordinator, and its overwrites are reported by readers', async () => {
    const weak = 'weakfed';
    const W = federationSubjects(weak);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: W.contributionsStream,
      subjects: [W.contributions],
      storage: StorageType.File,
      discard: DiscardPolicy.New,
      allow_rollup_hdrs: true,
      deny_purge: false,
    });
    const refused = await rejection(ensureContributionStream(jsm, weak, OPTIONS), StoreError);
    expect(refused.code).toBe('STREAM_MISMATCH');
    for (const setting of [
      'deny_delete is false, expected true',
      'deny_purge is false, expected true',
      'allow_rollup_hdrs is true, expected false',
      'max_msgs_per_subject is -1, expected 1',
      'discard_new_per_subject is false, expected true',
    ]) {
      expect(refused.message).toContain(setting);
    }
    // On such a stream a frame can be written twice: the reader keeps the first and says so.
    const js = jetstream(nc);
    const k = key('site-a');
    await js.publish(contributionFrameSubject(weak, k, 0), bytes('first'));
    await js.publish(contributionFrameSubject(weak, k, 0), bytes('second'));
    await js.publish(contributionFrameSubject(weak, k, 1), bytes('block'));
    expect(await readStoredContribution(nc, weak, k, LIMITS)).toEqual({
      status: 'overwritten',
      frames: [bytes('first'), bytes('block')],
      reason: 'frame 0 was written 2 times',
    });
    // The honest writer refuses to write over an existing frame even there.
    await expect(
      contributionWriter(nc, weak, 'agg-1')(k, { manifest: bytes('x'), blocks: [] }),
    ).rejects.toThrow(/wrong last sequence/);
  });
});

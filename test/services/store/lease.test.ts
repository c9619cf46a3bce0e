import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { StorageType } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  acquireLease,
  type Lease,
  leaseBucketProblems,
  StoreError,
} from '../../../src/services/store/index.ts';
import { rejection } from '../../helpers/error-code.ts';
import { type NatsServerHandle, startNatsServer } from '../../helpers/nats-server.ts';

const storeError = (promise: Promise<unknown>) => rejection(promise, StoreError);

const TTL = 600;
const EVENTUALLY = { timeout: 10_000, interval: 25 };

let bucketCount = 0;
const freshBucket = () => `lease-${process.pid}-${++bucketCount}`;

function thrown(fn: () => void): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('coordinator lease', () => {
  let server: NatsServerHandle;
  let nc1: NatsConnection;
  let nc2: NatsConnection;
  let nc3: NatsConnection;
  const held: Lease[] = [];
  const track = (l: Lease) => {
    held.push(l);
    return l;
  };
  const openKv = (bucket: string): Promise<KV> => new Kvm(nc3).open(bucket);

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: true });
    nc1 = await connect({ servers: server.url });
    nc2 = await connect({ servers: server.url });
    nc3 = await connect({ servers: server.url });
  });

  afterEach(async () => {
    await Promise.allSettled(held.splice(0).map((l) => l.release()));
  });

  afterAll(async () => {
    await Promise.all([nc1, nc2, nc3].map((c) => c?.close()));
    await server?.stop();
  });

  it('acquires, renews and releases', async () => {
    const bucket = freshBucket();
    const lease = track(await acquireLease(nc1, { bucket, holder: 'coord-a', ttlMs: TTL }));
    expect(lease.holder).toBe('coord-a');
    expect(lease.instance).toMatch(/^[0-9a-f]{16}$/);
    lease.assertHeld();
    const kv = await openKv(bucket);
    const first = await kv.get('coordinator');
    expect(first?.json()).toEqual({
      holder: 'coord-a',
      instance: lease.instance,
      expiresUnixMs: lease.expiresUnixMs(),
    });
    const status = await kv.status();
    expect(status.history).toBe(1);
    expect(status.replicas).toBe(1);
    expect(status.storage).toBe('file');

    // Renewed: the revision moves on and the lease outlives several TTLs.
    const expiry0 = lease.expiresUnixMs();
    await vi.waitFor(async () => {
      const e = await kv.get('coordinator');
      expect(e!.revision).toBeGreaterThan(first!.revision + 2);
    }, EVENTUALLY);
    expect(lease.expiresUnixMs()).toBeGreaterThan(expiry0);
    lease.assertHeld();

    await lease.release();
    await lease.release(); // idempotent
    const after = await kv.get('coordinator');
    expect(after === null || after.operation !== 'PUT').toBe(true);
    const err = thrown(() => lease.assertHeld());
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe('LEASE_LOST');
    expect((err as StoreError).message).toMatch(/released/);
    // Never renewed after release.
    const lastSeq = async () => (await kv.status()).streamInfo.state.last_seq;
    const seq = await lastSeq();
    await new Promise((r) => setTimeout(r, TTL));
    expect(await lastSeq()).toBe(seq);
  });

  it('refuses a second holder with LEASE_HELD while the first renews, also after waiting', async () => {
    const bucket = freshBucket();
    const a = track(await acquireLease(nc1, { bucket, key: 'fed.f1', holder: 'coord-a', ttlMs: TTL }));
    const now = await storeError(acquireLease(nc2, { bucket, key: 'fed.f1', holder: 'coord-b', ttlMs: TTL }));
    expect(now.code).toBe('LEASE_HELD');
    expect(now.message).toMatch(/lease fed\.f1 of bucket .* is held by coord-a/);
    expect(now.details).toMatchObject({ holder: 'coord-a', instance: a.instance });
    const waited = await storeError(
      acquireLease(nc2, { bucket, key: 'fed.f1', holder: 'coord-b', ttlMs: TTL, waitMs: 2 * TTL }),
    );
    expect(waited.code).toBe('LEASE_HELD');
    expect(waited.message).toMatch(/after waiting 1200 ms/);
    a.assertHeld();
  });

  it('lets a waiting holder take over once the first stops renewing', async () => {
    const bucket = freshBucket();
    const dying = await connect({ servers: server.url });
    const lost: StoreError[] = [];
    const a = await acquireLease(dying, {
      bucket,
      holder: 'coord-a',
      ttlMs: TTL,
      onLost: (e) => lost.push(e),
    });
    await dying.close(); // renewals now fail
    const b = track(await acquireLease(nc2, { bucket, holder: 'coord-b', ttlMs: TTL, waitMs: 10_000 }));
    b.assertHeld();
    const kv = await openKv(bucket);
    expect((await kv.get('coordinator'))?.json()).toMatchObject({ holder: 'coord-b', instance: b.instance });
    await vi.waitFor(() => expect(lost).toHaveLength(1), EVENTUALLY);
    expect(lost[0]!.code).toBe('LEASE_LOST');
    expect(lost[0]!.message).toMatch(/expired at .* without a successful renewal/);
    expect((thrown(() => a.assertHeld()) as StoreError).code).toBe('LEASE_LOST');
    await a.release(); // lost: nothing to delete
    expect((await kv.get('coordinator'))?.json()).toMatchObject({ holder: 'coord-b' });
  });

  it('notices a takeover at its next renewal: LEASE_LOST and onLost once', async () => {
    const bucket = freshBucket();
    const lost: StoreError[] = [];
    const a = track(
      await acquireLease(nc1, { bucket, holder: 'coord-a', ttlMs: TTL, onLost: (e) => lost.push(e) }),
    );
    const kv = await openKv(bucket);
    const entry = await kv.get('coordinator');
    const intruder = { holder: 'intruder', instance: 'ffff', expiresUnixMs: Date.now() + 60_000 };
    await kv.update('coordinator', JSON.stringify(intruder), entry!.revision);
    await vi.waitFor(() => expect(lost).toHaveLength(1), EVENTUALLY);
    expect(lost[0]!.code).toBe('LEASE_LOST');
    expect(lost[0]!.message).toMatch(/taken over/);
    const err = thrown(() => a.assertHeld()) as StoreError;
    expect(err.code).toBe('LEASE_LOST');
    await new Promise((r) => setTimeout(r, TTL));
    expect(lost).toHaveLength(1);
    // Release does not delete the intruder's lease.
    await a.release();
    expect((await kv.get('coordinator'))?.json()).toEqual(intruder);
    const b = await storeError(acquireLease(nc2, { bucket, holder: 'coord-b', ttlMs: TTL }));
    expect(b.message).toMatch(/held by intruder/);
  });

  it('lets a new holder in at once after release', async () => {
    const bucket = freshBucket();
    const a = await acquireLease(nc1, { bucket, holder: 'coord-a', ttlMs: 60_000 });
    await a.release();
    const b = track(await acquireLease(nc2, { bucket, holder: 'coord-b', ttlMs: 60_000 }));
    b.assertHeld();
    // ...and the same holder name again, as a new instance.
    await b.release();
    const c = track(await acquireLease(nc1, { bucket, holder: 'coord-a', ttlMs: 60_000 }));
    expect(c.instance).not.toBe(a.instance);
  });

  it('takes over an expired lease left behind by a holder that stopped without releasing', async () => {
    const bucket = freshBucket();
    const kv = await new Kvm(nc3).create(bucket, { history: 1 });
    await kv.put(
      'coordinator',
      JSON.stringify({ holder: 'crashed', instance: 'aaaa', expiresUnixMs: Date.now() - 1 }),
    );
    const b = track(await acquireLease(nc2, { bucket, holder: 'coord-b', ttlMs: TTL }));
    expect((await kv.get('coordinator'))?.json()).toMatchObject({ holder: 'coord-b', instance: b.instance });
  });

  it('is lost locally once its own clock passes the expiry', async () => {
    const bucket = freshBucket();
    let offset = 0;
    const now = () => Date.now() + offset;
    const lost: StoreError[] = [];
    const a = track(
      await acquireLease(nc1, { bucket, holder: 'coord-a', ttlMs: 60_000, now, onLost: (e) => lost.push(e) }),
    );
    a.assertHeld();
    offset = 61_000;
    expect((thrown(() => a.assertHeld()) as StoreError).code).toBe('LEASE_LOST');
    expect(lost).toHaveLength(1);
    offset = 0;
    expect((thrown(() => a.assertHeld()) as StoreError).code).toBe('LEASE_LOST');
    expect(lost).toHaveLength(1);
  });

  it('refuses a bucket that exists with weaker settings (memory storage, an age limit, fewer replicas), naming each', async () => {
    const bucket = freshBucket();
    // Someone with JetStream rights made the bucket first: in memory, entries expiring after 1 s.
    await new Kvm(nc3).create(bucket, { storage: StorageType.Memory, history: 1, ttl: 1000 });
    const err = await storeError(acquireLease(nc1, { bucket, holder: 'coordinator', ttlMs: TTL }));
    expect(err.code).toBe('STREAM_MISMATCH');
    expect(err.message).toMatch(/storage is memory, expected file/);
    expect(err.message).toMatch(/max_age/);
    // Nothing was written to it.
    expect(await (await openKv(bucket)).get('coordinator')).toBeNull();
    // On a cluster: a bucket on fewer replicas than history.replicas, or fed from elsewhere.
    expect(leaseBucketProblems({ storage: StorageType.File, num_replicas: 1, max_age: 0 }, 3)).toEqual([
      'replicas is 1, expected 3',
    ]);
    expect(
      leaseBucketProblems({ storage: StorageType.File, num_replicas: 3, sources: [{ name: 'X' }] }, 3),
    ).toEqual(['mirrors or sources another stream']);
    expect(
      leaseBucketProblems({ storage: StorageType.File, num_replicas: 3, allow_direct: true }, 3),
    ).toEqual(['allows direct gets from its replicas, expected reads from the leader only']);
  });

  it('refuses a key holding something other than a lease record', async () => {
    const bucket = freshBucket();
    const kv = await new Kvm(nc3).create(bucket, { history: 1 });
    await kv.put('coordinator', 'not json');
    const err = await storeError(acquireLease(nc1, { bucket, holder: 'coord-a', ttlMs: TTL }));
    expect(err.code).toBe('LEASE_CORRUPT');
    expect(err.message).toMatch(/lease coordinator of bucket lease-/);
  });

  it('reports an unreachable JetStream as STORE_UNAVAILABLE', async () => {
    const plain = await startNatsServer();
    const nc = await connect({ servers: plain.url });
    try {
      const err = await storeError(
        acquireLease(nc, { bucket: freshBucket(), holder: 'coord-a', ttlMs: TTL }),
      );
      expect(err.code).toBe('STORE_UNAVAILABLE');
      expect(err.cause).toBeDefined();
    } finally {
      await nc.close();
      await plain.stop();
    }
  });

  it('refuses bad options naming them', async () => {
    const base = { bucket: 'b', holder: 'h', ttlMs: TTL };
    await expect(acquireLease(nc1, { ...base, bucket: 'a.b' })).rejects.toThrow(/options\.bucket/);
    await expect(acquireLease(nc1, { ...base, key: 'a.*' })).rejects.toThrow(/options\.key/);
    await expect(acquireLease(nc1, { ...base, holder: '' })).rejects.toThrow(/options\.holder/);
    await expect(acquireLease(nc1, { ...base, ttlMs: 10 })).rejects.toThrow(/options\.ttlMs/);
    await expect(acquireLease(nc1, { ...base, waitMs: -1 })).rejects.toThrow(/options\.waitMs/);
    await expect(acquireLease(nc1, { ...base, replicas: 0 })).rejects.toThrow(/options\.replicas/);
  });

  it('does not keep a process alive: its timers are unref’d', async () => {
    const store = fileURLToPath(new URL('../../../src/services/store/index.ts', import.meta.url));
    const script = `
      import { connect } from '@nats-io/transport-node';
      import { acquireLease } from ${JSON.stringify(store)};
      const nc = await connect({ servers: ${JSON.stringify(server.url)} });
      await acquireLease(nc, { bucket: ${JSON.stringify(freshBucket())}, holder: 'child', ttlMs: 60000 });
      await nc.close();
    `;
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        cwd: fileURLToPath(new URL('../../../', import.meta.url)),
        stdio: 'inherit',
      });
      const t = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error('the child process did not exit while holding a lease'));
      }, 15_000);
      child.once('exit', (c) => {
        clearTimeout(t);
        resolve(c);
      });
    });
    expect(code).toBe(0);
  });
});

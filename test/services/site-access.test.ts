// A site's NATS user can read what catch-up needs — the log, the aggregates and snapshots streams —
// and change none of it: over a real nats-server with the federation's users and permissions.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { federationGenesis } from '../../src/services/agent/index.ts';
import {
  ensureLogStream,
  LOG_ORIGIN,
  openLogReader,
  openLogWriter,
} from '../../src/services/federation-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import {
  aggregateStore,
  lazyWriteOnceStore,
  readWriteOnceObject,
  snapshotStore,
} from '../../src/services/store/index.ts';

const F = 'access';
let dir: string;
let dep: LocalDeployment;
let coord: MemberContext;
let site: MemberContext;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-access-'));
  dep = await createLocalDeployment({
    dir,
    federation: F,
    aggregators: 1,
    sites: 1,
    overrides: { learning: { model: 'logreg' }, log: { level: 'error' } },
  });
  coord = await openMember(dep.config, 'coordinator');
  site = await openMember(dep.config, 'site-1');
  // What the coordinator writes: one log entry, one aggregate, one snapshot.
  const nc = coord.transport.connection;
  await ensureLogStream(await jetstreamManager(nc), { federation: F, replicas: 1, maxBytes: 1 << 24 });
  const writer = await openLogWriter(nc, {
    federation: F,
    signer: 'coordinator',
    signing: coord.signing,
    start: LOG_ORIGIN,
  });
  const genesis = federationGenesis(dep.config).commit;
  await writer.append({
    roundOpen: {
      federation: F,
      round: 1,
      version: 0,
      baseCommit: genesis.hash,
      assignments: [],
      bits: 8,
      clip: 0.05,
      maxContributors: 32,
      crcChunkBytes: 16384,
      deadlineUnixMs: Date.now(),
      totalExamples: 0,
      totalParams: 7850,
      attempt: new Uint8Array(16),
    },
  });
  for (const store of [aggregateStore(F), snapshotStore(F)]) {
    const objects = await lazyWriteOnceStore(nc, store, { replicas: 1 })();
    await objects.put('object-1', new Uint8Array(300_000).fill(7));
  }
});

afterAll(async () => {
  for (const m of [site, coord]) await m?.close();
  await dep?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a site's read-only access", () => {
  it('reads the log and both object streams', async () => {
    const reader = await openLogReader(site.transport.connection, {
      federation: F,
      coordinator: 'coordinator',
      keys: site.keys,
    });
    expect(await reader.lastSequence()).toBe(1);
    expect((await reader.get(1)).record.roundOpen?.round).toBe(1);
    for (const store of [aggregateStore(F), snapshotStore(F)]) {
      const bytes = await readWriteOnceObject(site.transport.connection, store, 'object-1', {
        maxBytes: 1 << 20,
      });
      expect(bytes?.length).toBe(300_000);
    }
  });

  it('cannot append to the log, delete or purge it, or write an object', async () => {
    const nc = site.transport.connection;
    const js = jetstream(nc, { timeout: 2000 });
    await expect(js.publish(site.subjects.log, new Uint8Array([1]))).rejects.toThrow();
    const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: 2000 });
    await expect(jsm.streams.purge(site.subjects.logStream)).rejects.toThrow();
    await expect(jsm.streams.delete(site.subjects.logStream)).rejects.toThrow();
    await expect(jsm.streams.deleteMessage(site.subjects.logStream, 1)).rejects.toThrow();
    // An object is written by publishing its frames on the stream's subjects.
    for (const store of [aggregateStore(F), snapshotStore(F)]) {
      await expect(js.publish(store.frameSubject('forged', 0), new Uint8Array(10))).rejects.toThrow();
      await expect(jsm.streams.purge(store.stream)).rejects.toThrow();
      await expect(jsm.streams.deleteMessage(store.stream, 1)).rejects.toThrow();
    }
    // Still intact, read by the coordinator.
    const reader = await openLogReader(coord.transport.connection, {
      federation: F,
      coordinator: 'coordinator',
      keys: coord.keys,
    });
    expect(await reader.lastSequence()).toBe(1);
    const forged = await readWriteOnceObject(coord.transport.connection, aggregateStore(F), 'forged', {
      maxBytes: 1 << 20,
    });
    expect(forged).toBeNull();
    expect(
      (
        await readWriteOnceObject(coord.transport.connection, aggregateStore(F), 'object-1', {
          maxBytes: 1 << 20,
        })
      )?.length,
    ).toBe(300_000);
  });
});

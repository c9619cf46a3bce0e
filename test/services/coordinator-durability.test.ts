// The coordinator refuses a log it cannot trust instead of restarting the federation's history:
// a stream with weaker settings than the log needs, a log that lacks what this coordinator
// appended, and an empty log while sites report later heads.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../crypto/digest/index.ts';
import { type ControlBodies, sealControl } from '../../src/protocol/index.ts';
import { startCoordinator } from '../../src/services/coordinator/index.ts';
import { FederationLogError } from '../../src/services/federation-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import { bytesToHex } from '../../src/versions/index.ts';
import { rejection } from '../helpers/error-code.ts';

const F = 'durable';
let dir: string;
let dep: LocalDeployment;
let coord: MemberContext;
let site: MemberContext;
/** The operator's connection: the coordinator may not delete its log stream. */
let admin: NatsConnection;
let beat: NodeJS.Timeout | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-durable-'));
  dep = await createLocalDeployment({
    dir,
    federation: F,
    aggregators: 1,
    sites: 2,
    admin: true,
    overrides: {
      round: { heartbeatMs: 100, missedHeartbeats: 20 },
      learning: { model: 'logreg', trainLimit: 200 },
      history: { leaseMs: 1000 },
      log: { level: 'error' },
    },
  });
  coord = await openMember(dep.config, 'coordinator');
  site = await openMember(dep.config, 'site-1');
  admin = await connect(dep.admin);
});

afterEach(async () => {
  clearInterval(beat);
  const jsm = await jetstreamManager(admin);
  await jsm.streams.delete(coord.subjects.logStream).catch(() => undefined);
  rmSync(join(dep.config.paths.dataDir, 'coordinator'), { recursive: true, force: true });
});

afterAll(async () => {
  for (const m of [site, coord]) await m?.close();
  await admin?.close();
  await dep?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const failure = (p: Promise<unknown>) => rejection(p, FederationLogError);

describe('coordinator durability checks', () => {
  it('refuses a pre-existing log stream in memory, naming the setting', async () => {
    const jsm = await jetstreamManager(coord.transport.connection);
    await jsm.streams.add({
      name: coord.subjects.logStream,
      subjects: [coord.subjects.log],
      storage: StorageType.Memory,
      retention: RetentionPolicy.Limits,
    });
    const err = await failure(startCoordinator(coord, { rounds: 1 }).done);
    expect(err.code).toBe('LOG_STREAM_MISMATCH');
    expect(err.message).toMatch(/storage is memory, expected file/);
    expect(err.message).toMatch(/deny/);
  });

  it('refuses a log that lacks entries this coordinator appended (lost or truncated)', async () => {
    const mine = join(dep.config.paths.dataDir, 'coordinator');
    mkdirSync(mine, { recursive: true });
    const hash = bytesToHex(sha256(new TextEncoder().encode('entry 7 as this coordinator wrote it')));
    writeFileSync(join(mine, 'log-tail.json'), `${JSON.stringify({ sequence: 7, hash })}\n`);
    const err = await failure(startCoordinator(coord, { rounds: 1 }).done);
    expect(err.code).toBe('LOG_BEHIND');
    expect(err.message).toMatch(/ends at entry 0, but this coordinator appended entry 7/);
  });

  it('refuses to start from genesis when a site reports a later head', async () => {
    const heartbeat = () => {
      const body: ControlBodies['heartbeat'] = {
        federation: F,
        member: 'site-1',
        role: 'site',
        sentUnixMs: Date.now(),
        head: sha256(new TextEncoder().encode('commit at height 3')),
        height: 3,
        examples: 100,
        state: 'READY',
      };
      void site.transport
        .publish(site.subjects.heartbeat('site-1'), sealControl('heartbeat', body, 'site-1', site.signing))
        .catch(() => undefined);
    };
    beat = setInterval(heartbeat, 100);
    const err = await failure(startCoordinator(coord, { rounds: 1 }).done);
    expect(err.code).toBe('LOG_BEHIND');
    expect(err.message).toMatch(
      /site-1 reports head [0-9a-f]{12} at height 3, beyond the log's head at height 0/,
    );
  });
});

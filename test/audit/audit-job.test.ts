// Audit jobs in a child process (src/audit/audit-job.ts) over a short real federation: a streamed
// bundle job gives the bundle the in-process exporter writes (every item equal; only the export
// time differs), read as slowly as its reader reads; a verify job gives the in-process report; an
// aborted job's process is gone and its bundle never ends cleanly; a job that cannot connect fails
// with the audit's code; the coordinator's own connection reads nothing for either.
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuditJobError,
  type AuditJobTarget,
  bundleSealValid,
  decodeAuditBundle,
  exportAuditBundle,
  openLiveAuditSource,
  resolveAuditTrust,
  runAuditVerifyJob,
  startAuditBundleJob,
  verifyAudit,
} from '../../src/audit/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { federationGenesis } from '../../src/round/index.ts';
import { ckksParamsOf } from '../../src/services/index.ts';
import { Federation } from '../helpers/federation.ts';

const OVERRIDES: Partial<CohortConfigInput> = {
  round: { heartbeatMs: 200, missedHeartbeats: 5, deadlineMs: 8000, voteTimeoutMs: 8000 },
  learning: { model: 'logreg', trainLimit: 600, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

let f: Federation;
let target: AuditJobTarget;

async function drain(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  f = await Federation.create('ajob', { aggregators: 1, sites: 3, overrides: OVERRIDES });
  await f.startAggregator('agg-1');
  for (const s of f.dep.sites) await f.startAgent(s);
  const summary = await f.runCoordinator(2);
  expect(summary.committed).toBeGreaterThanOrEqual(1);
  const pin = f.dep.config.members!.registry!;
  target = {
    config: f.dep.config,
    member: f.coord.member,
    trust: {
      federation: f.dep.config.federation.id,
      registryFile: pin.path,
      registryPin: pin.sha256,
      genesis: federationGenesis(f.dep.config).commit,
    },
  };
}, 120_000);

afterAll(async () => {
  await f?.stop();
});

describe('audit jobs in a child process', () => {
  it('streams the bundle the in-process exporter writes; the coordinator connection reads none of it', async () => {
    const trust = resolveAuditTrust(target.trust);
    const source = await openLiveAuditSource(f.coord.transport.connection, {
      federation: f.dep.config.federation.id,
      member: f.coord.member,
    });
    const chunks: Uint8Array[] = [];
    const local = await exportAuditBundle(
      source,
      {
        registry: trust.registry,
        genesis: trust.genesis,
        signer: { member: f.coord.member, key: f.coord.signing },
      },
      (c) => void chunks.push(c.slice()),
    );
    const inProcess = decodeAuditBundle(Buffer.concat(chunks));
    const read = f.coord.transport.connection.stats().inBytes;
    const job = await startAuditBundleJob(target, {});
    // Read slowly: one chunk, then the rest (the process waits meanwhile).
    const bytes = await drain(Readable.from(job.body));
    const summary = await job.done;
    expect(f.coord.transport.connection.stats().inBytes - read).toBeLessThan(bytes.length);
    const streamed = decodeAuditBundle(bytes);
    expect(summary).toMatchObject({ ...local, bytes: bytes.length });
    // Each is sealed over its own export time: the seals differ, both the coordinator's.
    const { seal: streamedSeal, ...streamedRest } = streamed;
    const { seal: localSeal, ...localRest } = inProcess;
    expect(streamedSeal?.signer).toBe('coordinator');
    expect(bundleSealValid(streamedSeal!, f.coord.signing)).toBe(true);
    expect(bundleSealValid(localSeal!, f.coord.signing)).toBe(true);
    expect({ ...streamedRest, meta: { ...streamedRest.meta, exportedUnixMs: 0 } }).toEqual({
      ...localRest,
      meta: { ...localRest.meta, exportedUnixMs: 0 },
    });
    expect(streamed.meta.member).toBe('coordinator');
    expect(streamed.contributions!.size).toBeGreaterThan(0);
    expect(alive(job.pid)).toBe(false);
  }, 60_000);

  it('leaves contributions out on request', async () => {
    const job = await startAuditBundleJob(target, { skipContributions: true });
    const bundle = decodeAuditBundle(await drain(job.body));
    expect(bundle.meta.contributions).toBe('skipped');
    expect(bundle.contributions!.size).toBe(0);
    expect((await job.done).contributionsIncluded).toBe('skipped');
  }, 60_000);

  it('verifies the live log as verifyAudit does', async () => {
    const options = {
      ckksParams: [ckksParamsOf(f.dep.config)],
      contributionRetentionMs: f.dep.config.history.updateRetentionMs,
    };
    const report = await runAuditVerifyJob(target, options);
    const source = await openLiveAuditSource(f.coord.transport.connection, {
      federation: f.dep.config.federation.id,
      member: f.coord.member,
    });
    const local = await verifyAudit(source, resolveAuditTrust(target.trust), options);
    expect(report.verified).toBe(true);
    expect(report).toEqual(local);
  }, 60_000);

  it('an aborted job kills its process, and its bundle never ends cleanly', async () => {
    const controller = new AbortController();
    const job = await startAuditBundleJob(target, {}, { signal: controller.signal });
    const ended = drain(job.body).then(
      () => 'ended',
      (err: Error) => err.message,
    );
    controller.abort(new Error('the client left'));
    expect(await ended).toContain('the client left');
    await expect(job.done).rejects.toMatchObject({ code: 'AUDIT_JOB_ABORTED' });
    await expect.poll(() => alive(job.pid)).toBe(false);
    // Aborted before it starts: refused at once.
    await expect(startAuditBundleJob(target, {}, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'AUDIT_JOB_ABORTED',
    });
  }, 60_000);

  it("fails with the audit's code when it cannot run, and refuses a bad target or heap", async () => {
    const unreachable = {
      ...target,
      config: { ...target.config, nats: { ...target.config.nats, servers: ['tls://127.0.0.1:9'] } },
    };
    await expect(runAuditVerifyJob(unreachable, {})).rejects.toMatchObject({
      code: 'AUDIT_SOURCE_UNAVAILABLE',
    });
    await expect(
      startAuditBundleJob({ ...target, trust: { federation: target.trust.federation } }, {}),
    ).rejects.toMatchObject({ code: 'AUDIT_TRUST_MISSING' });
    await expect(startAuditBundleJob(undefined as never, {})).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(runAuditVerifyJob(target, {}, { maxHeapMb: 1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(new AuditJobError('AUDIT_JOB_FAILED', 'x').code).toBe('AUDIT_JOB_FAILED');
  }, 60_000);
});

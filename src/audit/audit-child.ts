// The audit process: forked by `startAuditBundleJob` / `runAuditVerifyJob` (audit-job.ts) to run
// one audit job away from the coordinator's event loop and heap. It takes its one request over the
// IPC channel, connects to NATS with the member's own credentials (a connection of its own, named
// `<member>/audit`), streams a bundle to file descriptor 3 (waiting for the parent to read) or
// audits the live log, answers over IPC and exits. It exits too when its parent goes away.
import { once } from 'node:events';
import { Socket } from 'node:net';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { wipeSigningKeyPair } from '../../crypto/signature/index.ts';
import { CohortError } from '../errors/index.ts';
import { memberConnectOptions } from '../services/index.ts';
import { AuditError } from './audit-error.ts';
import { AUDIT_DATA_FD, type AuditJobMessage, type AuditJobRequest } from './audit-job-protocol.ts';
import { resolveAuditTrust } from './audit-trust.ts';
import { loadBundleSigner } from './bundle-signer.ts';
import { exportAuditBundle } from './export-bundle.ts';
import { openLiveAuditSource } from './live-source.ts';
import { verifyAudit } from './verify-audit.ts';

/** Writes to the data socket, waiting for the parent to read when its buffer is full. */
function sinkOf(out: Socket): (chunk: Uint8Array) => Promise<void> | undefined {
  return (chunk) => {
    if (out.write(chunk)) return undefined;
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        out.off('drain', onDrain);
        out.off('error', done);
        out.off('close', onClose);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onDrain = () => done();
      const onClose = () => done(new Error('the parent closed the bundle stream'));
      out.once('drain', onDrain);
      out.once('error', done);
      out.once('close', onClose);
    });
  };
}

async function run(request: AuditJobRequest): Promise<AuditJobMessage> {
  const { config, member, trust } = request.target;
  let nc: NatsConnection;
  try {
    nc = await connect({
      ...memberConnectOptions(config, member),
      name: request.target.connectionName ?? `${member}/audit`,
      timeout: config.nats.timeoutMs,
    });
  } catch (cause) {
    throw new AuditError(
      'AUDIT_SOURCE_UNAVAILABLE',
      `cannot connect to NATS (${config.nats.servers.join(', ')}) as ${member}: ${(cause as Error).message}`,
      { cause },
    );
  }
  try {
    const resolved = resolveAuditTrust(trust);
    const source = await openLiveAuditSource(nc, {
      federation: config.federation.id,
      member,
      timeoutMs: config.nats.timeoutMs,
    });
    if (request.kind === 'verify') {
      return { type: 'verify', report: await verifyAudit(source, resolved, request.options) };
    }
    const signer = loadBundleSigner(config, member);
    const out = new Socket({ fd: AUDIT_DATA_FD, readable: false, writable: true });
    let summary: Awaited<ReturnType<typeof exportAuditBundle>>;
    try {
      summary = await exportAuditBundle(
        source,
        {
          registry: resolved.registry,
          genesis: resolved.genesis,
          skipAggregates: request.options.skipAggregates === true,
          skipContributions: request.options.skipContributions === true,
          signer,
        },
        sinkOf(out),
      );
    } finally {
      wipeSigningKeyPair(signer.key);
    }
    out.end();
    await once(out, 'finish');
    return { type: 'bundle', summary };
  } finally {
    await nc.close().catch(() => undefined);
  }
}

function answer(message: AuditJobMessage, code: number): void {
  process.send!(message, () => process.exit(code));
}

if (typeof process.send !== 'function') {
  process.stderr.write('audit-child: run by the audit job runner only (no IPC channel)\n');
  process.exit(2);
}
// The parent went away (the coordinator ended or killed the job): nothing to answer to.
process.once('disconnect', () => process.exit(1));
process.once('message', (request: AuditJobRequest) => {
  run(request).then(
    (message) => answer(message, 0),
    (err: unknown) => {
      const code = err instanceof CohortError ? err.code : 'INTERNAL';
      answer({ type: 'error', code, message: (err as Error)?.message ?? String(err) }, 2);
    },
  );
});

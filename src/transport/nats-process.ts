import { type ChildProcess, spawn } from 'node:child_process';
import {
  accessSync,
  constants,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { connect, type NatsConnection, nuid } from '@nats-io/transport-node';
import { InvalidArgumentError } from '../errors/index.ts';
import { type NatsUser, renderAuthorization } from './permissions.ts';
import { type NatsServerTlsFiles, renderTlsBlock } from './server-config.ts';
import { TransportError } from './transport-error.ts';

/** Options of {@link startNatsServer}. */
export interface NatsServerOptions {
  /** Enable JetStream with a temporary store directory. */
  readonly jetstream?: boolean;
  /** Extra configuration text appended to the generated file (e.g. `max_payload: 262144`). */
  readonly config?: string;
  /** Users to render as an `authorization` block (see `federationUsers`). */
  readonly users?: readonly NatsUser[];
  /**
   * Mutual TLS: the server requires TLS and a client certificate signed by `tls.ca` (`verify: true`);
   * the handle's URL is then `tls://127.0.0.1:<port>`, and readiness is checked with a TLS handshake
   * that verifies the server's certificate against `tls.ca` for 127.0.0.1.
   */
  readonly tls?: NatsServerTlsFiles;
  /** Give up starting after this long; default 10000 ms. */
  readonly startTimeoutMs?: number;
}

/** A running nats-server started by {@link startNatsServer}. */
export interface NatsServerHandle {
  /** Client URL, `nats://127.0.0.1:<port>` (`tls://` with TLS). */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** JetStream store directory (exists only with `jetstream`). */
  readonly storeDir: string;
  /** Whether the process is still running. */
  readonly running: boolean;
  /** Stops the server (SIGTERM, SIGKILL after 5 s) and removes its temporary directory. Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link startNatsCluster}. */
export interface NatsClusterOptions {
  /** Extra configuration text for every node. */
  readonly config?: string;
  /** Wait until JetStream answers on every node (meta leader elected); default true. */
  readonly waitForJetStream?: boolean;
  /** Give up starting after this long; default 20000 ms. */
  readonly startTimeoutMs?: number;
}

/** A running cluster started by {@link startNatsCluster}. */
export interface NatsClusterHandle {
  /** The nodes, in order; stop one with `nodes[i].stop()` for fault tests. */
  readonly nodes: readonly NatsServerHandle[];
  /** Every node's client URL. */
  readonly urls: readonly string[];
  /** Stops every node still running. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Never leave servers behind when the test process ends without calling stop().
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

function serverError(
  message: string,
  details: Record<string, unknown> = {},
  cause?: unknown,
): TransportError {
  return new TransportError('TRANSPORT_SERVER', message, {
    details,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Path of the nats-server executable: `$COHORT_NATS_SERVER`, else the first on PATH or in
 * /usr/sbin, /usr/local/bin, /usr/local/sbin. Throws `TRANSPORT_SERVER` when there is none.
 */
export function findNatsServer(): string {
  const fromEnv = process.env['COHORT_NATS_SERVER'];
  const dirs = [
    ...(process.env['PATH'] ?? '').split(delimiter),
    '/usr/sbin',
    '/usr/local/bin',
    '/usr/local/sbin',
  ];
  const candidates = fromEnv ? [fromEnv] : dirs.filter((d) => d !== '').map((d) => join(d, 'nats-server'));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next one
    }
  }
  throw serverError(
    "nats-server is not installed (looked on PATH and in /usr/sbin): install Debian's nats-server; .ci/run does",
    { candidates },
  );
}

/** A TCP port free at the time of the call (bind to port 0 on 127.0.0.1, read it, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves once a TCP client gets the server's INFO line (works whether or not auth is required). */
async function probeInfo(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = new Socket();
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('error', () => done(false));
    sock.on('data', (d) => done(d.toString('latin1').startsWith('INFO ')));
    sock.connect(port, '127.0.0.1');
  });
}

/**
 * Resolves true once the server on `port` says `tls_required` in its INFO and completes a TLS
 * handshake whose certificate verifies against `ca` for 127.0.0.1 (the server then refuses this
 * probe, which has no client certificate: TLS 1.3 reports that after the handshake).
 */
async function probeTls(port: number, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = new Socket();
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(2000, () => done(false));
    // `on`, not `once`: the refused handshake may end in more than one error event.
    sock.on('error', () => done(false));
    sock.once('data', (d) => {
      const line = d.toString('latin1');
      if (!line.startsWith('INFO ') || !/"tls_required"\s*:\s*true/.test(line)) {
        done(false);
        return;
      }
      const secure = tlsConnect({ socket: sock, ca, host: '127.0.0.1' }, () => done(secure.authorized));
      secure.on('error', () => done(false));
    });
    sock.connect(port, '127.0.0.1');
  });
}

function logTail(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/** Spawns nats-server on `conf` inside `dir` and waits until it accepts clients. */
async function launch(
  dir: string,
  conf: string,
  storeDir: string,
  timeoutMs: number,
  tlsCa?: string,
): Promise<NatsServerHandle> {
  const exe = findNatsServer();
  const confFile = join(dir, 'server.conf');
  const logFile = join(dir, 'server.log');
  writeFileSync(confFile, conf);
  installExitHook();
  const child = spawn(exe, ['-c', confFile, '--ports_file_dir', dir, '-l', logFile], { stdio: 'ignore' });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      if (!(await waitExit(child, 5000))) {
        child.kill('SIGKILL');
        await waitExit(child, 5000);
      }
    }
    live.delete(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  let port = 0;
  try {
    while (port === 0) {
      const failed = await Promise.race([spawnError, sleep(20).then(() => undefined)]);
      if (failed) throw serverError(`cannot start ${exe}: ${failed.message}`, { exe }, failed);
      if (child.exitCode !== null) {
        throw serverError(`nats-server exited with code ${child.exitCode}:\n${logTail(logFile)}`, {
          exitCode: child.exitCode,
        });
      }
      const portsFile = readdirSync(dir).find((f) => f.endsWith(`_${child.pid}.ports`));
      if (portsFile !== undefined) {
        try {
          const ports = JSON.parse(readFileSync(join(dir, portsFile), 'utf8')) as { nats?: string[] };
          const m = /:(\d+)$/.exec(ports.nats?.[0] ?? '');
          if (m) port = Number(m[1]);
        } catch {
          // partially written: read again
        }
      }
      if (port === 0 && Date.now() > deadline) {
        throw serverError(`nats-server did not report its port within ${timeoutMs} ms:\n${logTail(logFile)}`);
      }
    }
    while (!(await (tlsCa === undefined ? probeInfo(port) : probeTls(port, tlsCa)))) {
      if (Date.now() > deadline)
        throw serverError(`nats-server on port ${port} did not accept clients in time`);
      await sleep(20);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `${tlsCa === undefined ? 'nats' : 'tls'}://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    storeDir,
    get running() {
      return !stopped && child.exitCode === null && child.signalCode === null;
    },
    stop,
  };
}

/**
 * Starts a private nats-server for tests and demos: `listen: 127.0.0.1:-1` (a random free
 * port, never 4222), optional JetStream in a temporary store, optional users. Resolves once the
 * server accepts clients. Throws `TRANSPORT_SERVER` when nats-server is missing or fails to start.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  if (options.config !== undefined && typeof options.config !== 'string') {
    throw new InvalidArgumentError('config must be a string', { details: { name: 'config' } });
  }
  findNatsServer();
  let tlsCa: string | undefined;
  if (options.tls !== undefined) {
    try {
      tlsCa = readFileSync(options.tls.ca, 'utf8');
    } catch (cause) {
      throw new InvalidArgumentError(`tls.ca: cannot read ${options.tls.ca}`, {
        cause,
        details: { name: 'tls.ca', path: options.tls.ca },
      });
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'cohort-nats-'));
  const storeDir = join(dir, 'jetstream');
  const conf = [
    'listen: 127.0.0.1:-1',
    options.jetstream ? `jetstream { store_dir: ${JSON.stringify(storeDir)} }` : '',
    options.tls ? renderTlsBlock(options.tls) : '',
    options.users ? renderAuthorization(options.users) : '',
    options.config ?? '',
  ].join('\n');
  return launch(dir, conf, storeDir, options.startTimeoutMs ?? 10_000, tlsCa);
}

async function waitRouted(conns: NatsConnection[], deadline: number): Promise<void> {
  for (const [j, receiver] of conns.entries()) {
    const subject = `_cohort_probe.${nuid.next()}`;
    const got = new Set<number>();
    const sub = receiver.subscribe(subject, {
      callback: (_e, m) => {
        got.add(Number(m.string()));
      },
    });
    await receiver.flush();
    for (;;) {
      for (const [i, sender] of conns.entries())
        if (i !== j && !got.has(i)) sender.publish(subject, String(i));
      await Promise.all(conns.map((c) => c.flush()));
      await sleep(25);
      if (got.size === conns.length - 1) break;
      if (Date.now() > deadline) throw serverError(`cluster node ${j} not routed to all others in time`);
    }
    sub.unsubscribe();
  }
}

async function waitJetStream(conns: NatsConnection[], deadline: number): Promise<void> {
  for (const [i, c] of conns.entries()) {
    for (;;) {
      try {
        const r = await c.request('$JS.API.INFO', '', { timeout: 1000 });
        const info = r.json<{ error?: unknown }>();
        if (info.error === undefined) break;
      } catch {
        // not ready yet
      }
      if (Date.now() > deadline) throw serverError(`JetStream not ready on cluster node ${i} in time`);
      await sleep(100);
    }
  }
}

/**
 * Starts `size` nats-servers with JetStream as one cluster (explicit route ports, since
 * `-1` cluster ports cannot be routed to), and resolves once a message published on each node
 * reaches every other node (and, by default, JetStream answers everywhere).
 */
export async function startNatsCluster(
  size = 3,
  options: NatsClusterOptions = {},
): Promise<NatsClusterHandle> {
  if (!Number.isInteger(size) || size < 2 || size > 9) {
    throw new InvalidArgumentError(`size must be an integer in [2, 9], got ${String(size)}`, {
      details: { name: 'size', value: String(size) },
    });
  }
  findNatsServer();
  const timeoutMs = options.startTimeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  const routePorts: number[] = [];
  while (routePorts.length < size) {
    const p = await freePort();
    if (!routePorts.includes(p)) routePorts.push(p);
  }
  const clusterName = `cohort-${nuid.next().slice(-8)}`;
  const nodes: NatsServerHandle[] = [];
  const stopAll = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  const conns: NatsConnection[] = [];
  try {
    const launched = routePorts.map((rp, i) => {
      const dir = mkdtempSync(join(tmpdir(), `cohort-nats-n${i}-`));
      const storeDir = join(dir, 'jetstream');
      const routes = routePorts
        .filter((_, k) => k !== i)
        .map((p) => JSON.stringify(`nats-route://127.0.0.1:${p}`))
        .join(', ');
      const conf = [
        `server_name: ${JSON.stringify(`n${i + 1}-${clusterName}`)}`,
        'listen: 127.0.0.1:-1',
        `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
        `cluster { name: ${JSON.stringify(clusterName)}, listen: "127.0.0.1:${rp}", routes: [${routes}] }`,
        options.config ?? '',
      ].join('\n');
      return launch(dir, conf, storeDir, timeoutMs);
    });
    const settled = await Promise.allSettled(launched);
    for (const s of settled) if (s.status === 'fulfilled') nodes.push(s.value);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    for (const n of nodes) conns.push(await connect({ servers: n.url, ignoreClusterUpdates: true }));
    await waitRouted(conns, deadline);
    if (options.waitForJetStream ?? true) await waitJetStream(conns, deadline);
  } catch (err) {
    await stopAll();
    throw err;
  } finally {
    await Promise.all(conns.map((c) => c.close()));
  }
  return { nodes, urls: nodes.map((n) => n.url), stop: stopAll };
}

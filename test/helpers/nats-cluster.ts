// Real nats-server processes around a test federation's own server (the one `createLocalDeployment`
// starts, with the federation's TLS and NKEY users): restarting it on the same port and JetStream
// directory after a SIGKILL, and growing it into a three-node JetStream cluster. Every process
// started here is SIGKILLed when the test process exits without stopping it.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { findNatsServer, freePort, type NatsServerHandle } from '../../src/transport/index.ts';

/** A nats-server child started by this module. */
export interface NatsNode {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly child: ChildProcess;
  /** SIGKILL, resolves once it has exited. Idempotent. */
  kill(): Promise<void>;
}

const started = new Set<ChildProcess>();
let exitHook = false;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Resolves true once a TCP client on `port` gets the server's INFO line; false after `ms`. */
async function acceptsClients(port: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = new Socket();
      const done = (v: boolean) => {
        sock.destroy();
        resolve(v);
      };
      sock.setTimeout(1000, () => done(false));
      sock.once('error', () => done(false));
      sock.on('data', (d) => done(d.toString('latin1').startsWith('INFO ')));
      sock.connect(port, '127.0.0.1');
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** Starts nats-server on the configuration text `conf` (written to `dir/<name>.conf`) and waits for clients on `port`. */
async function launchNode(dir: string, name: string, conf: string, port: number): Promise<NatsNode> {
  const confFile = join(dir, `${name}.conf`);
  const logFile = join(dir, `${name}.log`);
  writeFileSync(confFile, conf);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const c of started) c.kill('SIGKILL');
    });
  }
  const child = spawn(findNatsServer(), ['-c', confFile, '-l', logFile], { stdio: 'ignore' });
  started.add(child);
  child.once('exit', () => started.delete(child));
  const node: NatsNode = {
    name,
    port,
    url: `tls://127.0.0.1:${port}`,
    child,
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
  };
  if (!(await acceptsClients(port, 15_000))) {
    await node.kill();
    let log = '';
    try {
      log = readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n');
    } catch {
      log = '(no log)';
    }
    throw new Error(`nats-server ${name} did not accept clients on ${port}:\n${log}`);
  }
  return node;
}

/** The configuration `startNatsServer` wrote for `server` (its directory holds `server.conf` and `jetstream/`). */
function configOf(server: NatsServerHandle): string {
  return readFileSync(join(dirname(server.storeDir), 'server.conf'), 'utf8');
}

/**
 * SIGKILLs `server` (a federation's nats-server) and, after `downMs`, starts nats-server again
 * from its own configuration on the same port and the same JetStream store directory, as an
 * operator's supervisor would. The handle's `stop()` still removes the directory; the returned
 * node must be killed by the caller.
 */
export async function restartNatsServer(server: NatsServerHandle, downMs: number): Promise<NatsNode> {
  process.kill(server.pid, 'SIGKILL');
  await new Promise((r) => setTimeout(r, downMs));
  const conf = configOf(server).replace(/^listen: .*$/m, `listen: 127.0.0.1:${server.port}`);
  return launchNode(dirname(server.storeDir), 'restarted', conf, server.port);
}

/** Client and route ports of a three-node cluster, chosen before the first node starts. */
export interface ClusterPlan {
  readonly name: string;
  readonly clientPorts: readonly [number, number, number];
  readonly routePorts: readonly [number, number, number];
  /** Every node's client URL (`tls://127.0.0.1:<port>`), for `nats.servers`. */
  readonly urls: readonly string[];
}

/** Distinct free ports (bound to port 0 and released: `-1` cannot be routed to). */
export async function planCluster(name: string): Promise<ClusterPlan> {
  const ports: number[] = [];
  while (ports.length < 6) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const clientPorts = [ports[0]!, ports[1]!, ports[2]!] as const;
  return {
    name,
    clientPorts,
    routePorts: [ports[3]!, ports[4]!, ports[5]!],
    urls: clientPorts.map((p) => `tls://127.0.0.1:${p}`),
  };
}

/**
 * The configuration lines that make node `i` (0-based) of `plan` a cluster member: its client
 * port (after `listen: 127.0.0.1:-1`, so it wins), `server_name` (JetStream clusters need one) and
 * the `cluster` block routing to the other two. Node 0's lines go into `createLocalDeployment`'s
 * `natsConfig`.
 */
export function clusterNodeConfig(plan: ClusterPlan, i: number): string {
  const routes = plan.routePorts
    .filter((_, k) => k !== i)
    .map((p) => `"nats-route://127.0.0.1:${p}"`)
    .join(', ');
  return [
    `listen: 127.0.0.1:${plan.clientPorts[i]}`,
    `server_name: "${plan.name}-n${i + 1}"`,
    `cluster { name: "${plan.name}", listen: "127.0.0.1:${plan.routePorts[i]}", routes: [${routes}] }`,
    '',
  ].join('\n');
}

/**
 * Starts nodes 2 and 3 of `plan` next to `first` (node 1, started by `createLocalDeployment` with
 * `clusterNodeConfig(plan, 0)`): the same TLS and users, each its own JetStream store directory.
 */
export async function startClusterPeers(first: NatsServerHandle, plan: ClusterPlan): Promise<NatsNode[]> {
  const base = configOf(first);
  const mine = clusterNodeConfig(plan, 0);
  if (!base.includes(mine)) throw new Error('node 1 was not started with clusterNodeConfig(plan, 0)');
  const dir = dirname(first.storeDir);
  const nodes: NatsNode[] = [];
  try {
    for (const i of [1, 2]) {
      const storeDir = join(dir, `jetstream-n${i + 1}`);
      mkdirSync(storeDir, { recursive: true });
      const conf = base
        .replace(mine, clusterNodeConfig(plan, i))
        .replace(/jetstream \{ store_dir: .* \}/, `jetstream { store_dir: ${JSON.stringify(storeDir)} }`);
      nodes.push(await launchNode(dir, `n${i + 1}`, conf, plan.clientPorts[i]!));
    }
  } catch (err) {
    await Promise.all(nodes.map((n) => n.kill()));
    throw err;
  }
  return nodes;
}

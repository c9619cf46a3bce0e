import type { LaneKeyset } from '../../../crypto/lanes/index.ts';
import { enableVerifiedCache } from '../../../crypto/signature/index.ts';
import { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { backoffDelay, sleep } from '../../retry/index.ts';
import { type AgentOptions, type AgentService, startAgent } from '../agent/index.ts';
import { SharedLogReads } from '../federation-log/index.ts';
import { envelopeTrust, loadSiteKeyset } from '../key-ceremony.ts';
import { type MemberContext, openMember, roleOf } from '../member-context.ts';
import { syntheticSiteData } from './synthetic-site-data.ts';

/** A swarm member that did not start, or halted later. */
export interface SwarmFailure {
  readonly member: string;
  /** `start`: opening the member or starting its agent failed; `halted`: the agent halted while running. */
  readonly phase: 'start' | 'halted';
  readonly error: string;
}

/** Options of {@link startSwarm}. */
export interface SwarmOptions {
  /** Site ids of the configuration to run (each once). */
  readonly members: readonly string[];
  /**
   * Synthetic training rows per site (needs a tabular data contract; see `syntheticSiteData`);
   * without it each agent loads its own data as `cohort agent` does (its IID share of MNIST).
   */
  readonly syntheticRows?: number;
  /** Members opened and started at the same time (NATS connections, TLS handshakes, log reads), default 8. */
  readonly concurrency?: number;
  /** Starts of one member tried before it is reported as failed (1 s, 2 s, … apart), default 3. */
  readonly attempts?: number;
  /** Called once per failure, as it happens. */
  readonly onFailure?: (failure: SwarmFailure) => void;
  /** Called after each member started, with the count started so far. */
  readonly onStarted?: (member: string, started: number) => void;
}

/** A running swarm. */
export interface SwarmHandle {
  /** The agents that started, by member id. */
  readonly agents: ReadonlyMap<string, AgentService>;
  /** Start failures and halts so far. */
  readonly failures: readonly SwarmFailure[];
  /** ms from the call to the last member started or failed. */
  readonly startMs: number;
  /** Stops every agent, closes its connection, frees the shared keyset; idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs many real site agents in this process (ARCHITECTURE.md, "Swarm"): for each member,
 * `openMember` (its own signing key, its own NATS connection with its own NKEY and TLS certificate,
 * so nats-server enforces its permissions) and `startAgent`. Every agent signs its updates, votes,
 * switches and heartbeats with its own key; what the members share is the process: one SEAL
 * runtime (`getCkksContext` caches it) and, under a shared key (`crypto.keys: shared`) or in `plain` mode, one
 * keyset, unwrapped once from the first member's envelope — every site holds the same CKKS secret,
 * and a keyset per agent would only multiply memory. Under threshold keys each agent loads its own
 * secret (a site's secret is its own; none is shared). A member that fails to start is reported (`onFailure`,
 * {@link SwarmHandle.failures}) after `attempts` tries and the others run on; so is an agent that
 * halts.
 *
 * @throws InvalidArgumentError when `members` is empty, holds a duplicate or a member that is not
 *   a site; CryptoError when the shared CKKS keyset (`crypto.keys: shared`) cannot be unwrapped.
 */
export async function startSwarm(config: CohortConfig, options: SwarmOptions): Promise<SwarmHandle> {
  const members = options.members;
  if (!Array.isArray(members) || members.length === 0) {
    throw new InvalidArgumentError('options.members must name at least one site');
  }
  if (new Set(members).size !== members.length) {
    throw new InvalidArgumentError('options.members names a site twice');
  }
  // Every member here reads the same log entries and checks the same votes and manifests: once per
  // process is enough. A swarm of one is a site alone in its process, which checks all itself.
  if (members.length > 1) enableVerifiedCache();
  for (const m of members) {
    if (roleOf(config, m) !== 'site') throw new InvalidArgumentError(`options.members: ${m} is not a site`);
  }
  const concurrency = options.concurrency ?? 8;
  assertInteger('options.concurrency', concurrency, 1, 1024);
  assertInteger('options.attempts', options.attempts ?? 3, 1, 100);
  const siteIds = config.members!.sites.map((s) => s.id);
  // Checked up front: a swarm without a fitting contract fails once, not once per member.
  if (options.syntheticRows !== undefined) syntheticSiteData(config, 0, options.syntheticRows);

  const t0 = performance.now();
  const swarm = new Swarm(options, members.length > 1 ? new SharedLogReads() : undefined);
  const first = await openMember(config, members[0]!);
  try {
    // Threshold keys: each site holds its own secret, dealt at the key epoch, and loads it itself.
    if (!(first.ckks instanceof ThresholdLaneContext)) {
      swarm.keyset = loadSiteKeyset(first.ckks, first.keysDir, first.member, envelopeTrust(first));
    }
  } finally {
    await first.close();
  }
  let next = 0;
  const worker = async () => {
    while (next < members.length) {
      const member = members[next++]!;
      await swarm.startMember(config, member, siteIds.indexOf(member));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, members.length) }, worker));
  swarm.startMs = performance.now() - t0;
  return swarm;
}

class Swarm implements SwarmHandle {
  readonly agents = new Map<string, AgentService>();
  readonly failures: SwarmFailure[] = [];
  startMs = 0;
  keyset: LaneKeyset | undefined;
  readonly #contexts = new Map<string, MemberContext>();
  readonly #options: SwarmOptions;
  /** The log entries every site of the swarm shares (none for a swarm of one). */
  readonly #shared: SharedLogReads | undefined;
  #stopping: Promise<void> | undefined;

  constructor(options: SwarmOptions, shared: SharedLogReads | undefined) {
    this.#options = options;
    this.#shared = shared;
  }

  #fail(member: string, phase: SwarmFailure['phase'], err: unknown): void {
    const failure = { member, phase, error: err instanceof Error ? err.message : String(err) };
    this.failures.push(failure);
    this.#options.onFailure?.(failure);
  }

  async startMember(config: CohortConfig, member: string, index: number): Promise<void> {
    const attempts = this.#options.attempts ?? 3;
    for (let attempt = 1; ; attempt++) {
      if (this.#stopping !== undefined) return;
      const err = await this.#tryStart(config, member, index);
      if (err === undefined) return;
      if (attempt >= attempts) {
        this.#fail(member, 'start', err);
        return;
      }
      // A busy host times connections out: a site retries as a reconnecting site would, spread
      // out so the sites that failed together do not all come back at once.
      await sleep(backoffDelay(attempt, { baseMs: 1000, maxMs: 8000 }));
    }
  }

  /** One start of `member`; the error when it failed. */
  async #tryStart(config: CohortConfig, member: string, index: number): Promise<unknown> {
    let ctx: MemberContext | undefined;
    try {
      ctx = await openMember(
        config,
        member,
        this.#shared === undefined ? {} : { sharedLogReads: this.#shared },
      );
      const agentOptions: AgentOptions = {
        ...(this.keyset === undefined ? {} : { keysetOverride: this.keyset }),
        ...(this.#shared === undefined ? {} : { sharedLogReads: this.#shared }),
        ...(this.#options.syntheticRows === undefined
          ? {}
          : syntheticSiteData(config, index, this.#options.syntheticRows)),
      };
      const agent = await startAgent(ctx, agentOptions);
      this.#contexts.set(member, ctx);
      this.agents.set(member, agent);
      void agent.halted.then((err) => this.#fail(member, 'halted', err));
      this.#options.onStarted?.(member, this.agents.size);
      return undefined;
    } catch (err) {
      await ctx?.close().catch(() => undefined);
      return err;
    }
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const ids = [...this.agents.keys()];
      // Agents stop in parallel batches: each waits for its current step and unsubscribes.
      for (let i = 0; i < ids.length; i += 64) {
        await Promise.allSettled(
          ids.slice(i, i + 64).map(async (id) => {
            await this.agents.get(id)!.stop();
            await this.#contexts.get(id)!.close();
          }),
        );
      }
      this.keyset?.delete();
      this.keyset = undefined;
    })();
    return this.#stopping;
  }
}

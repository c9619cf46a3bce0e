// A federation for integration tests: a LocalDeployment (key ceremony, nats-server with per-member
// users, federation.yaml), members run in this process or as `cohort` child processes, and
// teardown in reverse order, each step on its own so one failure leaves nothing running.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { CohortConfigInput } from '../../src/config/index.ts';
import type { DecisionBody } from '../../src/protocol/index.ts';
import {
  type AgentOptions,
  type AgentService,
  federationGenesis,
  startAgent,
} from '../../src/services/agent/index.ts';
import { type AggregatorService, startAggregator } from '../../src/services/aggregator/index.ts';
import {
  type CoordinatorEvent,
  type CoordinatorHandle,
  type CoordinatorOptions,
  type CoordinatorSummary,
  startCoordinator,
} from '../../src/services/coordinator/index.ts';
import { type LogEntry, LogHistory, openLogReader } from '../../src/services/federation-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import { bytesToHex, peekStoreHead } from '../../src/versions/index.ts';

const BIN = fileURLToPath(new URL('../../bin/cohort.js', import.meta.url));
export const hex = bytesToHex;

/** Polls `check` until it holds; throws naming `what` after `ms`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 30_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** SIGTERM, then SIGKILL after 2 s; resolves once the child has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
  await exited;
  clearTimeout(timer);
}

/** A member running as a `cohort` child process, with its output kept and parsed. */
export class MemberProcess {
  readonly id: string;
  readonly child: ChildProcess;
  /** stdout + stderr, last 64 KiB. */
  output = '';
  /** Every JSON line it wrote (pino logs, failpoint notices). */
  readonly events: Record<string, unknown>[] = [];
  /** Every non-JSON line of stdout or stderr (the coordinator's round lines are on stderr). */
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(id: string, child: ChildProcess) {
    this.id = id;
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        this.output = `${this.output}${line}\n`.slice(-65_536);
        if (line.startsWith('{')) {
          try {
            this.events.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            this.lines.push(line);
          }
        } else {
          this.lines.push(line);
        }
      });
    }
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Whether it logged a line whose `msg` is `msg` (and matching `fields`). */
  logged(msg: string, fields: Record<string, unknown> = {}): boolean {
    return this.events.some((e) => e.msg === msg && Object.entries(fields).every(([k, v]) => e[k] === v));
  }
}

/** Options of {@link Federation.create}. */
export interface FederationOptions {
  readonly aggregators?: number;
  readonly sites?: number;
  readonly overrides?: Partial<CohortConfigInput>;
  /** Sites configured but not enrolled yet (no keys, not in the registry): see `createLocalDeployment`. */
  readonly unenrolled?: readonly string[];
  /** Extra nats-server configuration (e.g. a fixed port, a `cluster` block: test/helpers/nats-cluster.ts). */
  readonly natsConfig?: string;
  /** Also create the operator's `admin` NATS user (every right): `dep.admin` (see `createLocalDeployment`). */
  readonly admin?: boolean;
}

/** One federation on its own nats-server, and everything a test started in it. */
export class Federation {
  readonly dep: LocalDeployment;
  readonly coord: MemberContext;
  readonly agents = new Map<string, AgentService>();
  readonly processes = new Map<string, MemberProcess>();
  readonly #cleanup: (() => Promise<unknown> | unknown)[] = [];

  private constructor(dep: LocalDeployment, coord: MemberContext) {
    this.dep = dep;
    this.coord = coord;
  }

  static async create(name: string, options: FederationOptions = {}): Promise<Federation> {
    const dir = mkdtempSync(join(tmpdir(), `cohort-${name}-`));
    let dep: LocalDeployment | undefined;
    try {
      dep = await createLocalDeployment({
        dir,
        federation: name,
        aggregators: options.aggregators ?? 2,
        sites: options.sites ?? 4,
        overrides: options.overrides ?? {},
        ...(options.unenrolled === undefined ? {} : { unenrolled: options.unenrolled }),
        ...(options.natsConfig === undefined ? {} : { natsConfig: options.natsConfig }),
        ...(options.admin === true ? { admin: true } : {}),
      });
      const f = new Federation(dep, await openMember(dep.config, dep.coordinator));
      f.#cleanup.push(
        () => rmSync(dir, { recursive: true, force: true }),
        () => dep!.stop(),
        () => f.coord.close(),
      );
      return f;
    } catch (err) {
      await dep?.stop();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  get genesis(): string {
    return hex(federationGenesis(this.dep.config).commit.hash);
  }

  async member(id: string): Promise<MemberContext> {
    const ctx = await openMember(this.dep.config, id);
    this.#cleanup.push(() => ctx.close());
    return ctx;
  }

  async startAgent(id: string, evaluate = false, options: AgentOptions = {}): Promise<AgentService> {
    const ctx = await this.member(id);
    const agent = await startAgent(ctx, { ...options, evaluate });
    this.#cleanup.push(() => agent.stop());
    this.agents.set(id, agent);
    return agent;
  }

  async startAggregator(id: string): Promise<AggregatorService> {
    const service = await startAggregator(await this.member(id));
    this.#cleanup.push(() => service.stop());
    return service;
  }

  /**
   * `cohort <role> --config … --member <id> [args]` as a child process. `env` adds variables,
   * e.g. `COHORT_FAILPOINT` (see src/services/failpoint.ts). A restarted member reuses the name.
   */
  spawn(
    role: 'coordinator' | 'aggregator' | 'agent',
    id: string,
    args: string[] = [],
    env: Record<string, string> = {},
  ): MemberProcess {
    const child = spawn(
      process.execPath,
      [BIN, role, '--config', this.dep.configPath, '--member', id, ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      },
    );
    const member = new MemberProcess(id, child);
    this.processes.set(id, member);
    // Should the test process end without teardown, do not leave the child behind.
    const onExit = () => child.kill('SIGKILL');
    process.once('exit', onExit);
    this.#cleanup.push(async () => {
      await stopChild(child);
      process.off('exit', onExit);
    });
    return member;
  }

  /**
   * Stops the in-process agent of site `id` and starts it again as a `cohort agent` process with
   * failpoint `failpoint` armed (a site that crashes or misbehaves at one step), logging at info.
   */
  async agentProcessInstead(id: string, failpoint: string): Promise<MemberProcess> {
    await this.agents.get(id)?.stop();
    this.agents.delete(id);
    return this.spawn('agent', id, ['--set', 'log.level=info'], { COHORT_FAILPOINT: failpoint });
  }

  /** The output of every child process, for a failing test's report. */
  dumpOutput(): string {
    return [...this.processes.values()].map((p) => `--- ${p.id} ---\n${p.output}`).join('\n');
  }

  /** Starts the coordinator in this process; `stop` is registered so an unfinished run is ended. */
  runCoordinator(
    rounds: number,
    onEvent: (e: CoordinatorEvent) => void = () => {},
    options: CoordinatorOptions = {},
  ): Promise<CoordinatorSummary> {
    return this.startCoordinator({ rounds, onEvent, switchWaitMs: 5000, ...options }).done;
  }

  /**
   * A coordinator running rounds until stopped, and the decisions it makes, in order, as they come
   * (round, commit, contributors).
   */
  startDecidingCoordinator(): {
    readonly coordinator: CoordinatorHandle;
    readonly decided: readonly { round: number; commit: boolean; contributors: number }[];
  } {
    const decided: { round: number; commit: boolean; contributors: number }[] = [];
    const coordinator = this.startCoordinator({
      rounds: 1000,
      switchWaitMs: 5000,
      onEvent: (e) => {
        if (e.type === 'decision') {
          const { round, commit, contributors } = e.summary;
          decided.push({ round, commit, contributors });
        }
      },
    });
    return { coordinator, decided };
  }

  startCoordinator(options: CoordinatorOptions): CoordinatorHandle {
    const handle = startCoordinator(this.coord, options);
    this.#cleanup.push(() => handle.stop());
    // A test that never awaits `done` still hears of a coordinator that died (not as an unhandled
    // rejection, which fails the whole run, but on stderr; its own assertions then fail or not).
    handle.done.catch((err: unknown) => {
      process.stderr.write(
        `coordinator of ${this.dep.config.federation.id} ended: ${(err as Error)?.message ?? err}\n`,
      );
    });
    return handle;
  }

  /** Every entry of the log, verified (signatures, hash chain, history rules: {@link LogHistory}). */
  async logEntries(): Promise<LogEntry[]> {
    const reader = await openLogReader(this.coord.transport.connection, {
      federation: this.dep.config.federation.id,
      coordinator: this.coord.member,
      keys: this.coord.keys,
    });
    const history = new LogHistory(federationGenesis(this.dep.config).commit);
    const out: LogEntry[] = [];
    for await (const e of reader.entries()) {
      history.apply(e);
      out.push(e);
    }
    return out;
  }

  /** The log's decisions, in order (entries verified as in {@link logEntries}). */
  async decisions(): Promise<(DecisionBody & { sequence: number })[]> {
    return (await this.logEntries())
      .filter((e) => e.record.decision)
      .map((e) => ({ ...e.record.decision!, sequence: e.sequence }));
  }

  /**
   * The head commit of a site's model store on disk (`<dataDir>/<site>`), read without opening
   * the store (which would tidy it under the running agent).
   */
  storeHead(site: string): { hash: string; model: string; height: number } | null {
    const head = peekStoreHead(join(this.dep.config.paths.dataDir, site));
    return head === null ? null : { hash: hex(head.hash), model: hex(head.modelHash), height: head.height };
  }

  async stop(): Promise<void> {
    while (this.#cleanup.length > 0) {
      const step = this.#cleanup.pop()!;
      try {
        await step();
      } catch (err) {
        console.error('teardown step failed:', err);
      }
    }
  }
}

/**
 * The log is one chain of decisions (LogHistory already refused anything else while reading):
 * rounds strictly increasing, each decided once, every COMMIT's parent the previous COMMIT
 * (genesis for the first), heights counting commits, an ABORT leaving the head.
 */
export function expectSingleChain(
  decisions: readonly (DecisionBody & { sequence: number })[],
  genesis: string,
): void {
  let head = genesis;
  let height = 0;
  let lastRound = 0;
  let lastSequence = 0;
  for (const d of decisions) {
    expect(d.sequence).toBeGreaterThan(lastSequence);
    lastSequence = d.sequence;
    expect(d.round).toBeGreaterThan(lastRound);
    lastRound = d.round;
    expect(hex(d.parent)).toBe(head);
    if (d.commit) {
      height++;
      expect(d.height).toBe(height);
      head = hex(d.commitHash);
    } else {
      expect(d.height).toBe(height);
    }
  }
}

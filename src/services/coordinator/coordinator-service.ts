import { type ObjectStore, Objm, StorageType } from '@nats-io/obj';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import {
  AggregateBuilder,
  type Assignment,
  BlockVerifier,
  type ControlBodies,
  codecEncoding,
  type Encoding,
  FRAME_KIND,
  openControl,
  type RoundContext,
  sealControl,
  UpdateInbox,
} from '../../protocol/index.ts';
import type { InboundMessage, TransportSubscription } from '../../transport/index.ts';
import { assignBounded, createRing } from '../../tree/index.ts';
import { bytesToHex, commitHash } from '../../versions/index.ts';
import { type DecisionEntry, type DecisionLog, openDecisionLog } from '../decision-log/index.ts';
import type { MemberContext } from '../member-context.ts';
import { federationGenesis } from './genesis.ts';
import { aggregateDigest, encodeAggregateObject, encodeRoundParams } from './round-params.ts';

/** Options of {@link startCoordinator}. */
export interface CoordinatorOptions {
  /**
   * The round to stop after (default `round.count`; 0: until stopped). Rounds are the log's: a
   * coordinator restarted on a log that ends at round 3 with `rounds: 5` runs rounds 4 and 5.
   */
  readonly rounds?: number;
  /** Called for every event (membership, round steps, decisions, switches); errors it throws are ignored. */
  readonly onEvent?: (event: CoordinatorEvent) => void;
  /** Wait for partials this long after the round's deadline (default 2000 ms). */
  readonly graceMs?: number;
  /** After the last round, wait this long at most for the sites' `switched` (default 2000 ms). */
  readonly switchWaitMs?: number;
}

/** What the coordinator reports as it goes. */
export type CoordinatorEvent =
  | { readonly type: 'started'; readonly round: number; readonly head: string; readonly height: number }
  | {
      readonly type: 'member';
      readonly member: string;
      readonly role: MemberRoleName;
      readonly joined: boolean;
    }
  | { readonly type: 'readmitted'; readonly member: string }
  | {
      readonly type: 'round-open';
      readonly round: number;
      readonly assignments: readonly Assignment[];
      readonly clip: number;
      readonly totalExamples: number;
      readonly deadlineUnixMs: number;
    }
  | {
      readonly type: 'partial';
      readonly round: number;
      readonly aggregator: string;
      readonly sites: readonly string[];
    }
  | { readonly type: 'rejected'; readonly round: number; readonly from: string; readonly reason: string }
  | {
      readonly type: 'prepare';
      readonly round: number;
      readonly contributors: number;
      readonly aggregateDigest: string;
      readonly bytes: number;
    }
  | {
      readonly type: 'vote';
      readonly round: number;
      readonly member: string;
      readonly yes: boolean;
      readonly reason: string;
    }
  | { readonly type: 'decision'; readonly summary: RoundSummary }
  | {
      readonly type: 'switched';
      readonly round: number;
      readonly member: string;
      readonly latencyMs: number;
      readonly testAccuracy: number | undefined;
    };

type MemberRoleName = 'site' | 'aggregator';

/** One decided round. */
export interface RoundSummary {
  readonly round: number;
  readonly commit: boolean;
  /** Why it aborted ('' on COMMIT). */
  readonly reason: string;
  /** Sites whose updates are in the aggregate. */
  readonly contributors: number;
  /** Sites assigned (m). */
  readonly participants: number;
  /** Hex commit hash on COMMIT. */
  readonly commitHash: string | undefined;
  readonly height: number;
  readonly logSequence: number;
  /** Bytes of the stored aggregate (0 without one). */
  readonly aggregateBytes: number;
  /** Bytes the sites sent this round (blocks and manifests, as reported in their votes). */
  readonly uploadBytes: number;
  /** From RoundOpen to the decision's publication. */
  readonly durationMs: number;
  /** Sites that voted NO (excluded until they report a head committed after this round). */
  readonly noVoters: readonly string[];
}

/** What {@link CoordinatorHandle.done} resolves with. */
export interface CoordinatorSummary {
  readonly rounds: readonly RoundSummary[];
  readonly committed: number;
  readonly aborted: number;
  /** Head after the run: hex commit hash and height. */
  readonly head: string;
  readonly height: number;
  /** Decision publication → site `switchedUnixMs`, over every COMMIT of this run. */
  readonly switchLatency: {
    readonly count: number;
    readonly p50Ms: number | undefined;
    readonly p99Ms: number | undefined;
  };
  /** Mean test accuracy reported (≥ 0) for the latest COMMIT that had any report. */
  readonly testAccuracy: number | undefined;
  /** True when {@link CoordinatorHandle.stop} ended the run early. */
  readonly stopped: boolean;
}

/** Live counters. */
export interface CoordinatorStats {
  readonly phase: 'starting' | 'waiting' | 'collecting' | 'voting' | 'deciding' | 'done';
  readonly round: number;
  readonly head: string;
  readonly height: number;
  readonly liveSites: readonly string[];
  readonly liveAggregators: readonly string[];
  readonly excluded: readonly string[];
  readonly committed: number;
  readonly aborted: number;
  /** Refused heartbeats, partials, votes and switches. */
  readonly rejected: number;
}

/** A running coordinator. */
export interface CoordinatorHandle {
  /** Resolves after the last round (or stop); rejects when the log cannot be written or read. */
  readonly done: Promise<CoordinatorSummary>;
  /** Ends the run at the next wait point (an undecided round is left undecided) and unsubscribes. */
  stop(): Promise<void>;
  stats(): CoordinatorStats;
}

interface MemberView {
  readonly role: MemberRoleName;
  lastSeen: number;
  examples: number;
  head: Uint8Array;
  state: string;
}

interface Head {
  hash: Uint8Array;
  height: number;
}

interface PartialInbox {
  readonly verifier: BlockVerifier;
  /** The aggregator's partial as it arrives (blocks and manifest, one update digest). */
  readonly update: UpdateInbox;
}

interface RoundState {
  readonly round: number;
  readonly context: RoundContext;
  readonly encoding: Encoding;
  readonly assignment: ReadonlyMap<string, string>;
  readonly aggregators: ReadonlySet<string>;
  readonly inboxes: Map<string, PartialInbox>;
  readonly delivered: Set<string>;
  readonly builder: AggregateBuilder;
  phase: 'collecting' | 'closed' | 'voting' | 'decided';
  readonly votes: Map<string, ControlBodies['vote']>;
}

interface SwitchRecord {
  readonly publishedAt: number;
  readonly commitHash: Uint8Array;
  readonly expected: ReadonlySet<string>;
  readonly latencies: Map<string, number>;
  readonly accuracies: Map<string, number>;
}

const EMPTY = new Uint8Array(0);

/**
 * Starts the coordinator of `ctx`'s federation (steps 1, 4, 6 and 8 of docs/round-protocol.md):
 * reads the decision log to learn the head and the next round, tracks membership from signed
 * heartbeats, and runs rounds (open → collect partials → prepare → collect votes → log the
 * decision → announce it) until `rounds`. The decision log is the truth: a round number that is
 * in the log is never decided again.
 */
export function startCoordinator(ctx: MemberContext, options: CoordinatorOptions = {}): CoordinatorHandle {
  const c = new Coordinator(ctx, options);
  return { done: c.run(), stop: () => c.stop(), stats: () => c.stats() };
}

class Coordinator {
  readonly #ctx: MemberContext;
  readonly #options: CoordinatorOptions;
  readonly #members = new Map<string, MemberView>();
  readonly #roles = new Map<string, MemberRoleName>();
  readonly #capacity = new Map<string, number>();
  /**
   * NO voters, with the head height when they voted NO. A NO always aborts, so the voter's head
   * still equals the coordinator's right after: it is readmitted only once it reports a head
   * committed after its NO vote (it prepared and switched along as a non-voter), not on its next
   * heartbeat — else it would be a voter again in the very next round and veto it too.
   */
  readonly #excluded = new Map<string, number>();
  readonly #switches = new Map<number, SwitchRecord>();
  readonly #summaries: RoundSummary[] = [];
  readonly #subscriptions: TransportSubscription[] = [];
  readonly #waiters = new Set<() => void>();
  #log: DecisionLog | undefined;
  #objects: ObjectStore | undefined;
  #head: Head = { hash: EMPTY, height: 0 };
  #round: RoundState | undefined;
  #roundNumber = 0;
  #clip: number;
  #phase: CoordinatorStats['phase'] = 'starting';
  #stopping = false;
  #rejected = 0;
  #runPromise: Promise<CoordinatorSummary> | undefined;

  constructor(ctx: MemberContext, options: CoordinatorOptions) {
    if (ctx.role !== 'coordinator') {
      throw new CohortError('NOT_COORDINATOR', `member ${ctx.member} is a ${ctx.role}, not the coordinator`);
    }
    this.#ctx = ctx;
    this.#options = options;
    for (const a of ctx.members.aggregators) {
      this.#roles.set(a.id, 'aggregator');
      this.#capacity.set(a.id, a.capacity);
    }
    for (const s of ctx.members.sites) this.#roles.set(s.id, 'site');
    this.#clip = ctx.config.codec.clip;
  }

  run(): Promise<CoordinatorSummary> {
    this.#runPromise ??= this.#run().finally(() => this.#teardown());
    return this.#runPromise;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake();
    await this.#runPromise?.catch(() => undefined);
  }

  stats(): CoordinatorStats {
    return {
      phase: this.#phase,
      round: this.#roundNumber,
      head: bytesToHex(this.#head.hash),
      height: this.#head.height,
      liveSites: this.#live('site'),
      liveAggregators: this.#live('aggregator'),
      excluded: [...this.#excluded.keys()].sort(),
      committed: this.#summaries.filter((s) => s.commit).length,
      aborted: this.#summaries.filter((s) => !s.commit).length,
      rejected: this.#rejected,
    };
  }

  // ---- main loop ----

  async #run(): Promise<CoordinatorSummary> {
    const ctx = this.#ctx;
    const cfg = ctx.config;
    const nc = ctx.transport.connection;
    this.#log = await openDecisionLog(nc, cfg.federation.id, ctx.signing, ctx.member, { keys: ctx.keys });
    let lastRound = 0;
    let head: Head | undefined;
    for await (const entry of this.#log.entries()) {
      lastRound = Math.max(lastRound, entry.body.round);
      if (entry.body.commit) head = { hash: entry.body.commitHash, height: entry.body.height };
    }
    this.#head = head ?? { hash: federationGenesis(cfg).commit.hash, height: 0 };
    this.#roundNumber = lastRound + 1;
    this.#emit({
      type: 'started',
      round: this.#roundNumber,
      head: bytesToHex(this.#head.hash),
      height: this.#head.height,
    });

    this.#subscribe();
    await Promise.all(this.#subscriptions.map((s) => s.ready()));

    const last = this.#options.rounds ?? cfg.round.count;
    const quorum = cfg.round.quorum ?? this.#roles.size;
    this.#phase = 'waiting';
    // Round 1 waits for the quorum; a restarted coordinator waits at most one liveness window (a
    // member silent that long is gone anyway), then runs with whoever is live.
    const window = cfg.round.missedHeartbeats * cfg.round.heartbeatMs;
    await this.#until(
      () => this.#live('site').length + this.#live('aggregator').length >= quorum,
      this.#roundNumber === 1 ? Infinity : Date.now() + window,
    );

    while (!this.#stopping && (last === 0 || this.#roundNumber <= last)) {
      const summary = await this.#runRound(this.#roundNumber);
      if (summary === undefined) break; // stopped
      this.#summaries.push(summary);
      this.#emit({ type: 'decision', summary });
      this.#roundNumber++;
    }
    const lastCommit = [...this.#summaries].reverse().find((s) => s.commit);
    if (lastCommit && !this.#stopping) {
      const record = this.#switches.get(lastCommit.round);
      const waitMs = this.#options.switchWaitMs ?? 2000;
      if (record) {
        await this.#until(
          () => [...record.expected].every((m) => record.latencies.has(m)),
          Date.now() + waitMs,
        );
      }
    }
    this.#phase = 'done';
    return this.#summary();
  }

  /** One round; undefined when stopped before it was decided. */
  async #runRound(round: number): Promise<RoundSummary | undefined> {
    const ctx = this.#ctx;
    const cfg = ctx.config;
    this.#phase = 'waiting';
    const ready = await this.#until(
      () => this.#live('aggregator').length > 0 && this.#eligibleSites().length > 0,
      Infinity,
    );
    if (!ready) return undefined;
    const started = Date.now();
    const aggregators = this.#live('aggregator');
    let sites = this.#eligibleSites();
    if (sites.length > cfg.codec.maxContributors) {
      ctx.log.warn(
        { round, sites: sites.length, maxContributors: cfg.codec.maxContributors },
        'more live sites than codec.maxContributors; the rest sit this round out',
      );
      sites = sites.slice(0, cfg.codec.maxContributors);
    }
    const ring = createRing(aggregators.map((id) => ({ id, capacity: this.#capacity.get(id) ?? 1 })));
    const assignment = assignBounded(ring, sites, cfg.round.epsilon);
    const assignments: Assignment[] = [...assignment]
      .map(([site, aggregator]) => ({ site, aggregator }))
      .sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
    const clip = Math.fround(this.#clip);
    const totalExamples = sites.reduce((n, s) => n + (this.#members.get(s)?.examples ?? 0), 0);
    const context: RoundContext = {
      federation: cfg.federation.id,
      round,
      baseCommit: this.#head.hash,
      version: this.#head.height,
    };
    const encoding = codecEncoding(ctx.ckks, {
      bits: cfg.codec.bits,
      clip,
      maxContributors: cfg.codec.maxContributors,
      crcChunkBytes: cfg.codec.crcChunkBytes,
    });
    const deadlineUnixMs = Date.now() + cfg.round.deadlineMs;
    const state: RoundState = {
      round,
      context,
      encoding,
      assignment,
      aggregators: new Set(assignment.values()),
      inboxes: new Map(),
      delivered: new Set(),
      builder: new AggregateBuilder(ctx.ckks),
      phase: 'collecting',
      votes: new Map(),
    };
    this.#round = state;
    this.#phase = 'collecting';
    const open: ControlBodies['round-open'] = {
      federation: cfg.federation.id,
      round,
      version: this.#head.height,
      baseCommit: this.#head.hash,
      assignments,
      bits: cfg.codec.bits,
      clip,
      maxContributors: cfg.codec.maxContributors,
      crcChunkBytes: cfg.codec.crcChunkBytes,
      deadlineUnixMs,
      totalExamples,
    };
    await ctx.transport.publish(
      ctx.subjects.roundOpen,
      sealControl('round-open', open, ctx.member, ctx.signing),
    );
    this.#emit({ type: 'round-open', round, assignments, clip, totalExamples, deadlineUnixMs });
    ctx.log.info(
      { round, sites: assignments.length, aggregators: state.aggregators.size, clip },
      'round open',
    );

    await this.#until(
      () => state.delivered.size === state.aggregators.size,
      deadlineUnixMs + (this.#options.graceMs ?? 2000),
    );
    state.phase = 'closed';
    if (this.#stopping) {
      state.builder.dispose();
      return undefined;
    }
    const params = encodeRoundParams({
      round,
      bits: cfg.codec.bits,
      clip,
      strategy: cfg.learning.strategy,
      learningRate: cfg.learning.learningRate,
    });
    const base = { round, participants: assignments.length, started };
    if (state.builder.contributors === 0) {
      state.builder.dispose();
      return this.#decide(
        state,
        { ...base, contributors: 0, digest: EMPTY, aggregateBytes: 0 },
        'no contributions',
      );
    }
    const aggregate = state.builder.finish();
    const object = encodeAggregateObject(aggregate.ciphertexts);
    const digest = aggregateDigest(aggregate.ciphertexts);
    const info = { ...base, contributors: aggregate.contributors, digest, aggregateBytes: object.length };
    try {
      this.#objects ??= await new Objm(ctx.transport.connection).create(
        `cohort-${cfg.federation.id}-aggregates`,
        { storage: StorageType.File, description: `Cohort ${cfg.federation.id}: aggregate of each round` },
      );
      await this.#objects.putBlob({ name: `round-${round}` }, object);
    } catch (err) {
      ctx.log.error({ round, err }, 'cannot store the aggregate');
      return this.#decide(state, info, `cannot store the aggregate: ${(err as Error).message}`);
    }
    const prepare: ControlBodies['prepare'] = {
      federation: cfg.federation.id,
      round,
      version: this.#head.height,
      baseCommit: this.#head.hash,
      aggregateDigest: digest,
      contributors: [...aggregate.sites],
      totalWeight: aggregate.totalWeight,
      participants: assignments.length,
      totalExamples,
      encoding: aggregate.encoding,
      totalParams: aggregate.totalParams,
      ciphertexts: [...aggregate.ciphertexts],
      params,
    };
    state.phase = 'voting';
    this.#phase = 'voting';
    await ctx.transport.publish(
      ctx.subjects.prepare,
      sealControl('prepare', prepare, ctx.member, ctx.signing),
    );
    this.#emit({
      type: 'prepare',
      round,
      contributors: aggregate.contributors,
      aggregateDigest: bytesToHex(digest),
      bytes: object.length,
    });
    const voters = this.#eligibleSites();
    await this.#until(() => voters.every((v) => state.votes.has(v)), Date.now() + cfg.round.voteTimeoutMs);
    if (this.#stopping) return undefined;
    state.phase = 'decided';
    return this.#decide(state, info, this.#judge(state, voters, digest, params), voters);
  }

  /** Why the round cannot commit, or '' when every voter agreed on the coordinator's own commit. */
  #judge(state: RoundState, voters: readonly string[], digest: Uint8Array, params: Uint8Array): string {
    if (voters.length === 0) return 'no live site to vote';
    const no = voters.filter((v) => state.votes.get(v)?.yes === false);
    if (no.length > 0) {
      return `NO from ${no.map((v) => `${v} (${state.votes.get(v)?.reason || 'no reason'})`).join(', ')}`;
    }
    const missing = voters.filter((v) => !state.votes.has(v));
    if (missing.length > 0) {
      return `no vote from ${missing.join(', ')} within ${this.#ctx.config.round.voteTimeoutMs} ms`;
    }
    const votes = voters.map((v) => state.votes.get(v)!);
    const first = votes[0]!;
    if (!votes.every((v) => bytesEqual(v.commitHash, first.commitHash)))
      return 'votes name different commit hashes';
    if (!votes.every((v) => bytesEqual(v.modelHash, first.modelHash)))
      return 'votes name different model hashes';
    let expected: Uint8Array;
    try {
      expected = commitHash({
        parent: this.#head.hash,
        height: this.#head.height + 1,
        round: state.round,
        aggregateDigest: digest,
        modelHash: first.modelHash,
        params,
        kind: 'round',
      });
    } catch (err) {
      return `votes carry an unusable model hash: ${(err as Error).message}`;
    }
    if (!bytesEqual(expected, first.commitHash)) {
      return `voted commit hash ${bytesToHex(first.commitHash).slice(0, 12)} is not the commit of (head, round, aggregate, model, params), ${bytesToHex(expected).slice(0, 12)}`;
    }
    return '';
  }

  /** Appends the decision to the log (the decision is final then), then announces it. */
  async #decide(
    state: RoundState,
    info: {
      round: number;
      participants: number;
      started: number;
      contributors: number;
      digest: Uint8Array;
      aggregateBytes: number;
    },
    reason: string,
    voters: readonly string[] = [],
  ): Promise<RoundSummary> {
    const ctx = this.#ctx;
    this.#phase = 'deciding';
    state.phase = 'decided';
    const commit = reason === '';
    const yes = voters.filter((v) => state.votes.get(v)?.yes === true);
    const noVoters = voters.filter((v) => state.votes.get(v)?.yes === false);
    const first = yes.length > 0 ? state.votes.get(yes[0]!) : undefined;
    const entry: DecisionEntry = {
      federation: ctx.config.federation.id,
      round: info.round,
      commit,
      commitHash: commit && first ? first.commitHash : EMPTY,
      modelHash: commit && first ? first.modelHash : EMPTY,
      parent: this.#head.hash,
      height: commit ? this.#head.height + 1 : this.#head.height,
      aggregateDigest: info.digest,
      voters: [...state.votes.keys()].filter((v) => voters.includes(v)).sort(),
      reason,
    };
    const { sequence, bytes } = await this.#log!.append(entry);
    for (const v of noVoters) this.#excluded.set(v, this.#head.height);
    if (commit) {
      this.#head = { hash: entry.commitHash, height: entry.height };
      const rms = yes
        .map((v) => state.votes.get(v)!.meanUpdateRms)
        .filter((x) => Number.isFinite(x) && x > 0);
      if (rms.length > 0) {
        const next = ctx.config.round.clipMultiplier * (rms.reduce((a, b) => a + b, 0) / rms.length);
        if (Number.isFinite(next) && Math.fround(next) > 0) this.#clip = next;
      }
      this.#switches.set(info.round, {
        publishedAt: Date.now(),
        commitHash: entry.commitHash,
        expected: new Set(yes),
        latencies: new Map(),
        accuracies: new Map(),
      });
    }
    try {
      await ctx.transport.publish(ctx.subjects.decision, bytes);
    } catch (err) {
      // The log holds the decision; members that missed the broadcast read it there.
      ctx.log.error({ round: info.round, err }, 'decision logged but not announced');
    }
    if (this.#round === state) this.#round = undefined;
    ctx.log.info({ round: info.round, commit, reason, sequence }, 'decision');
    return {
      round: info.round,
      commit,
      reason,
      contributors: info.contributors,
      participants: info.participants,
      commitHash: commit ? bytesToHex(entry.commitHash) : undefined,
      height: entry.height,
      logSequence: sequence,
      aggregateBytes: info.aggregateBytes,
      uploadBytes: [...state.votes.values()].reduce(
        (a, v) => a + (Number.isSafeInteger(v.bytesSent) && v.bytesSent > 0 ? v.bytesSent : 0),
        0,
      ),
      durationMs: Date.now() - info.started,
      noVoters,
    };
  }

  #summary(): CoordinatorSummary {
    const latencies: number[] = [];
    for (const r of this.#switches.values()) latencies.push(...r.latencies.values());
    latencies.sort((a, b) => a - b);
    let testAccuracy: number | undefined;
    const rounds = [...this.#switches.keys()].sort((a, b) => b - a);
    for (const r of rounds) {
      const acc = [...this.#switches.get(r)!.accuracies.values()];
      if (acc.length > 0) {
        testAccuracy = acc.reduce((a, b) => a + b, 0) / acc.length;
        break;
      }
    }
    return {
      rounds: [...this.#summaries],
      committed: this.#summaries.filter((s) => s.commit).length,
      aborted: this.#summaries.filter((s) => !s.commit).length,
      head: bytesToHex(this.#head.hash),
      height: this.#head.height,
      switchLatency: {
        count: latencies.length,
        p50Ms: percentile(latencies, 0.5),
        p99Ms: percentile(latencies, 0.99),
      },
      testAccuracy,
      stopped: this.#stopping,
    };
  }

  // ---- membership ----

  /** Members of `role` seen within missedHeartbeats × heartbeatMs, sorted. */
  #live(role: MemberRoleName): string[] {
    const window = this.#ctx.config.round.missedHeartbeats * this.#ctx.config.round.heartbeatMs;
    const now = Date.now();
    const out: string[] = [];
    for (const [id, m] of this.#members) if (m.role === role && now - m.lastSeen <= window) out.push(id);
    return out.sort();
  }

  /** Live sites not excluded for a NO vote. */
  #eligibleSites(): string[] {
    return this.#live('site').filter((s) => !this.#excluded.has(s));
  }

  // ---- subscriptions ----

  #subscribe(): void {
    const ctx = this.#ctx;
    const s = ctx.subjects;
    const sub = (pattern: (token: string) => string, handler: (id: string, msg: InboundMessage) => void) => {
      const prefix = pattern('_').slice(0, -1);
      this.#subscriptions.push(
        ctx.transport.subscribe(
          `${prefix}*`,
          async (msg) => {
            const id = msg.subject.slice(prefix.length);
            try {
              handler(id, msg);
            } catch (err) {
              this.#rejected++;
              const reason = err instanceof CohortError ? err.code : 'ERROR';
              this.#emit({
                type: 'rejected',
                round: this.#round?.round ?? this.#roundNumber,
                from: id,
                reason,
              });
              ctx.log.warn({ subject: msg.subject, reason, message: (err as Error).message }, 'refused');
              throw err;
            }
          },
          { onError: () => undefined },
        ),
      );
    };
    sub(
      (t) => s.heartbeat(t),
      (id, msg) => this.#onHeartbeat(id, msg.data),
    );
    sub(
      (t) => s.partial(t),
      (id, msg) => this.#onPartial(id, msg.data),
    );
    sub(
      (t) => s.vote(t),
      (id, msg) => this.#onVote(id, msg.data),
    );
    sub(
      (t) => s.switched(t),
      (id, msg) => this.#onSwitched(id, msg.data),
    );
  }

  #opened<T extends 'heartbeat' | 'vote' | 'switched'>(
    type: T,
    id: string,
    data: Uint8Array,
  ): ControlBodies[T] {
    const m = openControl(data, type, this.#ctx.keys);
    const body = m.body as ControlBodies[T] & { federation: string; member: string };
    if (m.signer !== id || body.member !== id) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `${type} on the subject of ${JSON.stringify(id)} is signed by ${JSON.stringify(m.signer)} for ${JSON.stringify(body.member)}`,
      );
    }
    if (body.federation !== this.#ctx.config.federation.id) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${type} of ${id} is for federation ${JSON.stringify(body.federation)}`,
      );
    }
    return body;
  }

  #onHeartbeat(id: string, data: Uint8Array): void {
    const role = this.#roles.get(id);
    if (role === undefined)
      throw new BlockRejectedError('WRONG_SIGNER', `${id} is no site or aggregator of this federation`);
    const hb = this.#opened('heartbeat', id, data);
    if (hb.role !== role) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `heartbeat of ${id} says role ${JSON.stringify(hb.role)}, it is a ${role}`,
      );
    }
    const known = this.#members.get(id);
    const wasLive = known !== undefined && this.#live(role).includes(id);
    const view: MemberView = known ?? { role, lastSeen: 0, examples: 0, head: EMPTY, state: '' };
    view.lastSeen = Date.now();
    view.examples = role === 'site' && Number.isFinite(hb.examples) && hb.examples > 0 ? hb.examples : 0;
    view.head = hb.head;
    view.state = hb.state;
    this.#members.set(id, view);
    if (!wasLive) this.#emit({ type: 'member', member: id, role, joined: true });
    const excludedAt = this.#excluded.get(id);
    if (excludedAt !== undefined && this.#head.height > excludedAt && bytesEqual(hb.head, this.#head.hash)) {
      this.#excluded.delete(id);
      this.#emit({ type: 'readmitted', member: id });
    }
    this.#wake();
  }

  #onPartial(aggregator: string, data: Uint8Array): void {
    const state = this.#round;
    if (state === undefined || state.phase !== 'collecting') {
      throw new CohortError(
        'ROUND_CLOSED',
        `no round is collecting partials now (round ${this.#roundNumber})`,
      );
    }
    if (!state.aggregators.has(aggregator)) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `${aggregator} is not an aggregator of round ${state.round}`,
      );
    }
    if (state.delivered.has(aggregator)) {
      throw new BlockRejectedError(
        'DUPLICATE',
        `the partial of ${aggregator} for round ${state.round} is already in`,
      );
    }
    let inbox = state.inboxes.get(aggregator);
    if (inbox === undefined) {
      const key = this.#ctx.registry.get(aggregator);
      inbox = {
        verifier: new BlockVerifier({
          context: state.context,
          ckksParamsId: this.#ctx.ckks.paramsId,
          encoding: state.encoding,
          // Only this aggregator's key: a partial on its subject signed by anyone else is WRONG_SIGNER.
          keys: (signer) => (signer === aggregator ? key : undefined),
          allowedAlgorithms: this.#ctx.config.crypto.signature.allowed,
        }),
        update: new UpdateInbox(),
      };
      state.inboxes.set(aggregator, inbox);
    }
    const kind = data[5];
    if (kind === FRAME_KIND.block) {
      inbox.update.addBlock(inbox.verifier.verifyBlock(data));
      return;
    }
    if (kind !== FRAME_KIND.manifest) {
      throw new BlockRejectedError('MALFORMED', `frame kind ${String(kind)} on the partial subject`);
    }
    const manifest = inbox.verifier.verifyManifest(data);
    if (manifest.contributorList.length === 0) {
      throw new BlockRejectedError('BAD_HEADER', `the partial of ${aggregator} lists no contributors`);
    }
    const foreign = manifest.contributorList.filter((c) => state.assignment.get(c.site) !== aggregator);
    if (foreign.length > 0) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `the partial of ${aggregator} lists ${foreign.map((c) => c.site).join(', ')}, not assigned to it in round ${state.round}`,
      );
    }
    inbox.update.addManifest(manifest);
    const update = inbox.update.assemble();
    state.builder.add(update);
    state.delivered.add(aggregator);
    state.inboxes.delete(aggregator);
    this.#emit({ type: 'partial', round: state.round, aggregator, sites: update.sites.map((c) => c.site) });
    this.#wake();
  }

  #onVote(site: string, data: Uint8Array): void {
    if (this.#roles.get(site) !== 'site')
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site`);
    const vote = this.#opened('vote', site, data);
    const state = this.#round;
    if (state === undefined || state.round !== vote.round || state.phase !== 'voting') {
      throw new CohortError(
        'VOTE_REFUSED',
        `vote of ${site} for round ${vote.round}: round ${this.#round?.round ?? this.#roundNumber} is not collecting votes`,
      );
    }
    const earlier = state.votes.get(site);
    if (earlier !== undefined) {
      if (earlier.yes === vote.yes && bytesEqual(earlier.commitHash, vote.commitHash)) return;
      throw new BlockRejectedError(
        'DUPLICATE',
        `${site} already voted ${earlier.yes ? 'YES' : 'NO'} in round ${state.round}`,
      );
    }
    state.votes.set(site, vote);
    this.#emit({ type: 'vote', round: state.round, member: site, yes: vote.yes, reason: vote.reason });
    this.#wake();
  }

  #onSwitched(site: string, data: Uint8Array): void {
    if (this.#roles.get(site) !== 'site')
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site`);
    const sw = this.#opened('switched', site, data);
    const record = this.#switches.get(sw.round);
    if (record === undefined || !bytesEqual(record.commitHash, sw.commitHash)) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${site} switched to a commit this coordinator did not announce`,
      );
    }
    const latencyMs = Math.max(0, sw.switchedUnixMs - record.publishedAt);
    record.latencies.set(site, latencyMs);
    const accuracy = Number.isFinite(sw.testAccuracy) && sw.testAccuracy >= 0 ? sw.testAccuracy : undefined;
    if (accuracy !== undefined) record.accuracies.set(site, accuracy);
    this.#emit({ type: 'switched', round: sw.round, member: site, latencyMs, testAccuracy: accuracy });
    this.#wake();
  }

  // ---- plumbing ----

  #emit(event: CoordinatorEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // a failing listener must not break the coordinator
    }
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  /**
   * Waits until `condition` holds (true), the deadline passes (the condition's value then) or the
   * coordinator stops (false). Re-checks on every event and at least every heartbeat interval, as
   * liveness changes with time alone.
   */
  async #until(condition: () => boolean, deadline: number): Promise<boolean> {
    const poll = Math.min(250, this.#ctx.config.round.heartbeatMs);
    while (!condition()) {
      if (this.#stopping) return false;
      const left = deadline - Date.now();
      if (left <= 0) return condition();
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, poll));
        this.#waiters.add(done);
      });
    }
    return !this.#stopping || condition();
  }

  async #teardown(): Promise<void> {
    this.#round?.builder.dispose();
    this.#round = undefined;
    await Promise.all(this.#subscriptions.map((s) => s.unsubscribe()));
    this.#subscriptions.length = 0;
  }
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

import { type ObjectStore, Objm } from '@nats-io/obj';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import { modelLayout } from '../../../federation/index.ts';
import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import { type ControlBodies, openControl } from '../../protocol/index.ts';
import type { InboundMessage, TransportSubscription } from '../../transport/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { FederationLogError } from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';
import { type CoordinatorLog, openCoordinatorLog } from './coordinator-log.ts';
import type {
  CoordinatorEvent,
  CoordinatorHandle,
  CoordinatorOptions,
  CoordinatorStats,
  CoordinatorSummary,
  MemberRoleName,
  RoundSummary,
} from './events.ts';
import { federationGenesis, modelSpecFor } from './genesis.ts';
import { Membership } from './membership.ts';
import { RollbackQueue } from './rollback-queue.ts';
import type { ActiveRound, RoundHost } from './round-host.ts';
import { abortOpenRound, aggregateStoreOptions, runRollbackRound, runTrainingRound } from './round-runner.ts';
import { SnapshotIntake } from './snapshot-intake.ts';
import { SwitchTracker } from './switch-tracker.ts';

/**
 * Starts the coordinator of `ctx`'s federation (docs/round-protocol.md): takes the coordinator
 * lease, reads and verifies the whole log to learn the head, the next round and the state the
 * last decision recorded (exclusions, clip), finishes what a previous run left (aborts a round it
 * opened and never decided, or re-announces its last decision), then runs rounds (open → collect
 * partials → prepare → collect votes → log the decision → announce it) until `rounds`, taking
 * queued rollbacks as rounds of their own. The log is the truth: a round number in the log is
 * never used again, and only the lease holder appends, fenced on the sequence it read.
 */
export function startCoordinator(ctx: MemberContext, options: CoordinatorOptions = {}): CoordinatorHandle {
  const c = new Coordinator(ctx, options);
  return {
    done: c.run(),
    stop: () => c.stop(),
    stats: () => c.stats(),
    rollback: (target, reason) => c.requestRollback(target, reason),
  };
}

class Coordinator implements RoundHost {
  readonly ctx: MemberContext;
  readonly options: CoordinatorOptions;
  readonly now: () => number;
  readonly membership: Membership;
  readonly switches = new SwitchTracker();
  readonly parameterCount: number;
  clip: number;
  current: ActiveRound | undefined;
  readonly #genesis: ReturnType<typeof federationGenesis>;
  readonly #summaries: RoundSummary[] = [];
  readonly #subscriptions: TransportSubscription[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #rollbacks: RollbackQueue;
  #log: CoordinatorLog | undefined;
  #aggregates: Promise<ObjectStore> | undefined;
  #snapshots: SnapshotIntake | undefined;
  #roundNumber = 0;
  #phase: CoordinatorStats['phase'] = 'starting';
  #stopping = false;
  /** A failure that ends the run (lease lost, log behind): thrown at the next wait point. */
  #fatal: Error | undefined;
  /** Until the first round of this run opens, a site ahead of the log means the log was lost. */
  #starting = true;
  #rejected = 0;
  #runPromise: Promise<CoordinatorSummary> | undefined;

  constructor(ctx: MemberContext, options: CoordinatorOptions) {
    if (ctx.role !== 'coordinator') {
      throw new CohortError('NOT_COORDINATOR', `member ${ctx.member} is a ${ctx.role}, not the coordinator`);
    }
    this.ctx = ctx;
    this.options = options;
    this.now = options.now ?? Date.now;
    const roles = new Map<string, MemberRoleName>();
    for (const a of ctx.members.aggregators) roles.set(a.id, 'aggregator');
    for (const s of ctx.members.sites) roles.set(s.id, 'site');
    const round = ctx.config.round;
    this.membership = new Membership(roles, round.missedHeartbeats * round.heartbeatMs, this.now);
    this.#genesis = federationGenesis(ctx.config);
    this.parameterCount = modelLayout(modelSpecFor(ctx.config)).parameterCount;
    this.clip = ctx.config.codec.clip;
    this.#rollbacks = new RollbackQueue(() => this.#wake());
  }

  get log(): CoordinatorLog {
    if (this.#log === undefined)
      throw new CohortError('NOT_STARTED', 'the coordinator has not opened its log yet');
    return this.#log;
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

  stopping(): boolean {
    return this.#stopping;
  }

  setPhase(phase: CoordinatorStats['phase']): void {
    this.#phase = phase;
  }

  stats(): CoordinatorStats {
    const head = this.#log?.history.head.commit;
    return {
      phase: this.#phase,
      round: this.#roundNumber,
      head: head ? bytesToHex(head.hash) : bytesToHex(this.#genesis.commit.hash),
      height: head?.height ?? 0,
      logSequence: this.#log?.history.position.sequence ?? 0,
      liveSites: this.membership.live('site'),
      liveAggregators: this.membership.live('aggregator'),
      excluded: this.membership.excluded(),
      committed: this.#summaries.filter((s) => s.commit).length,
      aborted: this.#summaries.filter((s) => !s.commit).length,
      rejected: this.#rejected,
      snapshots: this.#snapshots?.stored ?? 0,
    };
  }

  requestRollback(target: Uint8Array, reason = ''): Promise<number> {
    return this.#rollbacks.request(this.#log?.history, target, reason);
  }

  aggregates(): Promise<ObjectStore> {
    const cfg = this.ctx.config;
    this.#aggregates ??= new Objm(this.ctx.transport.connection).create(
      this.ctx.subjects.aggregatesBucket,
      aggregateStoreOptions(cfg.history.replicas, cfg.federation.id),
    );
    this.#aggregates.catch(() => {
      this.#aggregates = undefined;
    });
    return this.#aggregates;
  }

  emit(event: CoordinatorEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // a failing listener must not break the coordinator
    }
  }

  // ---- main loop ----

  async #run(): Promise<CoordinatorSummary> {
    const ctx = this.ctx;
    const cfg = ctx.config;
    this.#log = await openCoordinatorLog(ctx, this.#genesis.commit, {
      leaseWaitMs: this.options.leaseWaitMs ?? 2 * cfg.history.leaseMs,
      now: this.now,
      onLeaseLost: (err) => this.#fail(err instanceof Error ? err : new Error(String(err))),
    });
    const history = this.#log.history;
    this.#restore();
    this.#roundNumber = history.lastRound + 1;
    const head = history.head.commit;
    this.emit({
      type: 'started',
      round: this.#roundNumber,
      head: bytesToHex(head.hash),
      height: head.height,
    });
    ctx.log.info(
      {
        head: bytesToHex(head.hash),
        height: head.height,
        next: this.#roundNumber,
        entries: history.position.sequence,
      },
      'coordinator started',
    );
    this.#snapshots = new SnapshotIntake(this);
    this.#subscribe();
    await Promise.all(this.#subscriptions.map((s) => s.ready()));
    await this.#finishPreviousRun();

    const last = this.options.rounds ?? cfg.round.count;
    const quorum = cfg.round.quorum ?? ctx.members.sites.length + ctx.members.aggregators.length;
    this.#phase = 'waiting';
    // Round 1 waits for the quorum; a restarted coordinator waits at most one liveness window (a
    // member silent that long is gone anyway), then runs with whoever is live.
    const window = cfg.round.missedHeartbeats * cfg.round.heartbeatMs;
    await this.until(
      () => this.membership.live('site').length + this.membership.live('aggregator').length >= quorum,
      history.lastRound === 0 ? Number.POSITIVE_INFINITY : this.now() + window,
    );
    this.#throwIfFatal();
    this.#starting = false;

    while (!this.#stopping && (last === 0 || this.#roundNumber <= last)) {
      const round = this.#roundNumber;
      const rollback = this.#rollbacks.next(history);
      const summary = rollback
        ? await runRollbackRound(this, round, rollback.target, rollback.reason)
        : await runTrainingRound(this, round);
      this.#throwIfFatal();
      if (summary === undefined) break; // stopped
      rollback?.started(round);
      this.#summaries.push(summary);
      this.emit({ type: 'decision', summary });
      this.#roundNumber = history.lastRound + 1;
    }
    const lastCommit = [...this.#summaries].reverse().find((s) => s.commit);
    if (lastCommit && !this.#stopping) {
      // Every voter switched, and the evaluating sites (if any) scored the final model.
      await this.until(
        () =>
          this.switches.allSwitched(lastCommit.round, (s) => this.membership.isLive(s)) &&
          this.switches.accuracyReported(lastCommit.round),
        this.now() + (this.options.switchWaitMs ?? 2000),
      );
    }
    this.#throwIfFatal();
    this.#phase = 'done';
    return this.#summary();
  }

  /** State the last decision recorded: exclusions, the clip, and the last commit's switch record. */
  #restore(): void {
    const history = this.log.history;
    const last = history.lastDecision?.record.decision;
    if (last) {
      this.membership.adopt(last.exclusions);
      if (Number.isFinite(last.nextClip) && last.nextClip > 0) this.clip = last.nextClip;
    }
    const head = history.head;
    if (head.sequence > 0) {
      const decision = (history.lastDecision?.sequence === head.sequence ? history.lastDecision : undefined)
        ?.record.decision;
      this.switches.track(
        head.commit.round,
        { hash: head.commit.hash, height: head.commit.height },
        decision?.voters ?? [],
        head.unixMs,
        false,
      );
    }
  }

  /**
   * A previous run may have died mid-round. A round it opened and never decided is aborted now
   * (its number is never reused, and prepared sites discard at once instead of waiting for a
   * deadline); otherwise its last decision is announced again for sites that missed it.
   */
  async #finishPreviousRun(): Promise<void> {
    const history = this.log.history;
    const open = history.openRound;
    if (open !== null) {
      const round = open.roundOpen.round;
      const summary = await abortOpenRound(
        this,
        round,
        `the coordinator restarted before deciding round ${round}`,
      );
      this.#summaries.push(summary);
      this.emit({ type: 'recovered', action: 'aborted-open-round', round });
      this.emit({ type: 'decision', summary });
      this.#roundNumber = history.lastRound + 1;
      return;
    }
    const last = history.lastDecision;
    if (last !== null) {
      try {
        await this.ctx.transport.publish(this.ctx.subjects.decision, last.bytes);
      } catch (err) {
        this.ctx.log.error({ err }, 'last decision not re-announced');
      }
      this.emit({ type: 'recovered', action: 'reannounced', round: last.record.decision!.round });
    }
  }

  #summary(): CoordinatorSummary {
    const s = this.switches.summary();
    const head = this.log.history.head.commit;
    return {
      rounds: [...this.#summaries],
      committed: this.#summaries.filter((r) => r.commit).length,
      aborted: this.#summaries.filter((r) => !r.commit).length,
      head: bytesToHex(head.hash),
      height: head.height,
      switchLatency: { count: s.count, p50Ms: s.p50Ms, p99Ms: s.p99Ms },
      testAccuracy: s.testAccuracy,
      stopped: this.#stopping,
    };
  }

  #fail(err: Error): void {
    this.#fatal ??= err;
    this.ctx.log.error({ err: err.message }, 'coordinator stopping');
    this.#wake();
  }

  #throwIfFatal(): void {
    if (this.#fatal) throw this.#fatal;
  }

  // ---- subscriptions ----

  #subscribe(): void {
    const ctx = this.ctx;
    const s = ctx.subjects;
    const sub = (
      pattern: (token: string) => string,
      handler: (id: string, msg: InboundMessage) => unknown,
    ) => {
      const prefix = pattern('_').slice(0, -1);
      this.#subscriptions.push(
        ctx.transport.subscribe(
          `${prefix}*`,
          async (msg) => {
            const id = msg.subject.slice(prefix.length);
            try {
              return (await handler(id, msg)) as Uint8Array | undefined;
            } catch (err) {
              this.#refused(id, msg.subject, err);
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
    sub(
      (t) => s.snapshot(t),
      (id, msg) => this.#snapshots!.accept(id, msg.data),
    );
    this.#subscriptions.push(
      ctx.transport.subscribe(
        s.rollbackRequest,
        async (msg) => {
          try {
            return await this.#rollbacks.fromRequest(msg.data, this.ctx, this.log.history, this.now());
          } catch (err) {
            this.#refused('admin', msg.subject, err);
            throw err;
          }
        },
        { onError: () => undefined },
      ),
    );
  }

  #refused(from: string, subject: string, err: unknown): void {
    this.#rejected++;
    const reason = err instanceof CohortError ? err.code : 'ERROR';
    this.emit({ type: 'rejected', round: this.current?.round ?? this.#roundNumber, from, reason });
    this.ctx.log.warn({ subject, reason, detail: (err as Error).message }, 'refused');
  }

  #opened<T extends 'heartbeat' | 'vote' | 'switched'>(
    type: T,
    id: string,
    data: Uint8Array,
  ): ControlBodies[T] {
    const m = openControl(data, type, this.ctx.keys);
    const body = m.body as ControlBodies[T] & { federation: string; member: string };
    if (m.signer !== id || body.member !== id) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `${type} on the subject of ${JSON.stringify(id)} is signed by ${JSON.stringify(m.signer)} for ${JSON.stringify(body.member)}`,
      );
    }
    if (body.federation !== this.ctx.config.federation.id) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${type} of ${id} is for federation ${JSON.stringify(body.federation)}`,
      );
    }
    return body;
  }

  #onHeartbeat(id: string, data: Uint8Array): void {
    const role = this.membership.role(id);
    if (role === undefined)
      throw new BlockRejectedError('WRONG_SIGNER', `${id} is no site or aggregator of this federation`);
    const hb = this.#opened('heartbeat', id, data);
    if (hb.role !== role) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `heartbeat of ${id} says role ${JSON.stringify(hb.role)}, it is a ${role}`,
      );
    }
    const head = this.log.history.head.commit;
    if (role === 'site' && hb.height > head.height) {
      const problem = `${id} reports head ${bytesToHex(hb.head).slice(0, 12)} at height ${hb.height}, beyond the log's head at height ${head.height}`;
      if (this.#starting) {
        this.#fail(
          new FederationLogError(
            'LOG_BEHIND',
            `${problem}: the log was lost or truncated, or belongs to another federation; refusing to continue from it`,
            { details: { site: id, height: hb.height, logHeight: head.height } },
          ),
        );
      }
      throw new BlockRejectedError('WRONG_CONTEXT', problem);
    }
    const { joined } = this.membership.heartbeat(id, role, hb);
    if (joined) this.emit({ type: 'member', member: id, role, joined: true });
    this.#wake();
  }

  #onPartial(aggregator: string, data: Uint8Array): void {
    const state = this.current;
    if (state?.intake === undefined || state.phase !== 'collecting') {
      throw new CohortError(
        'ROUND_CLOSED',
        `no round is collecting partials now (round ${this.#roundNumber})`,
      );
    }
    const done = state.intake.accept(aggregator, data);
    if (done !== undefined) {
      this.emit({ type: 'partial', round: state.round, aggregator, sites: done.sites.map((c) => c.site) });
    }
    this.#wake();
  }

  #onVote(site: string, data: Uint8Array): void {
    if (this.membership.role(site) !== 'site')
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site`);
    const vote = this.#opened('vote', site, data);
    const state = this.current;
    if (state === undefined || state.round !== vote.round || state.phase !== 'voting') {
      throw new CohortError(
        'VOTE_REFUSED',
        `vote of ${site} for round ${vote.round}: round ${this.current?.round ?? this.#roundNumber} is not collecting votes`,
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
    this.emit({ type: 'vote', round: state.round, member: site, yes: vote.yes, reason: vote.reason });
    this.#wake();
  }

  #onSwitched(site: string, data: Uint8Array): void {
    if (this.membership.role(site) !== 'site')
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site`);
    const sw = this.#opened('switched', site, data);
    const { latencyMs, height, accuracy } = this.switches.switched(site, sw);
    this.membership.switched(site, { hash: sw.commitHash, height });
    if (latencyMs !== undefined || accuracy !== undefined) {
      this.emit({
        type: 'switched',
        round: sw.round,
        member: site,
        latencyMs: latencyMs ?? 0,
        testAccuracy: accuracy,
      });
    }
    this.#wake();
  }

  // ---- plumbing ----

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  /**
   * Waits until `condition` holds (true), the deadline passes (the condition's value then) or the
   * coordinator stops (false). Re-checks on every event and at least every heartbeat interval, as
   * liveness changes with time alone. A fatal failure (lease lost, log behind) throws.
   */
  async until(condition: () => boolean, deadline: number): Promise<boolean> {
    const poll = Math.min(250, this.ctx.config.round.heartbeatMs);
    while (!condition()) {
      this.#throwIfFatal();
      if (this.#stopping) return false;
      const left = deadline - this.now();
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
    this.#throwIfFatal();
    return !this.#stopping || condition();
  }

  async #teardown(): Promise<void> {
    this.current?.intake?.builder.dispose();
    this.current = undefined;
    this.#rollbacks.close();
    await Promise.all(this.#subscriptions.map((s) => s.unsubscribe()));
    this.#subscriptions.length = 0;
    await this.#log?.close().catch(() => undefined);
  }
}

import { jetstreamManager } from '@nats-io/jetstream';
import { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { CohortError } from '../../errors/index.ts';
import {
  dealMaxBytes,
  epochAt,
  federationGenesis,
  type LoggedEpoch,
  maxContributionFrameBytes,
  modelSpecFor,
} from '../../round/index.ts';
import type { TransportSubscription } from '../../transport/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { updatePlan } from '../evaluation-plan.ts';
import { snapshotEpochOf, snapshotWriter } from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';
import {
  aggregateStore,
  CONTRIBUTION_HEADER_BYTES,
  ensureContributionStream,
  lazyWriteOnceStore,
  type WriteOnceObjects,
} from '../store/index.ts';
import { loadThresholdEpoch, maxShareBundleBytesFor } from '../threshold-dealing.ts';
import { adminControls } from './admin-control.ts';
import { feedBreaker, reportBreakerChange } from './breaker-feed.ts';
import { type BreakerTransition, CircuitBreaker, type RoundOutcome } from './circuit-breaker.ts';
import { type CoordinatorLog, openCoordinatorLog } from './coordinator-log.ts';
import { subscribeCoordinator } from './coordinator-subscriptions.ts';
import { EpochChanges } from './epoch-change.ts';
import type {
  CoordinatorEvent,
  CoordinatorHandle,
  CoordinatorOptions,
  CoordinatorStats,
  CoordinatorSummary,
  MemberRoleName,
} from './events.ts';
import { type IntakeHost, MemberIntake } from './member-intake.ts';
import { Membership } from './membership.ts';
import { finishPreviousRun, restoreFromLog } from './previous-run.ts';
import { PrivacyBudget } from './privacy-budget.ts';
import { RecentRounds } from './recent-rounds.ts';
import { RegistryQueue } from './registry-queue.ts';
import { RollbackQueue } from './rollback-queue.ts';
import { roundAbortReason } from './round-abort.ts';
import type { ActiveRound } from './round-host.ts';
import { statisticsLanes } from './round-plan.ts';
import { runRollbackRound, runTrainingRound } from './round-runner.ts';
import { RunControl } from './run-control.ts';
import { SnapshotIntake } from './snapshot-intake.ts';
import { SuspectSet } from './suspects.ts';
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
    ...adminControls(c),
  };
}

class Coordinator implements IntakeHost {
  readonly ctx: MemberContext;
  readonly options: CoordinatorOptions;
  readonly now: () => number;
  readonly membership: Membership;
  readonly switches = new SwitchTracker();
  readonly parameterCount: number;
  readonly requiredLanes: number;
  readonly budget: PrivacyBudget;
  readonly updateLength: number;
  clip: number;
  current: ActiveRound | undefined;
  readonly #genesis: ReturnType<typeof federationGenesis>;
  readonly #summaries = new RecentRounds();
  readonly #subscriptions: TransportSubscription[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #rollbacks: RollbackQueue;
  readonly registryChanges = new RegistryQueue();
  readonly runs: RunControl;
  readonly breaker: CircuitBreaker;
  readonly suspects = new SuspectSet();
  /** Threshold keys: the key ceremony's epoch (in force until the log holds a re-sharing). */
  readonly #genesisEpoch: LoggedEpoch | undefined;
  /** Threshold keys: re-sharings of the key epoch. */
  readonly epochs = new EpochChanges();
  readonly silentDecrypters = new Map<string, number>();
  readonly #aggregates: () => Promise<WriteOnceObjects>;
  #updatesStore: Promise<void> | undefined;
  readonly #intake = new MemberIntake(this);
  #log: CoordinatorLog | undefined;
  #snapshots: SnapshotIntake | undefined;
  #roundNumber = 0;
  #phase: CoordinatorStats['phase'] = 'starting';
  #stopping = false;
  /** A failure that ends the run (lease lost, log behind): thrown at the next wait point. */
  #fatal: Error | undefined;
  /** Until the first round of this run opens, a site ahead of the log means the log was lost. */
  #starting = true;
  #rejected = 0;
  readonly #rejectedBy = new Map<string, number>();
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
    // A member revoked in the registry (as of the log) is never live: never assigned again.
    this.membership = new Membership(roles, round.missedHeartbeats * round.heartbeatMs, this.now, (id) =>
      ctx.registryView.isRevoked(id),
    );
    this.#genesis = federationGenesis(ctx.config);
    // Threshold keys: the epoch is checked against the public shares and the configuration's pin
    // once, before any round.
    this.#genesisEpoch =
      ctx.ckks instanceof ThresholdLaneContext
        ? {
            fromRound: 0,
            ...loadThresholdEpoch({
              dir: ctx.keysDir,
              federation: ctx.config.federation.id,
              ctx: ctx.ckks.tc,
              registry: ctx.registryView,
              ...(ctx.config.members?.keyFingerprints?.threshold === undefined
                ? {}
                : { pin: ctx.config.members.keyFingerprints.threshold }),
            }),
          }
        : undefined;
    const plan = updatePlan(ctx.config, modelSpecFor(ctx.config), ctx.config.codec.bits);
    this.parameterCount = plan.parameters;
    this.requiredLanes = plan.requiredLanes;
    this.budget = new PrivacyBudget(
      plan.privacy,
      () => this.log.history,
      ctx.log,
      (e) => this.emit(e),
    );
    this.updateLength = plan.totalParams;
    this.clip = ctx.config.codec.clip;
    this.runs = new RunControl({ idle: options.idle === true, now: this.now, wake: () => this.#wake() });
    this.#rollbacks = new RollbackQueue(
      () => this.runs.rollbackQueued(),
      (action) => this.log.appendAdminAction(action),
    );
    this.breaker = new CircuitBreaker(ctx.config.round.breaker);
    this.#aggregates = lazyWriteOnceStore(
      ctx.transport.connection,
      aggregateStore(ctx.config.federation.id),
      {
        replicas: ctx.config.history.replicas,
        timeoutMs: ctx.config.nats.timeoutMs,
        maxPayload: ctx.transport.maxPayload,
      },
    );
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

  roundNumber(): number {
    return this.#roundNumber;
  }

  starting(): boolean {
    return this.#starting;
  }

  fail(err: Error): void {
    this.#fail(err);
  }

  wake(): void {
    this.#wake();
  }

  setPhase(phase: CoordinatorStats['phase']): void {
    this.#phase = phase;
  }

  stats(): CoordinatorStats {
    const head = this.#log?.history.head.commit;
    const beats = this.membership.heartbeatCounts(this.ctx.config.round.heartbeatMs);
    return {
      phase: this.#phase,
      round: this.#roundNumber,
      head: head ? bytesToHex(head.hash) : bytesToHex(this.#genesis.commit.hash),
      height: head?.height ?? 0,
      logSequence: this.#log?.history.position.sequence ?? 0,
      liveSites: this.membership.live('site'),
      liveAggregators: this.membership.live('aggregator'),
      excluded: this.membership.excluded(),
      committed: this.#summaries.committed,
      aborted: this.#summaries.aborted,
      rejected: this.#rejected,
      rejectedByReason: Object.fromEntries(this.#rejectedBy),
      snapshots: this.#snapshots?.stored ?? 0,
      parameters: this.parameterCount,
      heartbeatsExpected: beats.expected,
      heartbeatsReceived: beats.received,
      breaker: this.breaker.state(),
      ...(this.budget.privacy === null
        ? {}
        : {
            privacy: {
              epsilon: this.#log === undefined ? 0 : (this.budget.spent()?.epsilon ?? 0),
              budget: this.budget.privacy.epsilon,
            },
          }),
    };
  }

  breakerChanged(change: BreakerTransition | undefined): void {
    reportBreakerChange(this, change);
  }

  roundDecided(outcome: RoundOutcome): void {
    feedBreaker(this, outcome);
  }

  requestRollback(target: Uint8Array, reason = ''): Promise<number> {
    return this.#rollbacks.request(this.#log?.history, target, reason);
  }

  aggregates(): Promise<WriteOnceObjects> {
    return this.#aggregates();
  }

  /**
   * Creates the contributions stream (`COHORT_<F>_CONTRIBUTIONS`, where aggregators keep each
   * update they sum, write-once, for `history.updateRetentionMs`) or checks an existing one; a
   * stream with weaker settings is refused (`STREAM_MISMATCH`), as is a frame cap above the
   * server's `max_payload` (`CONTRIBUTION_FRAME_TOO_LARGE`: aggregators could not store a block).
   */
  ensureUpdatesStore(): Promise<void> {
    if (this.#updatesStore === undefined) {
      const cfg = this.ctx.config;
      const transport = this.ctx.transport;
      const created = (async () => {
        const maxFrameBytes = maxContributionFrameBytes(this.ctx.ckks.maxCiphertextBytes);
        if (maxFrameBytes + CONTRIBUTION_HEADER_BYTES > transport.maxPayload) {
          throw new CohortError(
            'CONTRIBUTION_FRAME_TOO_LARGE',
            `a contribution frame takes up to ${maxFrameBytes} bytes, above the server's max_payload ${transport.maxPayload}: raise max_payload`,
          );
        }
        const jsm = await jetstreamManager(transport.connection, {
          checkAPI: false,
          timeout: cfg.nats.timeoutMs,
        });
        await ensureContributionStream(jsm, cfg.federation.id, {
          replicas: cfg.history.replicas,
          retentionMs: cfg.history.updateRetentionMs,
          maxFrameBytes,
        });
      })();
      this.#updatesStore = created;
      created.catch(() => {
        if (this.#updatesStore === created) this.#updatesStore = undefined;
      });
    }
    return this.#updatesStore;
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
    restoreFromLog(this);
    // Rollbacks a previous run accepted (logged) and no rollback round has taken yet.
    const restored = this.#rollbacks.restore(history);
    if (restored > 0) ctx.log.info({ rollbacks: restored }, 'rollback requests from the log queued again');
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
    this.#subscriptions.push(
      ...subscribeCoordinator({
        ctx: this.ctx,
        intake: this.#intake,
        snapshots: this.#snapshots,
        rollbacks: this.#rollbacks,
        registryChanges: this.registryChanges,
        shareMaxBytes:
          this.threshold === undefined
            ? undefined
            : maxShareBundleBytesFor(
                this.ctx.ckks as ThresholdLaneContext,
                // A statistics round may carry more lanes than a training update.
                Math.max(this.updateLength, statisticsLanes(cfg)),
                cfg.codec.maxContributors,
                ctx.members.sites.length,
              ),
        epochMaxBytes:
          this.#genesisEpoch === undefined
            ? undefined
            : // A deal to every configured site (each attempt's roster caps it again).
              dealMaxBytes((this.ctx.ckks as ThresholdLaneContext).tc.polyBytes, ctx.members.sites.length),
        epoch: (site, data) => this.epochs.receive(this, site, data),
        history: () => this.log.history,
        now: () => this.now(),
        refused: (from, subject, err) => this.#refused(from, subject, err),
        countRefusal: (reason) => this.#countRefusal(reason),
      }),
    );
    await Promise.all(this.#subscriptions.map((s) => s.ready()));
    const aborted = await finishPreviousRun(this);
    if (aborted !== undefined) {
      this.#summaries.push(aborted);
      this.emit({ type: 'decision', summary: aborted });
      this.#roundNumber = history.lastRound + 1;
    }

    this.runs.begin(this.options.rounds ?? (this.options.idle === true ? undefined : cfg.round.count));
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

    while (await this.runs.admit(this.#roundNumber, this)) {
      const round = this.#roundNumber;
      await this.#appendRegistryChanges(round);
      if (!(await this.#epochStands(round))) {
        if (this.#stopping) break;
        continue;
      }
      const rollback = this.#rollbacks.next(history);
      if (rollback === undefined && !this.runs.training(round)) continue; // a refused rollback, no run
      if (rollback === undefined && !(await this.#breakerAdmits(round))) continue; // frozen
      if (rollback === undefined && !this.budget.admits(round)) break;
      const summary = rollback
        ? await runRollbackRound(this, round, rollback.target, rollback.reason)
        : await runTrainingRound(this, round);
      this.#throwIfFatal();
      this.breaker.cancelProbe(this.now()); // a probe that was not decided (an operator's abort)
      if (summary === undefined) {
        if (this.#stopping) break; // stopped
        continue; // the breaker froze before the round opened
      }
      rollback?.started(round);
      this.#summaries.push(summary);
      this.runs.decided(summary);
      this.emit({ type: 'decision', summary });
      this.#roundNumber = history.lastRound + 1;
    }
    const lastCommit = this.#summaries.lastCommit;
    if (lastCommit && !this.#stopping) {
      // Every voter switched, the evaluating sites (if any) scored the final model, and the
      // snapshot due at its height (if any) is stored.
      const head = history.head;
      const due =
        head.decision !== null &&
        snapshotWriter(
          head.decision,
          head.commit.height,
          cfg.history.snapshotEvery,
          snapshotEpochOf(history, head.commit.height),
        ) !== undefined;
      await this.until(
        () =>
          this.switches.allSwitched(lastCommit.round, (s) => this.membership.isLive(s)) &&
          this.switches.accuracyReported(lastCommit.round) &&
          (!due || history.snapshots.some((s) => s.snapshot.height === head.commit.height)),
        this.now() + (this.options.switchWaitMs ?? 2000),
      );
    }
    await this.#snapshots?.settled();
    this.#throwIfFatal();
    this.#phase = 'done';
    return this.#summary();
  }

  /**
   * Whether a training round may open as far as the breaker goes: below level 3 at once; frozen,
   * once `coolDownMs` passed (the round is then the probe), else it waits for that, a queued
   * rollback, the run's end or the coordinator's stop, and answers false (the loop looks again).
   */
  async #breakerAdmits(round: number): Promise<boolean> {
    if (this.breaker.level < 3) return true;
    if (this.breaker.probeDue(this.now())) {
      this.breaker.beginProbe();
      this.ctx.log.info({ round }, 'breaker probe round (training is frozen)');
      return true;
    }
    this.#phase = 'waiting';
    await this.until(
      () => this.breaker.probeDue(this.now()) || this.#rollbacks.waiting > 0 || !this.runs.training(round),
      Number.POSITIVE_INFINITY,
    );
    return false;
  }

  /**
   * Threshold keys: the epoch in force for the next round, from the log (the last re-sharing logged
   * from that round or before), else the key ceremony's; undefined with a shared key.
   */
  get threshold(): LoggedEpoch | undefined {
    if (this.#genesisEpoch === undefined) return undefined;
    return epochAt(this.#genesisEpoch, this.log.history.thresholdEpochs, this.#roundNumber);
  }

  /**
   * Threshold keys: re-shares the key epoch before `round` when a membership change, too few live
   * roster sites or a rotation makes one due (`EpochChanges`). False when a revocation's re-sharing
   * failed: no round opens under an epoch that should be gone, and the loop asks again after a
   * heartbeat; any other failed re-sharing lets the round open under the epoch in force.
   */
  async #epochStands(round: number): Promise<boolean> {
    if (this.#genesisEpoch === undefined) return true;
    this.#phase = 'waiting';
    const outcome = await this.epochs.ensure(this, round);
    this.#throwIfFatal();
    if (outcome.kind !== 'failed') return true;
    this.ctx.log.warn(
      { round, reason: outcome.reason, silent: outcome.silent, waiting: outcome.mandatory },
      'key epoch not re-shared',
    );
    if (!outcome.mandatory) return true;
    await this.until(() => this.#stopping, this.now() + this.ctx.config.round.heartbeatMs);
    return false;
  }

  /**
   * Logs the queued registry changes that apply from `round` (before it opens) and announces each
   * on `cohort.<F>.registry` (docs/key-ceremony.md).
   */
  async #appendRegistryChanges(round: number): Promise<void> {
    await this.registryChanges.appendDue(
      round,
      this.log,
      (entry) => this.ctx.transport.publish(this.ctx.subjects.registry, entry.bytes),
      (change, err) =>
        this.ctx.log.warn({ kind: change.kind, of: change.member, err }, 'registry change dropped'),
    );
  }

  #summary(): CoordinatorSummary {
    const s = this.switches.summary();
    const head = this.log.history.head.commit;
    return {
      rounds: this.#summaries.recent(),
      committed: this.#summaries.committed,
      aborted: this.#summaries.aborted,
      head: bytesToHex(head.hash),
      height: head.height,
      switchLatency: { count: s.count, p50Ms: s.p50Ms, p99Ms: s.p99Ms },
      testAccuracy: s.testAccuracy,
      stopped: this.#stopping,
      ...this.budget.summary(),
    };
  }

  #fail(err: Error): void {
    this.#fatal ??= err;
    this.ctx.log.error({ err }, 'coordinator stopping');
    this.#wake();
  }

  #throwIfFatal(): void {
    if (this.#fatal) throw this.#fatal;
  }

  // ---- subscriptions ----

  #refused(from: string, subject: string, err: unknown): void {
    const reason = err instanceof CohortError ? err.code : 'ERROR';
    this.#countRefusal(reason);
    this.emit({ type: 'rejected', round: this.current?.round ?? this.#roundNumber, from, reason });
    this.ctx.log.warn({ subject, reason, detail: (err as Error).message }, 'refused');
  }

  /** Counts one refused message under `reason` (a `CohortError` code or a transport drop reason). */
  #countRefusal(reason: string): void {
    this.#rejected++;
    this.#rejectedBy.set(reason, (this.#rejectedBy.get(reason) ?? 0) + 1);
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
      if (this.#stopping || roundAbortReason(this.current) !== undefined) return false;
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
    this.registryChanges.close();
    this.runs.close();
    await Promise.all(this.#subscriptions.map((s) => s.unsubscribe()));
    this.#subscriptions.length = 0;
    await this.#log?.close().catch(() => undefined);
  }
}

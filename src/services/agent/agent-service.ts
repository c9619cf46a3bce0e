import { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { type ControlBodies, type ControlType, openControl } from '../../protocol/index.ts';
import type { InboundMessage, TransportSubscription } from '../../transport/index.ts';
import { bytesToHex, type Commit } from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import { type LogEntry, openLogEntry } from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';
import type { AgentCore, AgentCounters, AgentOptions, AgentStats } from './agent-core.ts';
import { AgentError } from './agent-error.ts';
import { loadAgentCore, releaseAgentCore } from './agent-loader.ts';
import { type AgentState, AgentStateMachine } from './agent-state.ts';
import type { AgentSteps } from './agent-steps.ts';
import { catchUp, resolveResiduals } from './catch-up.ts';
import { onEpochRequest } from './epoch-request.ts';
import { privacyReport, reportPrivacy } from './privacy-record.ts';
import { onRoundOpen } from './round-open.ts';
import { onShareRequest } from './share-request.ts';
import { announceSwitch, applyDecision, reportAccuracy, sendHeartbeat, settleDecision } from './switcher.ts';
import { describe, onPrepare } from './voter.ts';

/** A running site agent. */
export interface AgentService {
  readonly member: string;
  /** The lifecycle state machine (subscribe with `machine.onChange`). */
  readonly machine: AgentStateMachine;
  /** The current lifecycle state. */
  readonly state: AgentState;
  /** The committed head of the local model store. */
  head(): Commit | null;
  stats(): AgentStats;
  /**
   * Settles with the error that halted the agent (a model replayed from the log that does not
   * hash to the committed one): the agent then takes no further part. Never settles otherwise.
   */
  readonly halted: Promise<Error>;
  /** Stops heartbeats and subscriptions, waits for the current step, frees the engine and keys. Does not close `ctx`. */
  stop(): Promise<void>;
}

/**
 * Starts the site agent of `ctx` (docs/round-protocol.md, steps 2, 5, 7 and 8): loads the CKKS key
 * (a failure is not fatal: the agent then votes NO with `cannot decrypt: …`), the federation data
 * key (snapshots; optional), its data shard, the model store in `<paths.dataDir>/<member>` and the
 * engine; reads the federation log and recovers — a prepared candidate left by a crash is settled
 * by the log's decision, and a store behind the log's head catches up by replay (or from a
 * snapshot); then answers RoundOpen (train, encode, send), PREPARE (decode, apply, store durably,
 * vote) and decisions (switch or discard), reads the log when a decision is overdue, and heartbeats
 * every `round.heartbeatMs`. Resolves once subscribed.
 */
export async function startAgent(ctx: MemberContext, options: AgentOptions = {}): Promise<AgentService> {
  if (ctx.role !== 'site') {
    throw new InvalidArgumentError(`${ctx.member} is a ${ctx.role}; only a site runs the agent`);
  }
  const agent = new SiteAgent(ctx, options);
  await agent.start();
  return agent;
}

interface Training {
  readonly round: number;
  readonly controller: AbortController;
}

class SiteAgent implements AgentService {
  readonly member: string;
  readonly machine = new AgentStateMachine();
  readonly halted: Promise<Error>;
  readonly #ctx: MemberContext;
  readonly #options: AgentOptions;
  readonly #subscriptions: TransportSubscription[] = [];
  readonly #counters: AgentCounters = {
    examples: 0,
    keysetError: null,
    roundsTrained: 0,
    trainingCut: 0,
    updatesSent: 0,
    blocksSent: 0,
    roundsSkipped: 0,
    replaysRefused: 0,
    epochRequestsRefused: 0,
    complaintsSent: 0,
    votesYes: 0,
    votesNo: 0,
    abstentions: 0,
    roundsFromLog: 0,
    commits: 0,
    aborts: 0,
    replayed: 0,
    snapshotsJoined: 0,
    snapshotsWritten: 0,
    residualsApplied: 0,
    residualsDropped: 0,
    lastVote: null,
    lastTestAccuracy: null,
    privacy: null,
    evaluationsSent: 0,
    ownEvaluations: [],
    fatal: null,
  };
  #core: AgentCore | undefined;
  /** The recovery actions the step modules may call. */
  readonly #steps: AgentSteps = {
    settlePrepared: (why) => this.#settlePrepared(why),
    catchUp: () => this.#catchUp(this.#core!),
    armDecisionTimer: (round) => this.#armDecisionTimer(round),
  };
  #queue: Promise<void> = Promise.resolve();
  /** The round attempt of the last RoundOpen handled (broadcast or from the log): `round/attempt`. */
  #openSeen = '';
  #heartbeat: NodeJS.Timeout | undefined;
  #beats = 0;
  #poll: NodeJS.Timeout | undefined;
  #decisionTimer: NodeJS.Timeout | undefined;
  #training: Training | null = null;
  #stopping = false;
  #halt!: (err: Error) => void;
  #ownsKeyset = false;

  constructor(ctx: MemberContext, options: AgentOptions) {
    this.#ctx = ctx;
    this.#options = options;
    this.member = ctx.member;
    this.halted = new Promise<Error>((resolve) => {
      this.#halt = resolve;
    });
  }

  get state(): AgentState {
    return this.machine.state;
  }

  head(): Commit | null {
    return this.#core?.store.head() ?? null;
  }

  stats(): AgentStats {
    return {
      ...this.#counters,
      examples: this.#core?.examples ?? 0,
      ownEvaluations: [...this.#counters.ownEvaluations],
      keysetError: this.#core?.keysetError ?? null,
      privacy: this.#core === undefined ? null : privacyReport(this.#core),
    };
  }

  async start(): Promise<void> {
    const { config, log } = this.#ctx;
    this.machine.onChange((c) => log.info({ from: c.from, to: c.to, reason: c.reason }, 'agent state'));
    this.machine.transition('LOADING', 'agent start');
    try {
      const loaded = await loadAgentCore(this.#ctx, this.#options, this.machine, this.#counters);
      this.#core = loaded.core;
      this.#ownsKeyset = loaded.ownsKeyset;
      await this.#recoverAtStart(this.#core);
    } catch (err) {
      if (this.machine.can('ERROR')) this.machine.transition('ERROR', `start failed: ${describe(err)}`);
      await this.#release();
      throw err;
    }
    const core = this.#core;
    const head = core.store.head()!;
    log.info(
      {
        head: bytesToHex(head.hash),
        height: head.height,
        examples: core.examples,
        engine: core.engine?.description,
        keyset: core.keyset !== null,
        dataKey: core.dataKey !== null,
        state: this.machine.state,
      },
      'agent ready',
    );
    try {
      const s = this.#ctx.subjects;
      this.#subscriptions.push(
        this.#ctx.transport.subscribe(s.roundOpen, (m) => this.#receive(m, 'round-open')),
        this.#ctx.transport.subscribe(s.prepare, (m) => this.#receive(m, 'prepare')),
        this.#ctx.transport.subscribe(s.decision, (m) => this.#receiveDecision(m)),
      );
      // Threshold keys: this site may be asked for its decryption shares, and to re-share.
      if (this.#ctx.ckks instanceof ThresholdLaneContext) {
        this.#subscriptions.push(
          this.#ctx.transport.subscribe(s.shareRequest, (m) => this.#receive(m, 'share-request')),
          this.#ctx.transport.subscribe(s.epochRequest, (m) => this.#receive(m, 'epoch-request')),
        );
      }
      await Promise.all(this.#subscriptions.map((sub) => sub.ready()));
    } catch (err) {
      await this.stop();
      throw err;
    }
    void this.#sendHeartbeat();
    this.#heartbeat = setInterval(() => void this.#sendHeartbeat(), config.round.heartbeatMs);
    this.#poll = setInterval(() => this.#enqueue(() => this.#pollLog()), this.#decisionTimeoutMs());
  }

  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#training?.controller.abort();
    clearInterval(this.#heartbeat);
    clearInterval(this.#poll);
    clearTimeout(this.#decisionTimer);
    await Promise.allSettled(this.#subscriptions.map((s) => s.unsubscribe()));
    await this.#queue;
    await this.#release();
  }

  // ---- start ----

  /**
   * Step 8 and catch-up at start (LOADING → RECOVERING): reads the log; a prepared candidate whose
   * round the log decided is committed or discarded as decided, one whose round is still open is
   * kept (PREPARED); then the store is brought to the log's head. The log may be unreachable or
   * not exist yet (a new federation): the agent then starts from its store and reads it later.
   */
  async #recoverAtStart(core: AgentCore): Promise<void> {
    const { store, follower } = core;
    const log = this.#ctx.log;
    let logRead = true;
    try {
      await follower.sync();
    } catch (err) {
      logRead = false;
      log.warn({ err }, 'cannot read the federation log yet; starting from the local store');
    }
    const rounds = store.preparedRounds();
    this.machine.transition(
      'RECOVERING',
      rounds.length > 0 ? `prepared candidates for rounds ${rounds.join(', ')}` : 'reading the log',
    );
    const newest = rounds.at(-1);
    for (const r of rounds) if (r !== newest) store.abortPrepared(r);
    if (newest !== undefined) {
      let kept = false;
      try {
        kept = store.prepared(newest) !== null;
      } catch (err) {
        log.error({ round: newest, err }, 'prepared candidate unreadable: discarded');
        store.abortPrepared(newest);
      }
      if (kept) {
        core.preparedRound = newest;
        const decided = follower.history.decisionOf(newest);
        if (decided !== undefined) {
          const outcome = applyDecision(core, decided.decision);
          if (outcome.kind === 'committed') {
            await announceSwitch(core, newest, outcome.head, outcome.switchedUnixMs);
            reportPrivacy(core, outcome.head);
            await reportAccuracy(core, newest, outcome.head, outcome.switchedUnixMs);
          }
        } else if (
          !logRead ||
          follower.history.openRound?.roundOpen.round === newest ||
          newest > follower.history.lastRound
        ) {
          this.machine.transition('PREPARED', `candidate of round ${newest} kept until its decision`);
          this.#armDecisionTimer(newest);
          return;
        } else {
          store.abortPrepared(newest);
          core.preparedRound = null;
        }
      }
    }
    if (store.head() === null) store.init(core.genesis.commit, core.genesis.parameters);
    if (this.state === 'RECOVERING') this.machine.transition('LOADING', 'catching up with the log');
    if (!logRead) resolveResiduals(core);
    else if (this.state === 'LOADING') await this.#catchUp(core, { atStart: true });
    else await this.#catchUp(core); // READY after settling a candidate: READY → LOADING → READY
    if (this.state === 'LOADING') this.machine.transition('READY', 'loaded');
  }

  // ---- messages ----

  async #receive<T extends 'round-open' | 'prepare' | 'share-request' | 'epoch-request'>(
    msg: InboundMessage,
    type: T,
  ): Promise<void> {
    if (this.#stopping) return;
    let opened: ReturnType<typeof openControl<T>>;
    try {
      // Only the coordinator's: any other signer is refused before the signature is checked.
      opened = openControl(msg.data, type as ControlType, this.#ctx.keys, {
        signer: this.#ctx.members.coordinator,
      }) as ReturnType<typeof openControl<T>>;
    } catch (err) {
      this.#ctx.log.warn({ subject: msg.subject, err }, `${type} refused`);
      return;
    }
    const body = opened.body as { federation: string; round: number };
    // Tests: a broadcast this site never received (the log still has it: see #pollLog).
    if (type === 'round-open' && failpoint('agent.round-open-lost', body.round) === 'skip') return;
    if (body.federation !== this.#ctx.config.federation.id) {
      this.#ctx.log.warn({ federation: body.federation }, `${type} of another federation: ignored`);
      return;
    }
    if (type === 'epoch-request') {
      this.#enqueue(async () => {
        await onEpochRequest(this.#core!, opened.body as ControlBodies['epoch-request']);
      });
      return;
    }
    // A straggler still training stops: a PREPARE (or a newer round) means its update is no longer wanted.
    if (type === 'share-request') {
      // A straggler still training for this round stops: its update is no longer wanted, and a
      // share request queued behind its training would go unanswered and strike it as silent.
      if (this.#training !== null && this.#training.round <= body.round) this.#training.controller.abort();
      this.#enqueue(async () => {
        await onShareRequest(this.#core!, opened.body as ControlBodies['share-request'], msg.data);
      });
      return;
    }
    if (
      this.#training !== null &&
      (type === 'prepare' ? this.#training.round <= body.round : this.#training.round < body.round)
    ) {
      this.#training.controller.abort();
    }
    this.#enqueue(async () => {
      if (type === 'round-open') await this.#onRoundOpen(opened.body as ControlBodies['round-open']);
      else await this.#onPrepare(opened.body as ControlBodies['prepare']);
    });
  }

  async #receiveDecision(msg: InboundMessage): Promise<void> {
    if (this.#stopping) return;
    let entry: LogEntry;
    try {
      entry = openLogEntry(msg.data, undefined, {
        federation: this.#ctx.config.federation.id,
        coordinator: this.#ctx.members.coordinator,
        keys: this.#ctx.keys,
        stream: this.#ctx.subjects.logStream,
      });
    } catch (err) {
      this.#ctx.log.warn({ err }, 'decision refused');
      return;
    }
    const d = entry.record.decision;
    if (!d) return;
    if (this.#training !== null && this.#training.round <= d.round) this.#training.controller.abort();
    this.#enqueue(() => this.#onDecision(entry));
  }

  #enqueue(task: () => Promise<void>): void {
    this.#queue = this.#queue
      .then(() => (this.#stopping || this.#counters.fatal !== null ? undefined : task()))
      .catch((err: unknown) => this.#failed(err));
  }

  /** After a failure of a step: halt on a replay mismatch, else ERROR → RECOVERING → PREPARED or READY. */
  #failed(err: unknown): void {
    const core = this.#core!;
    this.#ctx.log.error({ err }, 'agent step failed');
    const m = this.machine;
    if (err instanceof AgentError && (err.code === 'REPLAY_MISMATCH' || err.code === 'STORE_DIVERGED')) {
      if (m.state !== 'ERROR' && m.can('ERROR')) m.transition('ERROR', describe(err).slice(0, 200));
      this.#counters.fatal = describe(err);
      this.#ctx.log.fatal({ err }, 'halted: this site cannot reach the federation head');
      this.#halt(err);
      return;
    }
    if (m.state !== 'ERROR' && m.can('ERROR')) m.transition('ERROR', describe(err).slice(0, 200));
    if (m.state !== 'ERROR') return;
    m.transition('RECOVERING', 'after an error');
    const r = core.preparedRound;
    let kept = false;
    try {
      kept = r !== null && core.store.prepared(r) !== null;
    } catch {
      kept = false;
    }
    if (kept) {
      m.transition('PREPARED', `candidate of round ${r} kept`);
      this.#armDecisionTimer(r!);
    } else {
      core.preparedRound = null;
      m.transition('READY', 'recovered');
    }
  }

  // ---- step 2: train and send ----

  async #onRoundOpen(open: ControlBodies['round-open']): Promise<void> {
    this.#openSeen = attemptKey(open);
    await onRoundOpen(this.#core!, this.#steps, open, (round) => {
      const training: Training = { round, controller: new AbortController() };
      this.#training = training;
      return {
        signal: training.controller.signal,
        done: () => {
          if (this.#training === training) this.#training = null;
        },
      };
    });
  }

  // ---- step 5: vote ----

  async #onPrepare(p: ControlBodies['prepare']): Promise<void> {
    await onPrepare(this.#core!, this.#steps, p);
  }

  // ---- step 7: switch ----

  async #onDecision(entry: LogEntry): Promise<void> {
    const core = this.#core!;
    const d = entry.record.decision!;
    if (core.preparedRound === d.round) clearTimeout(this.#decisionTimer);
    const fold = () =>
      core.follower
        .take(entry)
        .then(() => undefined)
        .catch((err) => this.#ctx.log.warn({ err }, 'cannot fold the decision into the log view'));
    // The switch rests on the decision's coordinator signature (checked on receipt) and on the
    // candidate this site computed itself; folding the round into the log view checks a signature
    // per vote and per site manifest (~0.4 ms each), so it follows the switch, off the sync path.
    // Its outcome never gated the switch: a fold that fails is logged and the log is read again.
    // In a swarm (many sites in one process, sharing log reads) every site's fold shares one
    // event loop: run after the switches, they would still be running when the next round opens
    // and eat its deadline (a 1,000-site round then took minutes), so a swarm site folds first,
    // as a site on its own machine has long done by then.
    if (this.#options.sharedLogReads !== undefined) {
      await fold();
      await settleDecision(core, d, entry.sequence, { catchUp: () => this.#catchUp(core) });
    } else {
      await settleDecision(core, d, entry.sequence, {
        afterSwitch: fold,
        catchUp: () => this.#catchUp(core),
      });
    }
  }

  /**
   * PREPARED without a decision for too long, or a later round is under way: read the decision from
   * the log (RECOVERING). Found: apply it; not there yet: stay PREPARED and look again later.
   */
  async #settlePrepared(why: string): Promise<void> {
    const core = this.#core!;
    const round = core.preparedRound;
    if (round === null || this.machine.state !== 'PREPARED') return;
    this.machine.transition('RECOVERING', `${why}: reading the decision of round ${round} from the log`);
    let decided: ReturnType<typeof core.follower.history.decisionOf>;
    try {
      await core.follower.sync();
      decided = core.follower.history.decisionOf(round);
    } catch (err) {
      this.#ctx.log.warn({ round, err }, 'cannot read the log');
    }
    if (decided === undefined) {
      this.machine.transition('PREPARED', `no decision of round ${round} in the log yet`);
      this.#armDecisionTimer(round);
      return;
    }
    await settleDecision(core, decided.decision, decided.sequence, { catchUp: () => this.#catchUp(core) });
    if (this.state === 'READY') await this.#catchUp(core);
  }

  #armDecisionTimer(round: number): void {
    clearTimeout(this.#decisionTimer);
    this.#decisionTimer = setTimeout(() => {
      this.#enqueue(async () => {
        if (this.#core?.preparedRound === round) await this.#settlePrepared('no decision in time');
      });
    }, this.#decisionTimeoutMs());
    this.#decisionTimer.unref?.();
  }

  #decisionTimeoutMs(): number {
    const cfg = this.#ctx.config;
    return cfg.history.decisionTimeoutMs ?? cfg.round.voteTimeoutMs + 5000;
  }

  // ---- catch-up ----

  /** READY → LOADING → READY around a catch-up; a replay mismatch halts the agent. */
  async #catchUp(core: AgentCore, opts: { atStart?: boolean } = {}): Promise<void> {
    if (!opts.atStart) {
      if (this.machine.state !== 'READY') return;
      this.machine.transition('LOADING', 'behind the log: catching up');
    }
    try {
      const replayedBefore = this.#counters.replayed;
      const advanced = await catchUp(core);
      if (advanced > 0) {
        const head = core.store.head()!;
        const replayed = this.#counters.replayed - replayedBefore;
        this.#ctx.log.info(
          { advanced, replayed, head: bytesToHex(head.hash), height: head.height },
          'caught up with the log',
        );
        void this.#sendHeartbeat();
      }
    } catch (err) {
      if (err instanceof AgentError && err.code === 'REPLAY_UNAVAILABLE') {
        this.#ctx.log.warn({ err }, 'catch-up incomplete; retrying later');
      } else {
        throw err;
      }
    } finally {
      if (!opts.atStart && this.machine.state === 'LOADING') this.machine.transition('READY', 'caught up');
    }
  }

  /**
   * Periodically, when idle: anything new in the log? A decision this site missed is applied
   * (catch-up); a round the log has open that this site never heard announced (the broadcast is
   * at most once: lost in a server restart or a partition) is taken up as if its RoundOpen had
   * arrived, so the site still contributes before the deadline instead of sitting the round out.
   */
  async #pollLog(): Promise<void> {
    const core = this.#core!;
    if (this.machine.state !== 'READY') return;
    let behind = false;
    try {
      behind = await core.follower.behind();
    } catch {
      return;
    }
    if (behind) await this.#catchUp(core);
    const open = core.follower.history.openRound?.roundOpen;
    if (
      open !== undefined &&
      this.machine.state === 'READY' &&
      attemptKey(open) !== this.#openSeen &&
      Date.now() < open.deadlineUnixMs &&
      open.assignments.some((a) => a.site === core.member)
    ) {
      core.counters.roundsFromLog++;
      this.#ctx.log.info({ round: open.round }, 'round open in the log, never announced here: taking part');
      await this.#onRoundOpen(open);
    }
  }

  // ---- heartbeat ----

  async #sendHeartbeat(): Promise<void> {
    const core = this.#core;
    if (this.#stopping || core === undefined) return;
    // A site on a loaded host: its heartbeats come four intervals apart (inside a liveness window
    // of more than four).
    if (failpoint('agent.heartbeat-late') === 'skip' && this.#beats++ % 4 !== 0) return;
    try {
      await sendHeartbeat(core);
    } catch (err) {
      if (!this.#stopping) this.#ctx.log.warn({ err }, 'heartbeat not sent');
    }
  }

  async #release(): Promise<void> {
    if (this.#core !== undefined) await releaseAgentCore(this.#core, this.#ownsKeyset);
  }
}

/** `round/attempt-hex`: one RoundOpen's identity. */
function attemptKey(open: Pick<ControlBodies['round-open'], 'round' | 'attempt'>): string {
  return `${open.round}/${bytesToHex(open.attempt)}`;
}

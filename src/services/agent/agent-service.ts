import { join } from 'node:path';
import type { CkksKeyset } from '../../../crypto/ckks/index.ts';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import {
  counterRandom,
  createStrategy,
  type ModelSpec,
  meanFromSum,
  type ServerStrategy,
  type StrategyConfig,
} from '../../../federation/index.ts';
import { createCpuEngine } from '../../../gpu/cpu/index.ts';
import type { Dataset, TrainingEngine } from '../../../gpu/index.ts';
import { createWebGpuEngine } from '../../../gpu/webgpu/index.ts';
import { type AgentState, AgentStateMachine } from '../../agent/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  type Aggregate,
  type CodecBits,
  type ControlBodies,
  type ControlType,
  decodeAggregate,
  encodeUpdate,
  type OpenedControl,
  openControl,
  sealControl,
} from '../../protocol/index.ts';
import type { InboundMessage, TransportSubscription } from '../../transport/index.ts';
import {
  bytesToHex,
  type Commit,
  type ModelStore,
  modelHash,
  openModelStore,
  type PreparedCandidate,
  roundCommit,
  VersionError,
} from '../../versions/index.ts';
import { loadSiteCkks } from '../key-ceremony.ts';
import type { MemberContext } from '../member-context.ts';
import { federationGenesis } from './genesis.ts';
import { loadSiteShard, loadTestSet } from './site-data.ts';

/** Options of {@link startAgent}. */
export interface AgentOptions {
  /** Evaluate every committed model on the MNIST test set (`learning.testLimit` rows) and report it. */
  readonly evaluate?: boolean;
  /**
   * Tests: the CKKS keyset to use instead of unwrapping `<keysDir>/<member>.ckks.env`, or a function
   * returning it (one that throws acts like a key that cannot be loaded). The agent does not free
   * a keyset it was given.
   */
  readonly keysetOverride?: CkksKeyset | (() => CkksKeyset);
  /** Tests: a training engine to use instead of the one `learning.engine` names (freed on stop). */
  readonly engine?: TrainingEngine;
}

/** The agent's last vote. */
export interface AgentVote {
  readonly round: number;
  readonly yes: boolean;
  readonly reason: string;
  /** Hex of the voted commit hash ('' for NO). */
  readonly commitHash: string;
}

/** Counters of a running agent. */
export interface AgentStats {
  /** n_k: rows of this site's shard. */
  readonly examples: number;
  /** Why the CKKS key could not be loaded, or null. */
  readonly keysetError: string | null;
  readonly roundsTrained: number;
  readonly updatesSent: number;
  readonly blocksSent: number;
  /** RoundOpens naming this site that it skipped (wrong base, no key, busy, deadline). */
  readonly roundsSkipped: number;
  readonly votesYes: number;
  readonly votesNo: number;
  readonly commits: number;
  readonly aborts: number;
  readonly lastVote: AgentVote | null;
  /** Test accuracy of the last committed model (evaluating agents), else null. */
  readonly lastTestAccuracy: number | null;
}

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
  /** Stops heartbeats and subscriptions, waits for the current step, frees the engine and key. Does not close `ctx`. */
  stop(): Promise<void>;
}

/**
 * Starts the site agent of `ctx` (DESIGN §2, docs/round-protocol.md steps 2, 5, 7, 8): loads the
 * CKKS key (a failure is not fatal: the agent then votes NO with `cannot decrypt: …`), its data
 * shard, the model store in `<paths.dataDir>/<member>` (initialised with the federation's genesis)
 * and the engine; resolves prepared candidates left by a crash; then answers RoundOpen (train,
 * encode, send), PREPARE (decode, apply, store durably, vote) and the decision (switch or discard),
 * and heartbeats every `round.heartbeatMs`. Resolves once the agent is READY (or PREPARED after a
 * recovery) and subscribed.
 */
export async function startAgent(ctx: MemberContext, options: AgentOptions = {}): Promise<AgentService> {
  if (ctx.role !== 'site') {
    throw new InvalidArgumentError(`${ctx.member} is a ${ctx.role}; only a site runs the agent`);
  }
  const agent = new SiteAgent(ctx, options);
  await agent.start();
  return agent;
}

/** The error a vote NO is made of: its message is the reason. */
class VoteNo extends Error {}

interface CurrentRound {
  readonly round: number;
  cancelled: boolean;
}

class SiteAgent implements AgentService {
  readonly member: string;
  readonly machine = new AgentStateMachine();
  readonly #ctx: MemberContext;
  readonly #options: AgentOptions;
  readonly #strategy: ServerStrategy;
  readonly #subscriptions: TransportSubscription[] = [];
  #spec!: ModelSpec;
  #shard!: Dataset;
  #siteIndex = 0;
  #store!: ModelStore;
  #engine: TrainingEngine | null = null;
  #testSet: Dataset | null = null;
  #keyset: CkksKeyset | null = null;
  #ownsKeyset = false;
  #keysetError: string | null = null;
  #queue: Promise<void> = Promise.resolve();
  #heartbeat: NodeJS.Timeout | undefined;
  #stopping = false;
  #current: CurrentRound | null = null;
  /** The round whose candidate is prepared (state PREPARED). */
  #preparedRound: number | null = null;
  /** RMS of the update this site sent, by round (for the vote's meanUpdateRms). */
  #lastUpdate: { round: number; rms: number; bytes: number } | null = null;
  #stats = {
    roundsTrained: 0,
    updatesSent: 0,
    blocksSent: 0,
    roundsSkipped: 0,
    votesYes: 0,
    votesNo: 0,
    commits: 0,
    aborts: 0,
    lastVote: null as AgentVote | null,
    lastTestAccuracy: null as number | null,
  };

  constructor(ctx: MemberContext, options: AgentOptions) {
    this.#ctx = ctx;
    this.#options = options;
    this.member = ctx.member;
    this.#strategy = createStrategy({ name: ctx.config.learning.strategy } as StrategyConfig);
  }

  get state(): AgentState {
    return this.machine.state;
  }

  head(): Commit | null {
    return this.#store?.head() ?? null;
  }

  stats(): AgentStats {
    return {
      examples: this.#shard?.count ?? 0,
      keysetError: this.#keysetError,
      ...this.#stats,
    };
  }

  async start(): Promise<void> {
    const { config, log } = this.#ctx;
    this.machine.onChange((c) => log.info({ from: c.from, to: c.to, reason: c.reason }, 'agent state'));
    this.machine.transition('LOADING', 'agent start');
    try {
      this.#loadKeyset();
      const shard = loadSiteShard(config, this.member);
      this.#shard = shard.data;
      this.#siteIndex = shard.index;
      const genesis = federationGenesis(config);
      this.#spec = genesis.spec;
      this.#store = openModelStore(join(config.paths.dataDir, this.member));
      if (this.#store.head() === null) {
        this.#store.init(genesis.commit, genesis.parameters);
      } else {
        try {
          this.#store.readCommit(genesis.commit.hash);
        } catch (cause) {
          throw new InvalidArgumentError(
            `the model store in ${this.#store.dir} does not hold this federation's genesis ${bytesToHex(genesis.commit.hash)}; it belongs to another federation or configuration`,
            { cause },
          );
        }
      }
      if (this.#options.evaluate) this.#testSet = loadTestSet(config);
      this.#engine = this.#options.engine ?? (await createEngine(config.learning));
      this.#recoverPrepared();
    } catch (err) {
      if (this.machine.can('ERROR')) this.machine.transition('ERROR', `start failed: ${describe(err)}`);
      await this.#release();
      throw err;
    }
    const head = this.#store.head()!;
    log.info(
      {
        head: bytesToHex(head.hash),
        height: head.height,
        examples: this.#shard.count,
        engine: this.#engine.description,
        keyset: this.#keyset !== null,
      },
      'agent ready',
    );
    try {
      const s = this.#ctx.subjects;
      this.#subscriptions.push(
        this.#ctx.transport.subscribe(s.roundOpen, (m) => this.#receive(m, 'round-open')),
        this.#ctx.transport.subscribe(s.prepare, (m) => this.#receive(m, 'prepare')),
        this.#ctx.transport.subscribe(s.decision, (m) => this.#receive(m, 'decision')),
      );
      await Promise.all(this.#subscriptions.map((sub) => sub.ready()));
    } catch (err) {
      await this.stop();
      throw err;
    }
    void this.#sendHeartbeat();
    this.#heartbeat = setInterval(() => void this.#sendHeartbeat(), config.round.heartbeatMs);
  }

  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#current) this.#current.cancelled = true;
    clearInterval(this.#heartbeat);
    await Promise.allSettled(this.#subscriptions.map((s) => s.unsubscribe()));
    await this.#queue;
    await this.#release();
  }

  async #release(): Promise<void> {
    const engine = this.#engine;
    this.#engine = null;
    if (engine) await engine.dispose();
    if (this.#ownsKeyset) this.#keyset?.delete();
    this.#keyset = null;
  }

  #loadKeyset(): void {
    const ctx = this.#ctx;
    const override = this.#options.keysetOverride;
    try {
      if (override === undefined) {
        this.#keyset = loadSiteCkks(ctx.ckks, ctx.keysDir, this.member, ctx.config.federation.id);
        this.#ownsKeyset = true;
      } else {
        this.#keyset = typeof override === 'function' ? override() : override;
      }
    } catch (err) {
      this.#keysetError = describe(err);
      ctx.log.error(
        { err: this.#keysetError },
        'cannot load the CKKS key: this site will not train and will vote NO',
      );
    }
  }

  /**
   * Step 8: a candidate prepared before a crash. The site may not read the decision log (its NATS
   * user has no JetStream access), so it keeps the newest candidate (PREPARED) and settles it on
   * the round's decision, or on the next RoundOpen: a base equal to the candidate means COMMIT, a
   * base equal to the head means ABORT. Older candidates are children of the same head, so their
   * rounds cannot have committed: they are discarded.
   */
  #recoverPrepared(): void {
    const rounds = this.#store.preparedRounds();
    if (rounds.length === 0) {
      this.machine.transition('READY', 'loaded');
      return;
    }
    this.machine.transition('RECOVERING', `prepared candidates for rounds ${rounds.join(', ')}`);
    const newest = rounds.at(-1)!;
    for (const r of rounds) if (r !== newest) this.#store.abortPrepared(r);
    let candidate: PreparedCandidate | null = null;
    try {
      candidate = this.#store.prepared(newest);
    } catch (err) {
      this.#ctx.log.error({ round: newest, err: describe(err) }, 'prepared candidate unreadable: discarded');
      this.#store.abortPrepared(newest);
    }
    if (candidate === null) {
      this.machine.transition('READY', 'nothing left to recover');
      return;
    }
    this.#preparedRound = newest;
    this.machine.transition('PREPARED', `candidate of round ${newest} kept until its decision`);
  }

  // ---- messages ----

  async #receive<T extends ControlType>(msg: InboundMessage, type: T): Promise<void> {
    if (this.#stopping) return;
    let opened: OpenedControl<T>;
    try {
      opened = openControl(msg.data, type, this.#ctx.keys);
    } catch (err) {
      this.#ctx.log.warn({ subject: msg.subject, err: describe(err) }, `${type} refused`);
      return;
    }
    if (opened.signer !== this.#ctx.members.coordinator) {
      this.#ctx.log.warn({ signer: opened.signer }, `${type} not signed by the coordinator: ignored`);
      return;
    }
    const body = opened.body as { federation: string; round: number };
    if (body.federation !== this.#ctx.config.federation.id) {
      this.#ctx.log.warn({ federation: body.federation }, `${type} of another federation: ignored`);
      return;
    }
    if (type === 'prepare' || type === 'decision') {
      // A straggler still training for this round stops (its update is no longer wanted).
      if (this.#current?.round === body.round) this.#current.cancelled = true;
    }
    this.#enqueue(async () => {
      if (this.#stopping) return;
      if (type === 'round-open') await this.#onRoundOpen(opened.body as ControlBodies['round-open']);
      else if (type === 'prepare') await this.#onPrepare(opened.body as ControlBodies['prepare']);
      else await this.#onDecision(opened.body as ControlBodies['decision']);
    });
  }

  #enqueue(task: () => Promise<void>): void {
    this.#queue = this.#queue.then(task).catch((err: unknown) => {
      this.#ctx.log.error({ err: describe(err) }, 'agent step failed');
      this.#recover(err);
    });
  }

  /** After an unexpected failure: ERROR → RECOVERING → PREPARED (candidate still there) or READY. */
  #recover(err: unknown): void {
    const m = this.machine;
    if (m.state !== 'ERROR' && m.can('ERROR')) m.transition('ERROR', describe(err).slice(0, 200));
    if (m.state !== 'ERROR') return;
    m.transition('RECOVERING', 'after an error');
    const r = this.#preparedRound;
    let kept = false;
    try {
      kept = r !== null && this.#store.prepared(r) !== null;
    } catch {
      kept = false;
    }
    if (kept) {
      m.transition('PREPARED', `candidate of round ${r} kept`);
    } else {
      this.#preparedRound = null;
      m.transition('READY', 'recovered');
    }
  }

  // ---- step 2: train and send ----

  async #onRoundOpen(open: ControlBodies['round-open']): Promise<void> {
    const log = this.#ctx.log.child({ round: open.round });
    if (this.machine.state === 'PREPARED') await this.#settleFromRoundOpen(open);
    const assignment = open.assignments.find((a) => a.site === this.member);
    if (assignment === undefined) {
      log.debug('round opened without this site');
      return;
    }
    const skip = (reason: string) => {
      this.#stats.roundsSkipped++;
      log.warn({ reason }, 'skipping the round');
    };
    const head = this.#store.head()!;
    if (this.machine.state !== 'READY') return skip(`busy (${this.machine.state})`);
    if (!bytesEqual(open.baseCommit, head.hash) || open.version !== head.height) {
      return skip(
        `base commit ${bytesToHex(open.baseCommit)} (height ${open.version}) is not my head ${bytesToHex(head.hash)} (height ${head.height}); catching up by replay is future work`,
      );
    }
    if (this.#keyset === null) return skip(`cannot encrypt: ${this.#keysetError}`);
    if (Date.now() >= open.deadlineUnixMs) return skip('deadline already passed');
    const engine = this.#engine!;
    const current: CurrentRound = { round: open.round, cancelled: false };
    this.#current = current;
    const stale = () => current.cancelled || this.#stopping || Date.now() >= open.deadlineUnixMs;
    this.machine.transition('TRAINING', `RoundOpen r${open.round}`);
    try {
      const learning = this.#ctx.config.learning;
      const w = this.#store.readModel(head);
      const t0 = performance.now();
      const trained = await engine.train(this.#spec, w, this.#shard, {
        learningRate: learning.learningRate,
        momentum: 0,
        batchSize: learning.batchSize,
        epochs: learning.epochs,
        proximalMu: this.#strategy.clientProximalMu,
        shuffleSeed: counterRandom(learning.initSeed >>> 0, open.round >>> 0, this.#siteIndex),
      });
      this.#stats.roundsTrained++;
      if (stale()) {
        this.machine.transition('READY', `round ${open.round} cancelled or past its deadline`);
        return;
      }
      // u = (w_local − w) · n_k · m / N: the plain sum over the m sites is N/… times FedAvg's mean.
      const m = open.assignments.length;
      const scale = (this.#shard.count * m) / open.totalExamples;
      if (!(scale > 0) || !Number.isFinite(scale)) {
        throw new InvalidArgumentError(
          `RoundOpen totalExamples ${open.totalExamples} cannot weigh ${this.#shard.count} examples over ${m} sites`,
        );
      }
      const update = new Float32Array(w.length);
      let squares = 0;
      for (let i = 0; i < update.length; i++) {
        const u = (trained.parameters[i]! - w[i]!) * scale;
        update[i] = u;
        squares += update[i]! * update[i]!;
      }
      const rms = Math.sqrt(squares / Math.max(1, update.length));
      this.machine.transition(
        'UPLOADING',
        `trained: loss ${trained.meanLoss.toFixed(4)}, rms ${rms.toExponential(3)}`,
      );
      const previous = this.#store.loadResidual();
      const encoded = encodeUpdate({
        update,
        residual: previous !== null && previous.length === update.length ? previous : null,
        credentials: { signer: this.member, ckks: this.#keyset, signing: this.#ctx.signing },
        context: {
          federation: this.#ctx.config.federation.id,
          round: open.round,
          baseCommit: head.hash,
          version: head.height,
        },
        options: {
          bits: open.bits as CodecBits,
          clip: open.clip,
          maxContributors: open.maxContributors,
          crcChunkBytes: open.crcChunkBytes,
        },
        exampleWeight: this.#shard.count,
      });
      this.#store.saveResidual(encoded.residual);
      const subject = this.#ctx.subjects.update(assignment.aggregator, this.member);
      for (const block of encoded.blocks) {
        if (stale()) {
          this.machine.transition('READY', `upload of round ${open.round} abandoned`);
          return;
        }
        await this.#ctx.transport.request(subject, block);
        this.#stats.blocksSent++;
      }
      await this.#ctx.transport.request(subject, encoded.manifest);
      this.#stats.updatesSent++;
      this.#lastUpdate = {
        round: open.round,
        rms,
        bytes: encoded.manifest.length + encoded.blocks.reduce((a, b) => a + b.length, 0),
      };
      log.info(
        {
          aggregator: assignment.aggregator,
          blocks: encoded.blocks.length,
          examples: this.#shard.count,
          rms,
          seconds: Number(((performance.now() - t0) / 1000).toFixed(3)),
        },
        'update sent',
      );
      this.machine.transition('READY', `update of round ${open.round} acknowledged`);
    } catch (err) {
      log.error({ err: describe(err) }, 'round failed: update discarded');
      const state = stateOf(this.machine); // not narrowed by the checks above: training moved it
      if (state === 'TRAINING' || state === 'UPLOADING') {
        this.machine.transition('READY', `round ${open.round} failed`);
      }
    } finally {
      if (this.#current === current) this.#current = null;
    }
  }

  /**
   * A RoundOpen while a candidate is prepared (its decision was missed): a base equal to the
   * candidate's commit proves it was committed, a base equal to the head proves it was not.
   */
  async #settleFromRoundOpen(open: ControlBodies['round-open']): Promise<void> {
    const round = this.#preparedRound;
    if (round === null || open.round <= round) return;
    const candidate = this.#store.prepared(round);
    if (candidate !== null && bytesEqual(open.baseCommit, candidate.commit.hash)) {
      const head = this.#store.commitPrepared(round, candidate.commit.hash);
      this.#preparedRound = null;
      this.#stats.commits++;
      this.machine.transition(
        'READY',
        `round ${open.round} opens on the candidate of round ${round}: committed`,
      );
      await this.#switched(round, head, Date.now());
    } else if (bytesEqual(open.baseCommit, this.#store.head()!.hash)) {
      this.#store.abortPrepared(round);
      this.#preparedRound = null;
      this.#stats.aborts++;
      this.machine.transition('READY', `round ${open.round} opens on the head: round ${round} aborted`);
    }
  }

  // ---- step 5: vote ----

  async #onPrepare(prepare: ControlBodies['prepare']): Promise<void> {
    const log = this.#ctx.log.child({ round: prepare.round });
    if (this.machine.state === 'PREPARED') {
      const candidate = this.#preparedRound === null ? null : this.#store.prepared(this.#preparedRound);
      if (candidate !== null && this.#preparedRound === prepare.round) {
        await this.#vote(prepare.round, true, '', candidate.commit); // a repeated PREPARE
      } else {
        await this.#vote(
          prepare.round,
          false,
          `still prepared for round ${this.#preparedRound}, awaiting its decision`,
        );
      }
      return;
    }
    if (this.machine.state !== 'READY') {
      await this.#vote(prepare.round, false, `busy (${this.machine.state})`);
      return;
    }
    let candidate: PreparedCandidate;
    try {
      candidate = this.#candidate(prepare);
      this.#store.prepare(candidate);
    } catch (err) {
      const reason = describe(err);
      log.warn({ reason }, 'voting NO');
      await this.#vote(prepare.round, false, reason);
      return;
    }
    this.#preparedRound = prepare.round;
    this.machine.transition(
      'PREPARED',
      `PREPARE r${prepare.round} ${bytesToHex(candidate.commit.hash).slice(0, 12)}`,
    );
    await this.#vote(prepare.round, true, '', candidate.commit);
  }

  /** w′ and its commit from a PREPARE; throws {@link VoteNo} (or any error) with the NO reason. */
  #candidate(prepare: ControlBodies['prepare']): PreparedCandidate {
    if (this.#keyset === null) throw new VoteNo(`cannot decrypt: ${this.#keysetError}`);
    const head = this.#store.head()!;
    if (!bytesEqual(prepare.baseCommit, head.hash) || prepare.version !== head.height) {
      throw new VoteNo(
        `wrong base: PREPARE is on ${bytesToHex(prepare.baseCommit)} (height ${prepare.version}), my head is ${bytesToHex(head.hash)} (height ${head.height})`,
      );
    }
    if (prepare.round <= head.round) {
      throw new VoteNo(`round ${prepare.round} is not after my head's round ${head.round}`);
    }
    const w = this.#store.readModel(head);
    if (prepare.totalParams !== w.length) {
      throw new VoteNo(`aggregate has ${prepare.totalParams} parameters, the model ${w.length}`);
    }
    if (prepare.contributors.length === 0) throw new VoteNo('aggregate has no contributors');
    const { participants: m, totalExamples: N, totalWeight: W } = prepare;
    if (!(m >= 1 && N > 0 && W > 0 && Number.isFinite(N) && Number.isFinite(W))) {
      throw new VoteNo(`cannot average with participants ${m}, totalExamples ${N}, totalWeight ${W}`);
    }
    const aggregate: Aggregate = {
      encoding: prepare.encoding,
      totalParams: prepare.totalParams,
      sites: prepare.contributors,
      contributors: prepare.contributors.length,
      totalWeight: W,
      ciphertexts: prepare.ciphertexts,
    };
    const decoded = decodeAggregate(this.#keyset, aggregate);
    // Δ̄ = sum · N / (m · W): the sum holds Σ_k n_k·Δ_k · m/N.
    const meanDelta = meanFromSum(decoded.sum, (m * W) / N);
    const next = this.#strategy.apply(w, meanDelta, this.#store.loadStrategyState());
    const commit = roundCommit(head, {
      round: prepare.round,
      aggregateDigest: prepare.aggregateDigest,
      modelHash: modelHash(next.parameters),
      params: prepare.params,
    });
    return { commit, parameters: next.parameters, strategyState: next.state };
  }

  async #vote(round: number, yes: boolean, reason: string, commit?: Commit): Promise<void> {
    const sent = this.#lastUpdate?.round === round ? this.#lastUpdate : null;
    const rms = sent?.rms ?? 0;
    const body: ControlBodies['vote'] = {
      federation: this.#ctx.config.federation.id,
      round,
      member: this.member,
      yes,
      commitHash: commit?.hash ?? new Uint8Array(0),
      modelHash: commit?.modelHash ?? new Uint8Array(0),
      reason: reason.slice(0, 1000),
      meanUpdateRms: rms,
      bytesSent: sent?.bytes ?? 0,
    };
    if (yes) this.#stats.votesYes++;
    else this.#stats.votesNo++;
    this.#stats.lastVote = {
      round,
      yes,
      reason: body.reason,
      commitHash: commit ? bytesToHex(commit.hash) : '',
    };
    try {
      await this.#ctx.transport.request(
        this.#ctx.subjects.vote(this.member),
        sealControl('vote', body, this.member, this.#ctx.signing),
      );
      this.#ctx.log.info(
        {
          round,
          yes,
          reason: body.reason || undefined,
          commit: commit ? bytesToHex(commit.hash) : undefined,
        },
        'voted',
      );
    } catch (err) {
      this.#ctx.log.error({ round, yes, err: describe(err) }, 'vote not acknowledged');
    }
  }

  // ---- step 7: switch ----

  async #onDecision(decision: ControlBodies['decision']): Promise<void> {
    const log = this.#ctx.log.child({ round: decision.round });
    const round = this.#preparedRound;
    if (this.machine.state === 'PREPARED' && round === decision.round) {
      this.#preparedRound = null;
      if (!decision.commit) {
        this.#store.abortPrepared(round);
        this.#stats.aborts++;
        this.machine.transition('READY', `ABORT r${round}: ${decision.reason || 'no reason given'}`);
        return;
      }
      let head: Commit;
      try {
        head = this.#store.commitPrepared(round, decision.commitHash);
      } catch (err) {
        if (err instanceof VersionError && err.code === 'PREPARED_MISMATCH') {
          // The federation committed another model than this site computed: it is diverged.
          this.#store.abortPrepared(round);
          this.machine.transition('READY', `COMMIT r${round} of another candidate`);
          log.error(
            { decided: bytesToHex(decision.commitHash), err: err.message },
            'the committed candidate is not mine: this site must catch up (replay is future work)',
          );
          return;
        }
        this.#preparedRound = round;
        throw err;
      }
      const switchedUnixMs = Date.now();
      this.#stats.commits++;
      this.machine.transition('READY', `COMMIT r${round} ${bytesToHex(head.hash).slice(0, 12)}`);
      await this.#switched(round, head, switchedUnixMs);
      return;
    }
    if (decision.commit) {
      const head = this.#store.head()!;
      if (!bytesEqual(head.hash, decision.commitHash)) {
        log.warn(
          {
            decided: bytesToHex(decision.commitHash),
            head: bytesToHex(head.hash),
            state: this.machine.state,
          },
          'COMMIT of a round this site did not prepare: its head is behind and it must catch up (replay is future work)',
        );
      }
    } else {
      log.info({ reason: decision.reason }, 'ABORT of a round this site did not prepare');
    }
  }

  async #switched(round: number, head: Commit, switchedUnixMs: number): Promise<void> {
    let testAccuracy = -1;
    if (this.#testSet !== null && this.#engine !== null) {
      try {
        const parameters = this.#store.readModel(head);
        testAccuracy = (await this.#engine.evaluate(this.#spec, parameters, this.#testSet)).accuracy;
        this.#stats.lastTestAccuracy = testAccuracy;
      } catch (err) {
        this.#ctx.log.error({ round, err: describe(err) }, 'evaluation failed');
      }
    }
    this.#ctx.log.info(
      { round, head: bytesToHex(head.hash), height: head.height, testAccuracy },
      'switched to the committed model',
    );
    try {
      await this.#ctx.transport.publish(
        this.#ctx.subjects.switched(this.member),
        sealControl(
          'switched',
          {
            federation: this.#ctx.config.federation.id,
            round,
            member: this.member,
            commitHash: head.hash,
            switchedUnixMs,
            testAccuracy,
          },
          this.member,
          this.#ctx.signing,
        ),
      );
    } catch (err) {
      this.#ctx.log.error({ round, err: describe(err) }, 'switched not published');
    }
  }

  // ---- heartbeat ----

  async #sendHeartbeat(): Promise<void> {
    if (this.#stopping) return;
    try {
      const head = this.#store.head()!;
      await this.#ctx.transport.publish(
        this.#ctx.subjects.heartbeat(this.member),
        sealControl(
          'heartbeat',
          {
            federation: this.#ctx.config.federation.id,
            member: this.member,
            role: 'site',
            sentUnixMs: Date.now(),
            head: head.hash,
            examples: this.#shard.count,
            state: this.machine.state,
          },
          this.member,
          this.#ctx.signing,
        ),
      );
    } catch (err) {
      if (!this.#stopping) this.#ctx.log.warn({ err: describe(err) }, 'heartbeat not sent');
    }
  }
}

async function createEngine(learning: MemberContext['config']['learning']): Promise<TrainingEngine> {
  return learning.engine === 'webgpu'
    ? createWebGpuEngine({ allowSoftware: learning.allowSoftwareGpu })
    : createCpuEngine();
}

function stateOf(machine: AgentStateMachine): AgentState {
  return machine.state;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && !(err instanceof VoteNo) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

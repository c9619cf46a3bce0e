import { BlockRejectedError, CohortError } from '../../errors/index.ts';
// Not re-exported by src/protocol/index.ts (yet).
import {
  type CryptoTimingObserver,
  decodeBlockBody,
  decodeManifestBody,
  encodeAggregate,
  FRAME_KIND,
  maxBlockFrameBytes,
  maxManifestFrameBytes,
  openControl,
  RejectionCounters,
  sealControl,
  signatureTimer,
  unframe,
} from '../../protocol/index.ts';
import type { InboundMessage, TransportSubscription } from '../../transport/index.ts';
import { failpoint } from '../failpoint.ts';
import { intakeLimits } from '../intake-limits.ts';
import type { MemberContext } from '../member-context.ts';
import { contributionObjectName, updatesBucketName, updatesStoreWriter } from './contribution-store.ts';
import { RoundCollector, type RoundOpenBody } from './round-collector.ts';

/** The reply that acknowledges an accepted block or manifest. */
export const AGGREGATOR_ACK: Uint8Array = Uint8Array.of(1);

/** Where the aggregator stands (also the `state` of its heartbeat). */
export type AggregatorState = 'idle' | 'collecting' | 'sending' | 'stopped';

/** Options of {@link startAggregator}. */
export interface AggregatorOptions {
  /**
   * How long a block or manifest naming a round newer than the current one waits for that
   * round's RoundOpen (sites may be faster than the broadcast), in ms. Default: `nats.timeoutMs`.
   */
  readonly openWaitMs?: number;
  /**
   * Reports the signature verifications it runs (`site-update` for sites' blocks and manifests,
   * `control` for RoundOpens) and its CKKS `load`/`add` of site updates; e.g.
   * `createAggregatorMetrics(…).timings`. Nothing is timed without it.
   */
  readonly cryptoTimings?: CryptoTimingObserver;
}

/** The partial last sent (or attempted) to the coordinator. */
export interface PartialReport {
  readonly round: number;
  readonly contributors: number;
  readonly sites: readonly string[];
  readonly blocks: number;
  readonly sent: boolean;
}

/** Counters of a running aggregator. */
export interface AggregatorStats {
  readonly member: string;
  readonly state: AggregatorState;
  /** Current (last opened) round, or null before the first RoundOpen. */
  readonly round: number | null;
  readonly roundsOpened: number;
  /** RoundOpens refused: not the coordinator's, bad signature, other federation, impossible values. */
  readonly roundOpensRefused: number;
  readonly blocksAccepted: number;
  readonly manifestsAccepted: number;
  /** Site updates added to a round's sum. */
  readonly updatesAdded: number;
  /** Blocks and manifests refused (each answered with an error to its sender), and transport drops. */
  readonly rejected: number;
  /** Refusals by reason (`BlockRejectedError.reason`). */
  readonly rejections: Readonly<Record<string, number>>;
  /** Chunks or messages the transport dropped before any handler ran, by `TransportDropReason`. */
  readonly transportDrops: Readonly<Record<string, number>>;
  readonly partialsSent: number;
  readonly partialsFailed: number;
  /** Site updates kept in the updates store for the audit (`cohort-F-updates`). */
  readonly contributionsStored: number;
  /** Site updates that could not be stored (their round's partial is then not sent). */
  readonly contributionsFailed: number;
  /** Rounds closed with no complete update (nothing sent). */
  readonly emptyRounds: number;
  readonly heartbeatsSent: number;
  readonly lastPartial: PartialReport | null;
}

/** A running aggregator. */
export interface AggregatorService {
  /** Stops heartbeats and subscriptions, waits for a partial being sent, frees SEAL memory. Does not close the context. */
  stop(): Promise<void>;
  stats(): AggregatorStats;
}

interface Waiter {
  readonly round: number;
  readonly resolve: () => void;
}

/**
 * Runs the aggregator role (docs/round-protocol.md step 3) on `ctx`:
 *
 * - `round.open`: a RoundOpen signed by the coordinator (no one else) for this federation and a
 *   round newer than the current one starts a round; an unfinished older round is dropped.
 * - `update.<me>.<site>` (requests): each message is a framed ParameterBlock or UpdateManifest.
 *   It is refused (the handler throws, the sender gets `TRANSPORT_REMOTE`, the reason is counted)
 *   unless it is for the current round, signed by `<site>`, `<site>` is assigned here, and it
 *   passes `BlockVerifier` with the round's context and encoding. Accepted ones are acked with
 *   {@link AGGREGATOR_ACK}; a repeat of an accepted one is acked again.
 * - When every assigned site is in (or failed for good), or at `deadlineUnixMs`, the sum is
 *   signed (`encodeAggregate`) and its blocks, then its manifest, are sent one by one with
 *   `request(partial(<me>))`. With no complete update nothing is sent.
 * - A signed heartbeat (role `aggregator`) every `round.heartbeatMs`.
 */
export async function startAggregator(
  ctx: MemberContext,
  options: AggregatorOptions = {},
): Promise<AggregatorService> {
  const log = ctx.log.child({ component: 'aggregator' });
  const federation = ctx.config.federation.id;
  const subjects = ctx.subjects;
  const allowedAlgorithms = ctx.config.crypto.signature.allowed;
  const openWaitMs = options.openWaitMs ?? ctx.config.nats.timeoutMs;
  const counters = new RejectionCounters();
  const controlTimer = signatureTimer(options.cryptoTimings, 'control');
  const updatePrefix = subjects.updatesFor(ctx.member).slice(0, -1); // "cohort.F.update.<me>."

  let state: AggregatorState = 'idle';
  let current: RoundCollector | undefined;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let waiters: Waiter[] = [];
  const sending = new Set<Promise<void>>();
  const n = {
    roundsOpened: 0,
    roundOpensRefused: 0,
    blocksAccepted: 0,
    manifestsAccepted: 0,
    updatesAdded: 0,
    rejected: 0,
    partialsSent: 0,
    partialsFailed: 0,
    contributionsStored: 0,
    contributionsFailed: 0,
    emptyRounds: 0,
    heartbeatsSent: 0,
  };
  let lastPartial: PartialReport | null = null;
  const updatesStore = updatesStoreWriter(ctx.transport.connection, updatesBucketName(federation));
  /** Each round's contributions being stored: its partial is sent only once all are in the store. */
  const storing = new WeakMap<RoundCollector, Promise<void>[]>();
  const storeContribution = (round: RoundCollector, site: string, bytes: Uint8Array) => {
    const name = contributionObjectName(round.round, round.open.attempt, site);
    const p = (async () => {
      await (await updatesStore()).putBlob({ name }, bytes);
      n.contributionsStored++;
    })().catch((err: unknown) => {
      n.contributionsFailed++;
      throw err;
    });
    p.catch(() => undefined); // awaited before the partial is sent
    const list = storing.get(round) ?? [];
    list.push(p);
    storing.set(round, list);
  };
  const transportDrops: Record<string, number> = {};

  // ---- heartbeat -------------------------------------------------------------------------
  const heartbeat = () => {
    if (stopped) return;
    const bytes = sealControl(
      'heartbeat',
      {
        federation,
        member: ctx.member,
        role: 'aggregator',
        sentUnixMs: Date.now(),
        head: new Uint8Array(0),
        examples: 0,
        height: 0,
        state,
      },
      ctx.member,
      ctx.signing,
    );
    ctx.transport.publish(subjects.heartbeat(ctx.member), bytes).then(
      () => {
        n.heartbeatsSent++;
      },
      (err: unknown) => {
        if (!stopped) log.warn({ code: codeOf(err), detail: messageOf(err) }, 'heartbeat not sent');
      },
    );
  };
  const heartbeatTimer = setInterval(heartbeat, ctx.config.round.heartbeatMs);

  // ---- rounds ----------------------------------------------------------------------------
  const startRound = (open: RoundOpenBody) => {
    const collector = new RoundCollector({
      open,
      member: ctx.member,
      ckks: ctx.ckks,
      keys: ctx.keys,
      allowedAlgorithms,
      counters,
      timings: options.cryptoTimings,
    });
    if (current && !current.closed) {
      log.warn(
        { round: current.round, next: open.round, contributors: current.contributors },
        'round superseded before it finished; its updates are dropped',
      );
    }
    current?.dispose();
    clearTimeout(deadlineTimer);
    current = collector;
    state = 'collecting';
    n.roundsOpened++;
    const wait = Math.max(0, open.deadlineUnixMs - Date.now());
    log.info(
      { round: open.round, version: open.version, sites: [...collector.assigned], deadlineInMs: wait },
      'round open',
    );
    const ready = waiters.filter((w) => w.round <= open.round);
    waiters = waiters.filter((w) => w.round > open.round);
    for (const w of ready) w.resolve();
    deadlineTimer = setTimeout(() => finish(collector, 'deadline'), wait);
    if (collector.complete) setImmediate(() => finish(collector, 'all sites in'));
  };

  const finish = (collector: RoundCollector, why: string) => {
    try {
      closeRound(collector, why);
    } catch (err) {
      n.partialsFailed++;
      if (collector === current && state !== 'stopped') state = 'idle';
      log.error(
        { round: collector.round, code: codeOf(err), detail: messageOf(err) },
        'partial aggregate not built',
      );
    }
  };

  const closeRound = (collector: RoundCollector, why: string) => {
    if (collector.closed || stopped) return;
    if (collector === current) clearTimeout(deadlineTimer);
    const missing = collector.missing();
    const closed = collector.close();
    if (!closed) {
      n.emptyRounds++;
      if (collector === current) state = 'idle';
      log.warn(
        { round: collector.round, why, missing },
        'round closed with no complete update; no partial sent',
      );
      return;
    }
    const { aggregate, siteManifests } = closed;
    const encoded = encodeAggregate(
      aggregate,
      { signer: ctx.member, signing: ctx.signing },
      collector.context,
      {
        crcChunkBytes: collector.open.crcChunkBytes,
        siteManifests,
        participants: collector.open.assignments.length,
      },
    );
    const sites = aggregate.sites.map((c) => c.site);
    log.info(
      { round: collector.round, why, contributors: aggregate.contributors, sites, missing },
      'sending partial aggregate',
    );
    state = 'sending';
    const stored = storing.get(collector) ?? [];
    storing.delete(collector);
    const p = send(collector.round, encoded.blocks, encoded.manifest, sites, stored).finally(() => {
      sending.delete(p);
      if (collector === current && state === 'sending') state = 'idle';
    });
    sending.add(p);
  };

  const send = async (
    round: number,
    blocks: Uint8Array[],
    manifest: Uint8Array,
    sites: string[],
    stored: readonly Promise<void>[],
  ) => {
    const subject = subjects.partial(ctx.member);
    const report = { round, contributors: sites.length, sites, blocks: blocks.length };
    try {
      // A sum whose contributions the audit could not re-add is not offered (docs/log-format.md).
      try {
        await Promise.all(stored);
      } catch (err) {
        throw new CohortError(
          'CONTRIBUTION_NOT_STORED',
          `a contribution of round ${round} was not stored: ${messageOf(err)}`,
          { cause: err },
        );
      }
      for (const frame of [...blocks, manifest]) {
        if (stopped) throw new CohortError('STOPPED', 'aggregator stopped while sending');
        await ctx.transport.request(subject, frame);
      }
      n.partialsSent++;
      lastPartial = { ...report, sent: true };
      log.info({ round, contributors: sites.length }, 'partial aggregate acknowledged');
    } catch (err) {
      n.partialsFailed++;
      lastPartial = { ...report, sent: false };
      log.error({ round, code: codeOf(err), detail: messageOf(err) }, 'partial aggregate not delivered');
    }
  };

  /** Resolves once a RoundOpen for `round` or later has arrived, or after `openWaitMs`. */
  const waitForRound = (round: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, openWaitMs);
      function done() {
        clearTimeout(timer);
        waiters = waiters.filter((w) => w !== waiter);
        resolve();
      }
      const waiter: Waiter = { round, resolve: done };
      waiters.push(waiter);
    });

  // ---- subscriptions ---------------------------------------------------------------------
  const onRoundOpen = async (msg: InboundMessage): Promise<undefined> => {
    try {
      const opened = openControl(msg.data, 'round-open', ctx.keys, {
        signer: ctx.members.coordinator,
        onSignatureVerified: controlTimer,
      });
      const open = opened.body;
      if (open.federation !== federation) {
        throw new BlockRejectedError(
          'WRONG_CONTEXT',
          `round-open for federation ${JSON.stringify(open.federation)}`,
        );
      }
      if (current && open.round <= current.round) {
        log.debug({ round: open.round, current: current.round }, 'round-open for an old round ignored');
        return undefined;
      }
      if (!stopped) startRound(open);
    } catch (err) {
      n.roundOpensRefused++;
      log.warn({ code: codeOf(err), detail: messageOf(err) }, 'round-open refused');
    }
    return undefined;
  };

  const onUpdate = async (msg: InboundMessage): Promise<Uint8Array> => {
    try {
      return await handleUpdate(msg);
    } catch (err) {
      n.rejected++;
      log.warn(
        { subject: msg.subject, round: current?.round, code: codeOf(err), detail: messageOf(err) },
        'update refused',
      );
      throw err;
    }
  };

  const handleUpdate = async (msg: InboundMessage): Promise<Uint8Array> => {
    const site = msg.subject.startsWith(updatePrefix) ? msg.subject.slice(updatePrefix.length) : '';
    const kind = msg.data[5];
    if (site === '' || site.includes('.')) refuse('WRONG_CONTEXT', `unexpected subject ${msg.subject}`);
    if (kind !== FRAME_KIND.block && kind !== FRAME_KIND.manifest) {
      refuse('MALFORMED', `frame kind ${String(kind)} is neither a block nor a manifest`);
    }
    const what = kind === FRAME_KIND.block ? 'block' : 'manifest';
    // Size first: nothing is decoded from a message longer than one ciphertext's block can be.
    const cap =
      kind === FRAME_KIND.block ? maxBlockFrameBytes(ctx.ckks.maxCiphertextBytes) : maxManifestFrameBytes(0);
    if (msg.data.length > cap) refuse('OVERSIZE', `${what} of ${msg.data.length} bytes, at most ${cap}`);
    // Header only, to route it (round, signer) before any signature work; verified below.
    let header: { round: number; signer: string };
    try {
      header =
        kind === FRAME_KIND.block
          ? decodeBlockBody(unframe(msg.data, FRAME_KIND.block))
          : decodeManifestBody(unframe(msg.data, FRAME_KIND.manifest));
    } catch (err) {
      if (err instanceof BlockRejectedError) counters.increment(err.reason);
      throw err;
    }
    if (!current || header.round > current.round) await waitForRound(header.round);
    const round = current;
    if (!round || round.round !== header.round) {
      refuse(
        'WRONG_CONTEXT',
        `${what} is for round ${header.round}, the current round is ${round ? round.round : 'none'}`,
      );
    }
    round.precheck(site, header.signer, what);
    const outcome =
      kind === FRAME_KIND.block ? round.acceptBlock(site, msg.data) : round.acceptManifest(site, msg.data);
    if (outcome !== 'repeat') {
      if (kind === FRAME_KIND.block) n.blocksAccepted++;
      else n.manifestsAccepted++;
    }
    if (outcome === 'added') {
      n.updatesAdded++;
      // Mid-sum: this update is in the running sum, its ack and the round's partial not yet sent.
      failpoint('aggregator.update-added', round.round);
      const contribution = round.takeContribution(site);
      if (contribution !== undefined) storeContribution(round, site, contribution);
      log.info({ round: round.round, site, contributors: round.contributors }, 'site update added');
      // After the ack is on its way: signing and sending the partial take a while.
      if (round.complete) setImmediate(() => finish(round, 'all sites in'));
    }
    return AGGREGATOR_ACK;
  };

  function refuse(reason: BlockRejectedError['reason'], message: string): never {
    counters.increment(reason);
    throw new BlockRejectedError(reason, message);
  }

  // Transport drops count as rejections too (TRANSPORT_OVERSIZE, TRANSPORT_RATE_LIMITED…).
  const onDrop = (reason: string) => {
    n.rejected++;
    transportDrops[reason] = (transportDrops[reason] ?? 0) + 1;
  };
  const subs: TransportSubscription[] = [
    ctx.transport.subscribe(subjects.roundOpen, onRoundOpen, {
      onError: (err) => log.warn({ code: err.code, detail: err.message }, 'round-open subscription error'),
      ...intakeLimits(ctx, 'round-open', onDrop),
    }),
    ctx.transport.subscribe(subjects.updatesFor(ctx.member), onUpdate, {
      // Corrupt chunks are counted (transportDrops), not logged one by one: a flood must not become a log flood.
      ...intakeLimits(ctx, 'site-update', onDrop),
    }),
  ];
  try {
    await Promise.all(subs.map((s) => s.ready()));
  } catch (err) {
    clearInterval(heartbeatTimer);
    await Promise.allSettled(subs.map((s) => s.unsubscribe()));
    throw err;
  }
  heartbeat();
  log.info({ heartbeatMs: ctx.config.round.heartbeatMs }, 'aggregator started');

  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      state = 'stopped';
      clearInterval(heartbeatTimer);
      clearTimeout(deadlineTimer);
      for (const w of waiters) w.resolve();
      await Promise.allSettled(subs.map((s) => s.unsubscribe()));
      await Promise.allSettled([...sending]);
      current?.dispose();
      log.info(aggregatorStatsForLog(), 'aggregator stopped');
    },
    stats,
  };

  function stats(): AggregatorStats {
    return {
      member: ctx.member,
      state,
      round: current ? current.round : null,
      ...n,
      rejections: counters.snapshot(),
      transportDrops: { ...transportDrops },
      lastPartial,
    };
  }

  function aggregatorStatsForLog() {
    const s = stats();
    return { rounds: s.roundsOpened, partialsSent: s.partialsSent, rejected: s.rejected };
  }
}

function codeOf(err: unknown): string {
  return err instanceof CohortError ? err.code : 'ERROR';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

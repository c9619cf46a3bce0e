import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import {
  type CryptoTimingObserver,
  encodeAggregate,
  openControl,
  RejectionCounters,
  sealControl,
  signatureTimer,
} from '../../protocol/index.ts';
import { ContributionError, decodeContribution } from '../../round/index.ts';
import type { InboundMessage, TransportSubscription } from '../../transport/index.ts';
import { failpoint } from '../failpoint.ts';
import { intakeLimits } from '../intake-limits.ts';
import type { MemberContext } from '../member-context.ts';
import { ChildPartialIntake } from './child-partial-intake.ts';
import { contributionWriter } from './contribution-writer.ts';
import type { AggregatorIntakeHost } from './frame-intake.ts';
import { RoundCollector, type RoundOpenBody } from './round-collector.ts';
import { roundOpenFromLog } from './round-open-from-log.ts';
import { SiteUpdateIntake } from './site-update-intake.ts';

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

/** The partial last sent (or attempted) to its parent. */
export interface PartialReport {
  readonly round: number;
  /** Where it went: the coordinator's id, or the parent aggregator's in a deeper tree. */
  readonly parent: string;
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
  /** Rounds opened from the log because their RoundOpen broadcast never arrived here. */
  readonly roundsFromLog: number;
  readonly blocksAccepted: number;
  readonly manifestsAccepted: number;
  /** Site updates added to a round's sum. */
  readonly updatesAdded: number;
  /** Child aggregators' partials added to a round's sum (a parent in a tree deeper than one level). */
  readonly partialsReceived: number;
  /**
   * Blocks and manifests refused, of sites' updates and children's partials (each answered with an
   * error to its sender), and transport drops.
   */
  readonly rejected: number;
  /** Refusals by reason (`BlockRejectedError.reason`). */
  readonly rejections: Readonly<Record<string, number>>;
  /** Chunks or messages the transport dropped before any handler ran, by `TransportDropReason`. */
  readonly transportDrops: Readonly<Record<string, number>>;
  readonly partialsSent: number;
  readonly partialsFailed: number;
  /** Site updates kept for the audit in the contributions stream (`COHORT_<F>_CONTRIBUTIONS`). */
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
 *   `AGGREGATOR_ACK`; a repeat of an accepted one is acked again (`SiteUpdateIntake`).
 * - `subpartial.<me>.<child>` (requests), in a round whose tree (RoundOpen's `parents`) makes it a
 *   parent: a child aggregator's partial, checked cheapest first: size, kind, header (round, signer
 *   = `<child>`), `<child>` is its child this round, then `PartialIntake` (the child's key, every
 *   listed site at or below the child and backed by its own signed manifest, the signatures) and
 *   added to the same sum as its own sites. A refusal is counted by reason and fails that child's
 *   partial for the round (`ChildPartialIntake`).
 * - When every assigned site and child partial is in (or failed for good), or at its deadline
 *   (RoundOpen's `deadlineUnixMs`, or its tree link's: later than each child's), the sum is signed
 *   (`encodeAggregate`, forwarding every summed site's own manifest) and its blocks, then its
 *   manifest, are sent one by one with `request(partial(<me>))` to the coordinator or
 *   `request(subpartial(<parent>, <me>))` to its parent. With no complete update nothing is sent.
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

  let state: AggregatorState = 'idle';
  let current: RoundCollector | undefined;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let waiters: Waiter[] = [];
  const sending = new Set<Promise<void>>();
  const n = {
    roundsOpened: 0,
    roundOpensRefused: 0,
    roundsFromLog: 0,
    rejected: 0,
    partialsSent: 0,
    partialsFailed: 0,
    contributionsStored: 0,
    contributionsFailed: 0,
    emptyRounds: 0,
    heartbeatsSent: 0,
  };
  let lastPartial: PartialReport | null = null;
  // Its own subjects of the contributions stream, write-once (docs/log-format.md, "Contributions").
  const writeContribution = contributionWriter(ctx.transport.connection, federation, ctx.member, {
    timeoutMs: ctx.config.nats.timeoutMs,
  });
  /** Each round's contributions being stored: its partial is sent only once all are in the store. */
  const storing = new WeakMap<RoundCollector, Promise<void>[]>();
  const storeContribution = (round: RoundCollector, site: string, bytes: Uint8Array) => {
    const p = (async () => {
      await writeContribution(
        { round: round.round, attempt: round.open.attempt, site },
        decodeContribution(bytes),
      );
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
    const wait = Math.max(0, collector.deadlineUnixMs - Date.now());
    log.info(
      {
        round: open.round,
        version: open.version,
        sites: [...collector.assigned],
        ...(collector.tree.levels > 1 ? { parent: collector.parent, children: collector.children } : {}),
        deadlineInMs: wait,
      },
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
    const missingChildren = collector.missingChildren();
    const closed = collector.close();
    if (!closed) {
      n.emptyRounds++;
      if (collector === current) state = 'idle';
      log.warn(
        { round: collector.round, why, missing, ...(missingChildren.length > 0 ? { missingChildren } : {}) },
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
      },
    );
    const sites = aggregate.sites.map((c) => c.site);
    const parent = collector.parent;
    log.info(
      {
        round: collector.round,
        why,
        contributors: aggregate.contributors,
        sites,
        missing,
        ...(collector.tree.levels > 1 ? { parent, missingChildren } : {}),
      },
      'sending partial aggregate',
    );
    state = 'sending';
    const stored = storing.get(collector) ?? [];
    storing.delete(collector);
    const subject = parent === '' ? subjects.partial(ctx.member) : subjects.subpartial(parent, ctx.member);
    const to = parent === '' ? ctx.members.coordinator : parent;
    const p = send(collector.round, subject, to, encoded.blocks, encoded.manifest, sites, stored).finally(
      () => {
        sending.delete(p);
        if (collector === current && state === 'sending') state = 'idle';
      },
    );
    sending.add(p);
  };

  const send = async (
    round: number,
    subject: string,
    parent: string,
    blocks: Uint8Array[],
    manifest: Uint8Array,
    sites: string[],
    stored: readonly Promise<void>[],
  ) => {
    const report = { round, parent, contributors: sites.length, sites, blocks: blocks.length };
    try {
      // A sum whose contributions the audit could not re-add is not offered (docs/log-format.md).
      try {
        await Promise.all(stored);
      } catch (err) {
        throw new ContributionError(
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
      log.info({ round, parent, contributors: sites.length }, 'partial aggregate acknowledged');
    } catch (err) {
      n.partialsFailed++;
      lastPartial = { ...report, sent: false };
      log.error({ round, code: codeOf(err), detail: messageOf(err) }, 'partial aggregate not delivered');
    }
  };

  /** Rounds looked up in the log (once each): frames arrived for them before their RoundOpen. */
  const lookedUp = new Set<number>();
  /**
   * A RoundOpen this aggregator has not heard while frames of its round arrive: read it from the
   * log (appended before it was announced) and open the round from there.
   */
  const openFromLog = async (round: number): Promise<void> => {
    if (lookedUp.has(round) || (current !== undefined && current.round >= round)) return;
    lookedUp.add(round);
    if (lookedUp.size > 64) lookedUp.delete(lookedUp.values().next().value!);
    // A moment first: the broadcast usually comes with (or just before) the first update.
    await new Promise((r) => setTimeout(r, Math.min(openWaitMs, 500)));
    if (stopped || (current !== undefined && current.round >= round)) return;
    try {
      const open = await roundOpenFromLog(ctx, round);
      if (open === undefined || stopped || (current !== undefined && current.round >= open.round)) return;
      n.roundsFromLog++;
      log.info({ round }, 'round open in the log, never announced here: collecting');
      startRound(open);
    } catch (err) {
      log.warn(
        { round, code: codeOf(err), detail: messageOf(err) },
        'the log could not be read for a round open',
      );
    }
  };

  /** Resolves once a RoundOpen for `round` or later has arrived, or after `openWaitMs`. */
  const waitForRound = (round: number) =>
    new Promise<void>((resolve) => {
      void openFromLog(round);
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
      // Tests: a broadcast this aggregator never received (the log still has it: openFromLog).
      if (failpoint('aggregator.round-open-lost', open.round) === 'skip') return undefined;
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

  const host: AggregatorIntakeHost = {
    ctx,
    log,
    counters,
    current: () => current,
    waitForRound,
    finish,
    refused(what, subject, err) {
      n.rejected++;
      log.warn({ subject, round: current?.round, code: codeOf(err), detail: messageOf(err) }, what);
    },
  };
  const updates = new SiteUpdateIntake({ ...host, store: storeContribution });
  const childPartials = new ChildPartialIntake(host);

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
    ctx.transport.subscribe(subjects.updatesFor(ctx.member), updates.handle, {
      // Corrupt chunks are counted (transportDrops), not logged one by one: a flood must not become a log flood.
      ...intakeLimits(ctx, 'site-update', onDrop),
    }),
    // Always subscribed: which rounds make it a parent is up to each RoundOpen.
    ctx.transport.subscribe(subjects.subpartialsFor(ctx.member), childPartials.handle, {
      ...intakeLimits(ctx, 'partial', onDrop),
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
      ...updates.counts,
      partialsReceived: childPartials.received,
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

import { bytesEqual } from '../../../crypto/digest/index.ts';
import { verifySealedEnvelope } from '../../../crypto/kem/index.ts';
import {
  epochIdOfDigests,
  epochSeed,
  holds,
  rosterHolders,
  type ThresholdLaneContext,
  type ThresholdRoster,
} from '../../../crypto/threshold/index.ts';
import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import { type ControlBodies, controlTypeOf, openControl, sealControl } from '../../protocol/index.ts';
import {
  dealMaxBytes,
  envelopeMaxBytes,
  epochDealObjectName,
  epochPublicObjectName,
  epochShareObjectName,
  epochSites,
  type LoggedEpoch,
  PUBLIC_SHARE_CERT_MAX_BYTES,
} from '../../round/index.ts';
import type { MemberContext } from '../member-context.ts';
import type { WriteOnceObjects } from '../store/index.ts';
import {
  dealRecipients,
  decodePublicShare,
  envelopeContents,
  holdersProblem,
  policyThreshold,
  sharePurpose,
  thresholdRosterOf,
} from '../threshold-dealing.ts';
import type { CoordinatorLog } from './coordinator-log.ts';
import type { Membership } from './membership.ts';
import { EXCLUDED_ROUNDS, outvotedConfirmations, ReshareExclusions } from './reshare-exclusions.ts';

/** What a re-sharing needs of the coordinator. */
export interface EpochChangeHost {
  readonly ctx: MemberContext;
  readonly log: CoordinatorLog;
  readonly membership: Membership;
  /** The epoch in force for the next round (the ceremony's, or the last logged). */
  readonly threshold: LoggedEpoch | undefined;
  now(): number;
  stopping(): boolean;
  until(condition: () => boolean, deadline: number): Promise<boolean>;
  aggregates(): Promise<WriteOnceObjects>;
}

/** One re-sharing attempt: its roster and what the roster's sites sent. */
interface Attempt {
  readonly roster: ThresholdRoster;
  readonly seed: Uint8Array;
  phase: 'deal' | 'collect';
  /** Site → its deal (signed bytes, to answer a deal sent again) and its public share's digest. */
  readonly deals: Map<string, { readonly bytes: Uint8Array; readonly digest: Uint8Array }>;
  /** The epoch id the stored public shares give (set when every deal is in). */
  epochId: Uint8Array | undefined;
  /** Site → its signed ready. */
  readonly readies: Map<string, { readonly bytes: Uint8Array; readonly keyConfirmation: string }>;
  /** Site → the dealer it complained about (phase collect), instead of a ready. */
  readonly complaints: Map<string, string>;
  readonly fromRound: number;
  /** Rounds wait for it ({@link EpochDue.mandatory}). */
  readonly mandatory: boolean;
}

/** A re-sharing due before a round: the sites wanted, why, and whether rounds must wait for it. */
export interface EpochDue {
  readonly sites: readonly string[];
  readonly why: string;
  /**
   * A roster site left the registry (revoked): no round may open under the epoch it holds shares
   * of. Otherwise (an enrollment, too few live sites, a rotation) rounds go on under the epoch in
   * force while the re-sharing is tried again before each round.
   */
  readonly mandatory: boolean;
}

/** What {@link EpochChanges.ensure} did. */
export type EpochOutcome =
  | { readonly kind: 'current' }
  | { readonly kind: 'changed'; readonly epoch: LoggedEpoch }
  | {
      readonly kind: 'failed';
      readonly reason: string;
      readonly silent: readonly string[];
      /** Rounds wait for the re-sharing ({@link EpochDue.mandatory}). */
      readonly mandatory: boolean;
    };

/**
 * Re-sharing of the threshold key epoch (docs/threshold-ckks.md, "Re-sharing"). Before a round
 * opens the coordinator compares the epoch in force with the roster it wants: the configured sites
 * the registry (as of the log) lists unrevoked and that are live, less those that failed a
 * re-sharing lately. A roster site revoked or gone from the registry, a live enrolled site not in
 * the roster, or a rotation due (`crypto.threshold.rotateEveryRounds`) starts a re-sharing:
 *
 * 1. `deal`: the coordinator asks the new roster (`epoch-request`, signed, sent again every
 *    heartbeat until answered); each site draws a fresh secret and sends its deal (its signed
 *    public share and one share sealed to each roster site, `epoch.<site>`). The coordinator
 *    checks the public share against the site's registered key and the recipients against the
 *    roster, and stores the deal write-once (`epoch-<g>-<seed>-deal-<site>`).
 * 2. `collect`: once every deal is stored, each site reads them, opens the shares dealt to it,
 *    writes its key file and sends its signed ready for the epoch id (which binds the roster's seed
 *    and every public share).
 * 3. Every roster site ready for the id the coordinator computed from the stored public shares:
 *    the coordinator logs the epoch (`thresholdEpoch`, every ready inside) from the round about to
 *    open. That record is the commit: sites switch to the new keys at that round, and nothing
 *    encrypts under the old epoch again.
 *
 * A phase that times out logs nothing; its silent sites are left out of the rosters for
 * {@link EXCLUDED_ROUNDS} rounds and the next attempt (a new generation) goes on without them. No
 * round opens while a revocation's re-sharing is due: nothing is encrypted under an epoch whose
 * shares the revoked site holds. An enrollment, a rotation, or a roster with fewer live sites than
 * its threshold also re-shares; while that fails, rounds go on under the epoch in force.
 */
export class EpochChanges {
  #attempt: Attempt | undefined;
  #lastGeneration = 0;
  readonly #out = new ReshareExclusions();

  /** The attempt in progress (tests, metrics). */
  get attempt(): { readonly generation: number; readonly phase: string } | undefined {
    const a = this.#attempt;
    return a === undefined ? undefined : { generation: a.roster.generation, phase: a.phase };
  }

  /**
   * The roster wanted from round `round` on, when it differs from the epoch in force or a rotation
   * is due; undefined when the epoch in force stands.
   */
  due(host: EpochChangeHost, round: number): EpochDue | undefined {
    const current = host.threshold;
    if (current === undefined) return undefined;
    const { ctx } = host;
    const holders = ctx.config.crypto.threshold.holders;
    const view = host.log.history.registry ?? ctx.registryView;
    const enrolled = (id: string) => view.role(id) === 'site' && !view.isRevoked(id, round);
    const excluded = (id: string) => this.#out.isOut(id, round);
    const inRoster = new Set(current.roster.sites.map((s) => s.id));
    const wanted = ctx.members.sites
      .map((s) => s.id)
      .filter((id) => enrolled(id) && (inRoster.has(id) || host.membership.isLive(id)) && !excluded(id));
    const sites = wanted.filter((id) => host.membership.isLive(id));
    const gone = [...inRoster].filter((id) => !enrolled(id));
    if (gone.length > 0) return { sites, why: `${gone.join(', ')} left the registry`, mandatory: true };
    // A site the configuration no longer names a holder must hold no share of what is encrypted
    // next; other changes of the committee or of t re-share without holding rounds back.
    const unnamed = rosterHolders(current.roster)
      .map((s) => s.id)
      .filter((id) => holders !== undefined && !holders.includes(id));
    if (unnamed.length > 0)
      return { sites, why: `${unnamed.join(', ')} no longer configured as key holders`, mandatory: true };
    const joining = wanted.filter((id) => !inRoster.has(id));
    if (joining.length > 0) return { sites, why: `${joining.join(', ')} enrolled`, mandatory: false };
    const policy = policyThreshold(ctx.config, enrolled);
    const committee = holdersProblem(current.roster, holders);
    if (committee !== undefined || current.roster.threshold < policy) {
      return {
        sites,
        why: `the configuration changed: ${committee ?? `threshold ${current.roster.threshold} below ${policy}`}`,
        mandatory: false,
      };
    }
    const live = rosterHolders(current.roster).filter((s) => host.membership.isLive(s.id)).length;
    const liveHolders = sites.filter((id) => holders === undefined || holders.includes(id)).length;
    if (live < current.roster.threshold && liveHolders > live) {
      return {
        sites,
        why: `${live} key holder(s) of the epoch are live, the threshold is ${current.roster.threshold}`,
        mandatory: false,
      };
    }
    const every = ctx.config.crypto.threshold.rotateEveryRounds;
    if (every > 0 && round - Math.max(1, current.fromRound) >= every)
      return { sites, why: `rotation every ${every} rounds`, mandatory: false };
    return undefined;
  }

  /**
   * Before round `round` opens: re-shares when {@link due}, and logs the new epoch from `round`.
   * Returns what happened; on `failed` no round may open yet (the caller waits and asks again).
   */
  async ensure(host: EpochChangeHost, round: number): Promise<EpochOutcome> {
    const wanted = this.due(host, round);
    if (wanted === undefined) return { kind: 'current' };
    const { ctx } = host;
    const lanes = ctx.ckks as ThresholdLaneContext;
    // Fresh for every attempt, across restarts too (a site keeps the deal it made for a roster
    // and generation, and the store keeps each deal write-once): the clock's seconds, at least one
    // above any generation logged or tried.
    const generation = Math.max(
      Math.max(this.#lastGeneration, lastLoggedGeneration(host)) + 1,
      Math.floor(host.now() / 1000),
    );
    let roster: ThresholdRoster;
    try {
      const view = host.log.history.registry ?? ctx.registryView;
      // The threshold of the whole enrolled membership, not of the sites live now: a roster of
      // fewer sites keeps it, and sites refuse to deal to a lower one.
      const threshold = policyThreshold(
        ctx.config,
        (id) => view.role(id) === 'site' && !view.isRevoked(id, round),
      );
      roster = thresholdRosterOf({
        federation: ctx.config.federation.id,
        paramsId: lanes.tc.paramsId,
        sites: wanted.sites,
        enrolled: () => true,
        threshold,
        holders: ctx.config.crypto.threshold.holders,
        minContributors: ctx.config.round.minContributors,
        generation,
      });
    } catch (err) {
      // Sites left out after a failed attempt come back at once: the exclusion is for liveness,
      // and too few sites without them would keep every round waiting. Accused dealers come back
      // last, only when no one else is left to bring back.
      this.#out.release();
      return {
        kind: 'failed',
        reason: `no roster to re-share with: ${(err as Error).message}`,
        silent: [],
        mandatory: wanted.mandatory,
      };
    }
    this.#lastGeneration = generation;
    const attempt: Attempt = {
      roster,
      seed: epochSeed(roster),
      phase: 'deal',
      deals: new Map(),
      epochId: undefined,
      readies: new Map(),
      complaints: new Map(),
      fromRound: round,
      mandatory: wanted.mandatory,
    };
    this.#attempt = attempt;
    ctx.log.info(
      { round, generation, sites: roster.sites.length, threshold: roster.threshold, why: wanted.why },
      're-sharing the key epoch',
    );
    try {
      const dealt = await this.#phase(host, attempt);
      if (dealt !== undefined) return dealt;
      const digests = roster.sites.map((s) => attempt.deals.get(s.id)!.digest);
      attempt.epochId = epochIdOfDigests(roster, digests);
      attempt.phase = 'collect';
      const collected = await this.#phase(host, attempt);
      if (collected !== undefined) return collected;
      const split = this.#splitKeys(host, attempt);
      if (split !== undefined) return split;
      const epoch: LoggedEpoch = { roster, epochId: attempt.epochId, fromRound: round };
      await host.log.append({
        thresholdEpoch: {
          generation,
          epochId: attempt.epochId,
          paramsId: roster.paramsId,
          threshold: roster.threshold,
          sites: epochSites(roster),
          fromRound: round,
          readies: roster.sites.map((s) => attempt.readies.get(s.id)!.bytes),
          publicShareDigests: digests,
        },
      });
      ctx.log.info(
        { round, generation, epoch: Buffer.from(attempt.epochId).toString('hex') },
        'key epoch re-shared',
      );
      return { kind: 'changed', epoch };
    } finally {
      this.#attempt = undefined;
    }
  }

  /** Asks the roster for the attempt's phase until every site answered or the phase's deadline; a failure to report, else undefined. */
  async #phase(host: EpochChangeHost, attempt: Attempt): Promise<EpochOutcome | undefined> {
    const { ctx } = host;
    const { phase, mandatory } = attempt;
    const answered = (id: string) =>
      phase === 'deal' ? attempt.deals.has(id) : attempt.readies.has(id) || attempt.complaints.has(id);
    // A complaint ends the attempt at once: it will not be logged.
    const done = () => attempt.complaints.size > 0 || attempt.roster.sites.every((s) => answered(s.id));
    const deadline = host.now() + ctx.config.crypto.threshold.reshareTimeoutMs;
    const body: ControlBodies['epoch-request'] = {
      federation: ctx.config.federation.id,
      generation: attempt.roster.generation,
      paramsId: attempt.roster.paramsId,
      threshold: attempt.roster.threshold,
      sites: epochSites(attempt.roster),
      phase,
      fromRound: attempt.fromRound,
      deadlineUnixMs: deadline,
    };
    const bytes = sealControl('epoch-request', body, ctx.member, ctx.signing);
    // Announcements are at most once: asked again every heartbeat until every site answered.
    while (!done() && !host.stopping() && host.now() < deadline) {
      await ctx.transport.publish(ctx.subjects.epochRequest, bytes).catch((err: unknown) => {
        ctx.log.warn({ err, phase }, 'epoch request not published');
      });
      await host.until(done, Math.min(deadline, host.now() + ctx.config.round.heartbeatMs));
    }
    if (host.stopping()) return { kind: 'failed', reason: 'stopping', silent: [], mandatory };
    if (attempt.complaints.size > 0) {
      const out = this.#out.complaints(attempt.complaints, attempt.fromRound);
      const named = [...attempt.complaints].map(([site, dealer]) => `${site} against ${dealer}`);
      const reason = `re-sharing generation ${attempt.roster.generation}: complaints (${named.join(', ')})`;
      ctx.log.warn(
        { complaints: Object.fromEntries(attempt.complaints), generation: attempt.roster.generation, out },
        reason,
      );
      return { kind: 'failed', reason, silent: out, mandatory };
    }
    if (done()) return undefined;
    const silent = attempt.roster.sites.map((s) => s.id).filter((id) => !answered(id));
    this.#out.silent(silent, attempt.fromRound);
    const reason = `re-sharing generation ${attempt.roster.generation}: ${silent.join(', ')} sent no ${phase === 'deal' ? 'deal' : 'ready'} in time`;
    ctx.log.warn({ silent, generation: attempt.roster.generation }, reason);
    return { kind: 'failed', reason, silent, mandatory };
  }

  /**
   * One data key for the whole roster: when the readies confirm more than one, the sites outside
   * the largest group sit the next attempts out (as silent sites do) and nothing is logged. Which
   * ready came first decides nothing, so a hostile site cannot leave the honest ones out by racing.
   */
  #splitKeys(host: EpochChangeHost, attempt: Attempt): EpochOutcome | undefined {
    const confirmations = new Map([...attempt.readies].map(([site, r]) => [site, r.keyConfirmation]));
    const out = outvotedConfirmations(confirmations);
    if (out.length === 0) return undefined;
    this.#out.silent(out, attempt.fromRound);
    const reason = `re-sharing generation ${attempt.roster.generation}: the readies confirm more than one data key; ${out.join(', ')} confirmed another than the most`;
    host.ctx.log.warn({ generation: attempt.roster.generation, out }, reason);
    return { kind: 'failed', reason, silent: out, mandatory: attempt.mandatory };
  }

  /**
   * A message on `cohort.F.epoch.<site>`: the site's deal (phase deal) or ready (phase collect) of
   * the attempt in progress, checked (signer, federation, generation, the public share's signature
   * and the recipients; the ready's epoch id) before it is kept. A deal sent again must be the same
   * bytes (else `DUPLICATE`); a ready sent again for the same epoch id is answered, the first kept.
   *
   * @throws CohortError `EPOCH_REFUSED` (no re-sharing in that phase, a site outside the roster);
   *   BlockRejectedError `WRONG_SIGNER`, `WRONG_CONTEXT`, `DUPLICATE`, `MALFORMED` and the control
   *   message's refusals; CryptoError `PUBLIC_SHARE_INVALID`.
   */
  async receive(host: EpochChangeHost, site: string, data: Uint8Array): Promise<void> {
    const attempt = this.#attempt;
    if (attempt === undefined) throw new CohortError('EPOCH_REFUSED', `${site}: no re-sharing in progress`);
    if (!attempt.roster.sites.some((s) => s.id === site)) {
      throw new CohortError(
        'EPOCH_REFUSED',
        `${site} is not in the roster of generation ${attempt.roster.generation}`,
      );
    }
    const { ctx } = host;
    const federation = ctx.config.federation.id;
    if (attempt.phase === 'deal') {
      const earlier = attempt.deals.get(site);
      if (earlier !== undefined) {
        if (bytesEqual(earlier.bytes, data)) return;
        throw new BlockRejectedError(
          'DUPLICATE',
          `${site} already dealt generation ${attempt.roster.generation}`,
        );
      }
      // What every site reading the deal caps it at (one share, a KEM ciphertext and a signature per
      // roster site): a padded deal the sites could not read is refused here, not stored.
      const dealCap = dealMaxBytes(
        (ctx.ckks as ThresholdLaneContext).tc.polyBytes,
        attempt.roster.sites.length,
      );
      if (data.length > dealCap) {
        throw new BlockRejectedError(
          'OVERSIZE',
          `the deal of ${site} is ${data.length} bytes, at most ${dealCap}`,
        );
      }
      const deal = openControl(data, 'epoch-deal', ctx.keys, { signer: site }).body;
      if (
        deal.federation !== federation ||
        deal.generation !== attempt.roster.generation ||
        deal.site !== site
      ) {
        throw new BlockRejectedError('WRONG_CONTEXT', `the deal of ${site} is for another re-sharing`);
      }
      const lanes = ctx.ckks as ThresholdLaneContext;
      const key = ctx.keys(site);
      if (key === undefined) throw new BlockRejectedError('WRONG_SIGNER', `${site} has no signing key`);
      const share = decodePublicShare(lanes.tc, deal.publicShare, attempt.seed, site, [key]);
      if (share.cert.length > PUBLIC_SHARE_CERT_MAX_BYTES) {
        throw new BlockRejectedError(
          'OVERSIZE',
          `the public share certificate of ${site} is ${share.cert.length} bytes, at most ${PUBLIC_SHARE_CERT_MAX_BYTES}`,
        );
      }
      if (share.c0 === undefined) {
        throw new BlockRejectedError('MALFORMED', `the deal of ${site} carries no public share polynomial`);
      }
      if ((share.commitment !== undefined) !== holds(attempt.roster, site)) {
        throw new BlockRejectedError(
          'MALFORMED',
          `the public share of ${site} ${share.commitment === undefined ? 'commits to no' : 'commits to a'} data contribution, as a ${holds(attempt.roster, site) ? '' : 'non-'}holder ${share.commitment === undefined ? 'must' : 'may not'}`,
        );
      }
      const recipients = deal.envelopes.map((e) => e.recipient);
      const expected = dealRecipients(attempt.roster, site);
      if (recipients.length !== expected.length || expected.some((id, k) => recipients[k] !== id)) {
        throw new BlockRejectedError(
          'MALFORMED',
          `the deal of ${site} does not seal one envelope to each of [${expected.join(', ')}], in order`,
        );
      }
      // Each envelope holds at most one packed share, a contribution and a signature.
      const cap = envelopeMaxBytes(lanes.tc.polyBytes);
      if (deal.envelopes.some((e) => e.envelope.length > cap)) {
        throw new BlockRejectedError('MALFORMED', `the deal of ${site} holds an envelope over ${cap} bytes`);
      }
      // Each envelope is the dealer's, for its recipient and this roster, signed: what a
      // recipient then cannot open is the dealer's doing alone, and draws a complaint.
      for (const e of deal.envelopes) {
        try {
          verifySealedEnvelope(
            e.envelope,
            { federation, recipient: e.recipient, purpose: sharePurpose(attempt.roster, site) },
            {
              makers: (maker, keyId) =>
                maker === site && keyId === key.keyId ? key : `not ${site}'s current key`,
            },
          );
        } catch (cause) {
          throw new BlockRejectedError(
            'MALFORMED',
            `the deal of ${site}: its envelope to ${e.recipient}: ${(cause as Error).message}`,
            { cause },
          );
        }
      }
      const store = await host.aggregates();
      // Envelopes and c0 first, the certificate last: a site that finds the certificate finds the rest.
      for (const e of deal.envelopes)
        await store.put(epochShareObjectName(attempt.roster, site, e.recipient), e.envelope);
      await store.put(epochPublicObjectName(attempt.roster, site), share.c0);
      await store.put(epochDealObjectName(attempt.roster, site), share.cert);
      // The attempt may have ended while the deal was stored.
      if (this.#attempt !== attempt || attempt.phase !== 'deal') return;
      attempt.deals.set(site, { bytes: data.slice(), digest: share.digest });
      return;
    }
    if (controlTypeOf(data, 8 * 1024) === 'epoch-complaint') {
      const complaint = openControl(data, 'epoch-complaint', ctx.keys, { signer: site }).body;
      if (
        complaint.federation !== federation ||
        complaint.generation !== attempt.roster.generation ||
        complaint.site !== site ||
        complaint.fromRound !== attempt.fromRound
      ) {
        throw new BlockRejectedError('WRONG_CONTEXT', `the complaint of ${site} is for another re-sharing`);
      }
      const sealed =
        attempt.roster.sites.some((s) => s.id === complaint.dealer) &&
        Object.values(envelopeContents(attempt.roster, complaint.dealer, site)).some(Boolean);
      if (complaint.dealer === site || !sealed) {
        throw new BlockRejectedError(
          'MALFORMED',
          `${site} complains about ${JSON.stringify(complaint.dealer)}, which sealed nothing to it`,
        );
      }
      if (attempt.readies.has(site)) {
        throw new BlockRejectedError(
          'DUPLICATE',
          `${site} already sent its ready for generation ${attempt.roster.generation}`,
        );
      }
      const earlier = attempt.complaints.get(site);
      if (earlier === complaint.dealer) return;
      if (earlier !== undefined) {
        throw new BlockRejectedError('DUPLICATE', `${site} already complained about ${earlier}`);
      }
      attempt.complaints.set(site, complaint.dealer);
      ctx.log.warn(
        { site, dealer: complaint.dealer, reason: complaint.reason.slice(0, 512) },
        'complaint about a dealer',
      );
      return;
    }
    if (attempt.complaints.has(site)) {
      throw new BlockRejectedError(
        'DUPLICATE',
        `${site} complained in generation ${attempt.roster.generation}`,
      );
    }
    const earlier = attempt.readies.get(site);
    if (earlier !== undefined) {
      if (bytesEqual(earlier.bytes, data)) return;
      throw new BlockRejectedError(
        'DUPLICATE',
        `${site} already sent its ready for generation ${attempt.roster.generation}`,
      );
    }
    const ready = openControl(data, 'epoch-ready', ctx.keys, { signer: site }).body;
    if (
      ready.federation !== federation ||
      ready.generation !== attempt.roster.generation ||
      ready.site !== site
    ) {
      throw new BlockRejectedError('WRONG_CONTEXT', `the ready of ${site} is for another re-sharing`);
    }
    if (ready.fromRound !== attempt.fromRound) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `the ready of ${site} is for round ${ready.fromRound}, not ${attempt.fromRound}`,
      );
    }
    if (!bytesEqual(ready.epochId, attempt.epochId!)) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${site} is ready for another epoch id than the stored public shares give`,
      );
    }
    if (!(ready.keyConfirmation instanceof Uint8Array) || ready.keyConfirmation.length !== 32) {
      throw new BlockRejectedError('MALFORMED', `the ready of ${site} confirms no data key`);
    }
    // A site asked again signs its ready again (signatures are randomized): the first is kept.
    if (!attempt.readies.has(site)) {
      attempt.readies.set(site, {
        bytes: data.slice(),
        keyConfirmation: Buffer.from(ready.keyConfirmation).toString('hex'),
      });
    }
  }
}

/** The generation of the last re-sharing logged (0 before any). */
function lastLoggedGeneration(host: EpochChangeHost): number {
  const logged = host.log.history.thresholdEpochs;
  return logged.length === 0 ? 0 : logged[logged.length - 1]!.roster.generation;
}

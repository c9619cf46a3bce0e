import { FRAME_KIND, maxBlockFrameBytes, maxManifestFrameBytes, sealControl } from '../../protocol/index.ts';
import type { InboundMessage } from '../../transport/index.ts';
import { failpoint } from '../failpoint.ts';
import { type AggregatorIntakeHost, roundOfFrame, routeFrame } from './frame-intake.ts';
import { FutureRoundGate } from './future-round-gate.ts';
import type { RoundCollector } from './round-collector.ts';

/** The reply that acknowledges an accepted block or manifest. */
export const AGGREGATOR_ACK: Uint8Array = Uint8Array.of(1);

/** What the site-update intake needs beyond {@link AggregatorIntakeHost}. */
export interface SiteUpdateHost extends AggregatorIntakeHost {
  /** Stores a summed site's contribution for the audit; the round's partial waits for it. */
  store(round: RoundCollector, site: string, contribution: Uint8Array): void;
}

/** Counters of a {@link SiteUpdateIntake} (part of `AggregatorStats`). */
export interface SiteUpdateCounts {
  blocksAccepted: number;
  manifestsAccepted: number;
  /** Site updates added to a round's sum. */
  updatesAdded: number;
}

/**
 * The aggregator's intake of its sites' updates on `update.<me>.<site>` (requests; each message
 * one framed ParameterBlock or UpdateManifest). A message is refused (the handler throws, the
 * sender gets `TRANSPORT_REMOTE`, the reason is counted) unless it is for the current round,
 * signed by `<site>`, `<site>` is assigned here, and it passes the round's `BlockVerifier`. The
 * first three are decided from the frame's header, before its body is decoded or any signature
 * checked (`routeFrame`, `roundOfFrame`, `RoundCollector.precheck`): a site not assigned here, a
 * past round or one more than a round ahead costs a few varints. A frame of the next round waits
 * for its RoundOpen only while no other frame of its site does ({@link FutureRoundGate}).
 * Accepted ones are answered with {@link AGGREGATOR_ACK}, a repeat of an accepted one too. A site
 * whose update is complete is added to the round's sum and its contribution stored; the round
 * closes once every assigned site and child partial is in.
 */
export class SiteUpdateIntake {
  readonly #host: SiteUpdateHost;
  /** `cohort.F.update.<me>.` */
  readonly #prefix: string;
  readonly #counts: SiteUpdateCounts = { blocksAccepted: 0, manifestsAccepted: 0, updatesAdded: 0 };
  readonly #early = new FutureRoundGate();
  readonly #receipts = new Map<string, Uint8Array>();

  constructor(host: SiteUpdateHost) {
    this.#host = host;
    this.#prefix = host.ctx.subjects.updatesFor(host.ctx.member).slice(0, -1);
  }

  /** A copy of the counters. */
  get counts(): SiteUpdateCounts {
    return { ...this.#counts };
  }

  /** The subscription's handler: the ack, or a throw that refuses the message (reported to the host). */
  readonly handle = async (msg: InboundMessage): Promise<Uint8Array> => {
    try {
      return await this.#accept(msg);
    } catch (err) {
      this.#host.refused('update refused', msg.subject, err);
      throw err;
    }
  };

  async #accept(msg: InboundMessage): Promise<Uint8Array> {
    const host = this.#host;
    // Subject, size and header first: nothing is decoded of a message longer than one
    // ciphertext's block can be, nor of one from a site not assigned here this round.
    const frame = routeFrame(host.counters, msg, this.#prefix, {
      block: maxBlockFrameBytes(host.ctx.ckks.maxCiphertextBytes),
      manifest: maxManifestFrameBytes(0),
    });
    const round = await roundOfFrame(host, frame, frame.what, this.#early);
    const site = frame.sender;
    round.precheck(site, frame.signer, frame.what);
    const outcome =
      frame.kind === FRAME_KIND.block
        ? round.acceptBlock(site, msg.data)
        : round.acceptManifest(site, msg.data);
    if (outcome !== 'repeat') {
      if (frame.kind === FRAME_KIND.block) this.#counts.blocksAccepted++;
      else this.#counts.manifestsAccepted++;
    }
    if (outcome === 'added') {
      this.#counts.updatesAdded++;
      // Mid-sum: this update is in the running sum, its ack and the round's partial not yet sent.
      failpoint('aggregator.update-added', round.round);
      const contribution = round.takeContribution(site);
      if (contribution !== undefined) host.store(round, site, contribution);
      host.log.info({ round: round.round, site, contributors: round.contributors }, 'site update added');
      // After the ack is on its way: signing and sending the partial take a while.
      if (round.complete) setImmediate(() => host.finish(round, 'all sites in'));
    }
    // The request that completed the update (or a repeat of one once it is in) is answered with
    // the signed receipt the site can later show should the aggregate leave its update out.
    return round.addedUpdate(site) === undefined ? AGGREGATOR_ACK : this.#receipt(round, site);
  }

  /** `site`'s signed receipt in `round` (made once per round and site). */
  #receipt(round: RoundCollector, site: string): Uint8Array {
    const key = `${round.round}/${site}`;
    const known = this.#receipts.get(key);
    if (known !== undefined) return known;
    const added = round.addedUpdate(site)!;
    const { ctx } = this.#host;
    const receipt = sealControl(
      'receipt',
      {
        federation: ctx.config.federation.id,
        round: round.round,
        attempt: round.open.attempt,
        aggregator: ctx.member,
        site,
        updateDigest: added.digest,
        exampleWeight: added.weight,
      },
      ctx.member,
      ctx.signing,
    );
    // Only the current round's are asked for again: forget older rounds'.
    for (const k of this.#receipts.keys()) if (!k.startsWith(`${round.round}/`)) this.#receipts.delete(k);
    this.#receipts.set(key, receipt);
    return receipt;
  }
}

import { maxBlockFrameBytes, maxManifestFrameBytes } from '../../protocol/index.ts';
import type { InboundMessage } from '../../transport/index.ts';
import { failpoint } from '../failpoint.ts';
import { type AggregatorIntakeHost, roundOfFrame, routeFrame } from './frame-intake.ts';
import { FutureRoundGate } from './future-round-gate.ts';
import { AGGREGATOR_ACK } from './site-update-intake.ts';

/**
 * The intake of a parent aggregator (a round whose tree, RoundOpen's `parents`, gives it
 * children): each child's partial on `subpartial.<me>.<child>` (requests; framed blocks, then the
 * child-signed manifest), checked cheapest first: size (the manifest's cap from
 * `codec.maxContributors`; the round's own caps are its verifier's), frame kind, header read
 * without decoding the body (signer = `<child>`, round = the current one; a frame of the next
 * round waits for its RoundOpen only while no other of that child's does), then
 * `RoundCollector.acceptPartial`: `<child>` is its child this round (still before any decoding),
 * then `PartialIntake` (the child's key only, every listed site at or below the child
 * and backed by its own signed manifest, the signatures), added to the same sum as its own sites.
 * A refusal is counted by reason and fails that child's partial for the round. Accepted messages
 * are answered with {@link AGGREGATOR_ACK}; the round closes once every site and child is in.
 */
export class ChildPartialIntake {
  readonly #host: AggregatorIntakeHost;
  /** `cohort.F.subpartial.<me>.` */
  readonly #prefix: string;
  readonly #early = new FutureRoundGate();
  #received = 0;

  constructor(host: AggregatorIntakeHost) {
    this.#host = host;
    this.#prefix = host.ctx.subjects.subpartialsFor(host.ctx.member).slice(0, -1);
  }

  /** Child aggregators' partials added to a round's sum. */
  get received(): number {
    return this.#received;
  }

  /** The subscription's handler: the ack, or a throw that refuses the message (reported to the host). */
  readonly handle = async (msg: InboundMessage): Promise<Uint8Array> => {
    try {
      return await this.#accept(msg);
    } catch (err) {
      this.#host.refused('child partial refused', msg.subject, err);
      throw err;
    }
  };

  async #accept(msg: InboundMessage): Promise<Uint8Array> {
    const host = this.#host;
    const { ckks, config } = host.ctx;
    const frame = routeFrame(host.counters, msg, this.#prefix, {
      block: maxBlockFrameBytes(ckks.maxCiphertextBytes),
      manifest: maxManifestFrameBytes(config.codec.maxContributors),
    });
    const child = frame.sender;
    const round = await roundOfFrame(host, frame, `${frame.what} of ${JSON.stringify(child)}`, this.#early);
    if (round.acceptPartial(child, msg.data) === 'added') {
      this.#received++;
      // A parent mid-sum: this child's partial is in its running sum, its ack and the round's partial not yet sent.
      failpoint('aggregator.child-partial-added', round.round);
      host.log.info({ round: round.round, child, contributors: round.contributors }, 'child partial added');
      if (round.complete) setImmediate(() => host.finish(round, 'all sites and children in'));
    }
    return AGGREGATOR_ACK;
  }
}

import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { BlockRejectedError, CohortError } from '../../errors/index.ts';
import { type ControlBodies, openControl, signatureTimer } from '../../protocol/index.ts';
import { verifyShareBundle } from '../../round/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { FederationLogError } from '../federation-log/index.ts';
import type { RoundHost } from './round-host.ts';

/** What the message handlers need from the coordinator beyond a round's view of it. */
export interface IntakeHost extends RoundHost {
  /** The round number the coordinator is at (for messages between rounds). */
  roundNumber(): number;
  /** True until the first round of this run opens (a site ahead of the log then means a lost log). */
  starting(): boolean;
  /** Ends the run with `err` at the next wait point. */
  fail(err: Error): void;
  /** Wakes whatever waits for a membership, partial or vote change. */
  wake(): void;
}

/**
 * The coordinator's handlers of members' messages: heartbeats, partial aggregates, votes and
 * `switched`. Each checks the cheap things first (the subject's member has that role, the signer
 * is that member, the federation), then the signature, and throws (a `CohortError` with the
 * reason) to refuse: the caller counts the refusal and answers the sender with it.
 */
export class MemberIntake {
  readonly #host: IntakeHost;
  /** `sentUnixMs` of each member's last accepted heartbeat: an older or equal one is a replay. */
  readonly #lastHeartbeat = new Map<string, number>();

  constructor(host: IntakeHost) {
    this.#host = host;
  }

  heartbeat(id: string, data: Uint8Array): void {
    const host = this.#host;
    const role = host.membership.role(id);
    if (role === undefined) {
      throw new BlockRejectedError('WRONG_SIGNER', `${id} is no site or aggregator of this federation`);
    }
    const hb = this.#opened('heartbeat', id, data);
    if (hb.role !== role) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `heartbeat of ${id} says role ${JSON.stringify(hb.role)}, it is a ${role}`,
      );
    }
    const round = host.ctx.config.round;
    const skew = hb.sentUnixMs - host.now();
    if (!Number.isSafeInteger(hb.sentUnixMs) || Math.abs(skew) > round.clockSkewMs) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `heartbeat of ${id} is stamped ${skew} ms from this clock (at most ±${round.clockSkewMs})`,
      );
    }
    const last = this.#lastHeartbeat.get(id);
    if (last !== undefined && hb.sentUnixMs <= last) {
      throw new BlockRejectedError(
        'DUPLICATE',
        `heartbeat of ${id} stamped ${hb.sentUnixMs}, not after its last one (${last}): a replay`,
      );
    }
    if (!Number.isFinite(hb.examples) || hb.examples < 0 || hb.examples > round.maxSiteExamples) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `heartbeat of ${id} claims ${hb.examples} examples (round.maxSiteExamples ${round.maxSiteExamples})`,
      );
    }
    const head = host.log.history.head.commit;
    if (role === 'site' && hb.height > head.height) {
      const problem = `${id} reports head ${bytesToHex(hb.head).slice(0, 12)} at height ${hb.height}, beyond the log's head at height ${head.height}`;
      if (host.starting()) {
        host.fail(
          new FederationLogError(
            'LOG_BEHIND',
            `${problem}: the log was lost or truncated, or belongs to another federation; refusing to continue from it`,
            { details: { site: id, height: hb.height, logHeight: head.height } },
          ),
        );
      }
      throw new BlockRejectedError('WRONG_CONTEXT', problem);
    }
    this.#lastHeartbeat.set(id, hb.sentUnixMs);
    const { joined } = host.membership.heartbeat(id, role, hb);
    if (joined) host.emit({ type: 'member', member: id, role, joined: true });
    host.wake();
  }

  partial(aggregator: string, data: Uint8Array): void {
    const host = this.#host;
    const state = host.current;
    if (state?.intake === undefined || state.phase !== 'collecting') {
      throw new CohortError(
        'ROUND_CLOSED',
        `no round is collecting partials now (round ${host.roundNumber()})`,
      );
    }
    const done = state.intake.accept(aggregator, data);
    if (done !== undefined) {
      host.emit({ type: 'partial', round: state.round, aggregator, sites: done.sites.map((c) => c.site) });
    }
    host.wake();
  }

  vote(site: string, data: Uint8Array): void {
    const host = this.#host;
    if (host.membership.role(site) !== 'site')
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site`);
    const vote = this.#opened('vote', site, data);
    const state = host.current;
    if (state === undefined || state.round !== vote.round || state.phase !== 'voting') {
      throw new CohortError(
        'VOTE_REFUSED',
        `vote of ${site} for round ${vote.round}: round ${state?.round ?? host.roundNumber()} is not collecting votes`,
      );
    }
    if (!bytesEqual(vote.attempt, state.attempt)) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `vote of ${site} for round ${vote.round} names another attempt of the round (a replay)`,
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
    state.envelopes.set(site, data.slice());
    host.emit({
      type: 'vote',
      round: state.round,
      member: site,
      yes: vote.yes,
      abstain: !vote.yes && vote.abstain === true,
      reason: vote.reason,
    });
    host.wake();
  }

  /**
   * Threshold keys: a decrypting site's share bundle for the round's share request. Refused unless
   * the round is collecting shares and the site is in its decrypting set; the bundle is checked
   * (size, the request's context, the site, its signature: `verifyShareBundle`) but not opened,
   * which only sites can. A repeat of the same bytes is answered again; other bytes are `DUPLICATE`.
   */
  share(site: string, data: Uint8Array): void {
    const host = this.#host;
    if (host.membership.role(site) !== 'site')
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site`);
    const state = host.current;
    const request = state?.shareRequest;
    if (state === undefined || request === undefined || state.phase !== 'sharing') {
      throw new CohortError(
        'SHARES_REFUSED',
        `decryption shares of ${site}: round ${state?.round ?? host.roundNumber()} is not collecting shares`,
      );
    }
    const key = host.ctx.keys(site);
    if (key === undefined) throw new BlockRejectedError('WRONG_SIGNER', `${site} has no signing key`);
    verifyShareBundle(data, {
      lanes: host.ctx.ckks as ThresholdLaneContext,
      context: request.context,
      site,
      key,
    });
    const earlier = state.shares.get(site);
    if (earlier !== undefined) {
      if (bytesEqual(earlier, data)) return;
      throw new BlockRejectedError('DUPLICATE', `${site} already sent its shares for round ${state.round}`);
    }
    state.shares.set(site, data.slice());
    host.wake();
  }

  switched(site: string, data: Uint8Array): void {
    const host = this.#host;
    if (host.membership.role(site) !== 'site')
      throw new BlockRejectedError('WRONG_SIGNER', `${site} is not a site`);
    const sw = this.#opened('switched', site, data);
    const { latencyMs, first, height, accuracy } = host.switches.switched(site, sw);
    host.membership.switched(site, { hash: sw.commitHash, height });
    // The first report measures the latency; a later one carries the accuracy.
    if (first || accuracy !== undefined) {
      host.emit({ type: 'switched', round: sw.round, member: site, latencyMs, testAccuracy: accuracy });
    }
    host.wake();
  }

  #opened<T extends 'heartbeat' | 'vote' | 'switched'>(
    type: T,
    id: string,
    data: Uint8Array,
  ): ControlBodies[T] {
    // The signer must be the subject's member: checked before the signature is.
    const m = openControl(data, type, this.#host.ctx.keys, {
      signer: id,
      // Read per message: the host may build this intake before its options are set.
      onSignatureVerified: signatureTimer(this.#host.options.cryptoTimings, 'control'),
    });
    const body = m.body as ControlBodies[T] & { federation: string; member: string };
    if (body.member !== id) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `${type} on the subject of ${JSON.stringify(id)} is signed by ${JSON.stringify(m.signer)} for ${JSON.stringify(body.member)}`,
      );
    }
    if (body.federation !== this.#host.ctx.config.federation.id) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${type} of ${id} is for federation ${JSON.stringify(body.federation)}`,
      );
    }
    return body;
  }
}

import { BlockRejectedError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import {
  decodeBlockBody,
  decodeManifestBody,
  FRAME_KIND,
  type RejectionCounters,
  unframe,
} from '../../protocol/index.ts';
import type { InboundMessage } from '../../transport/index.ts';
import type { MemberContext } from '../member-context.ts';
import type { RoundCollector } from './round-collector.ts';

/** What the aggregator's intakes (site updates, child partials) need from the running service. */
export interface AggregatorIntakeHost {
  readonly ctx: MemberContext;
  readonly log: Logger;
  /** Refusals by reason (`AggregatorStats.rejections`); every refusal is counted here first. */
  readonly counters: RejectionCounters;
  /** The round being collected (the last one opened), if any. */
  current(): RoundCollector | undefined;
  /** Resolves once a RoundOpen for `round` or later has arrived, or after `openWaitMs`. */
  waitForRound(round: number): Promise<void>;
  /** Closes `round` and sends its partial (called once `round.complete`, after the ack is on its way). */
  finish(round: RoundCollector, why: string): void;
  /** A message its handler refused (`what`: the log line): counted in `rejected` and logged. */
  refused(what: string, subject: string, err: unknown): void;
}

/** One framed block or manifest on an intake subject, routed from its unverified header. */
export interface RoutedFrame {
  /** The subject's last token: the site (or child aggregator) it claims to come from. */
  readonly sender: string;
  readonly kind: typeof FRAME_KIND.block | typeof FRAME_KIND.manifest;
  readonly what: 'block' | 'manifest';
  /** From the header, not yet verified (the round's collector verifies the signature). */
  readonly round: number;
  /** From the header, not yet verified. */
  readonly signer: string;
}

/** Counts `reason` and throws the refusal (the sender gets it as `TRANSPORT_REMOTE`). */
export function refuse(
  counters: RejectionCounters,
  reason: BlockRejectedError['reason'],
  message: string,
): never {
  counters.increment(reason);
  throw new BlockRejectedError(reason, message);
}

/**
 * The checks both intakes run before any signature work, cheapest first: the subject names one
 * sender after `prefix` (`WRONG_CONTEXT`), the frame is a block or a manifest (`MALFORMED`), it is
 * no longer than `caps` allows for its kind, in bytes (`OVERSIZE`), and its header decodes (round
 * and signer, to route it). Every refusal is counted in `counters`.
 */
export function routeFrame(
  counters: RejectionCounters,
  msg: InboundMessage,
  prefix: string,
  caps: { readonly block: number; readonly manifest: number },
): RoutedFrame {
  const sender = msg.subject.startsWith(prefix) ? msg.subject.slice(prefix.length) : '';
  const kind = msg.data[5];
  if (sender === '' || sender.includes('.')) {
    refuse(counters, 'WRONG_CONTEXT', `unexpected subject ${msg.subject}`);
  }
  if (kind !== FRAME_KIND.block && kind !== FRAME_KIND.manifest) {
    refuse(counters, 'MALFORMED', `frame kind ${String(kind)} is neither a block nor a manifest`);
  }
  const what = kind === FRAME_KIND.block ? 'block' : 'manifest';
  const cap = kind === FRAME_KIND.block ? caps.block : caps.manifest;
  if (msg.data.length > cap) {
    refuse(counters, 'OVERSIZE', `${what} of ${msg.data.length} bytes, at most ${cap}`);
  }
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
  return { sender, kind, what, round: header.round, signer: header.signer };
}

/**
 * The round `frame` is for: waits for its RoundOpen when it names a round newer than the current
 * one (senders may be faster than the broadcast), then refuses it (`WRONG_CONTEXT`, `label`
 * naming it in the message) unless that round is the current one.
 */
export async function roundOfFrame(
  host: AggregatorIntakeHost,
  frame: RoutedFrame,
  label: string,
): Promise<RoundCollector> {
  const before = host.current();
  if (!before || frame.round > before.round) await host.waitForRound(frame.round);
  const round = host.current();
  if (!round || round.round !== frame.round) {
    refuse(
      host.counters,
      'WRONG_CONTEXT',
      `${label} is for round ${frame.round}, the current round is ${round ? round.round : 'none'}`,
    );
  }
  return round;
}

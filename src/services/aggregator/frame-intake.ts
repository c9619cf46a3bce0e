import { BlockRejectedError } from '../../errors/index.ts';
import type { Logger } from '../../log/index.ts';
import { FRAME_KIND, type RejectionCounters } from '../../protocol/index.ts';
import type { InboundMessage } from '../../transport/index.ts';
import type { MemberContext } from '../member-context.ts';
import { readFrameHeader } from './frame-header.ts';
import type { FutureRoundGate } from './future-round-gate.ts';
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
  /** From the header, not yet verified (read without decoding the body: `readFrameHeader`). */
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
 * The checks both intakes run before any decoding or signature work, cheapest first: the subject
 * names one sender after `prefix` (`WRONG_CONTEXT`), the frame is a block or a manifest
 * (`MALFORMED`), it is no longer than `caps` allows for its kind, in bytes (`OVERSIZE`), its frame
 * header is sound and its round and signer can be read without decoding the body
 * (`readFrameHeader`: `MALFORMED`, `TRUNCATED`), and the signer is the sender (`WRONG_SIGNER`).
 * Every refusal is counted in `counters`.
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
    header = readFrameHeader(msg.data, kind);
  } catch (err) {
    if (err instanceof BlockRejectedError) counters.increment(err.reason);
    throw err;
  }
  if (header.signer !== sender) {
    refuse(
      counters,
      'WRONG_SIGNER',
      `${what} on the subject of ${JSON.stringify(sender)} is signed by ${JSON.stringify(header.signer)}`,
    );
  }
  return { sender, kind, what, round: header.round, signer: header.signer };
}

/**
 * The round `frame` is for, decided from its header before anything else of it is looked at: a
 * round before the current one is refused, the current one is returned, and a frame that outruns
 * its RoundOpen (its sender may hear the broadcast first) waits for it, bounded: only for the
 * round after the current one (any round before the first RoundOpen), only as many frames as
 * `gate` admits (one per sender by default), and only until `host.waitForRound` gives up. A frame
 * more than one round ahead, or one the gate does not admit, is refused on arrival. Every refusal
 * is `WRONG_CONTEXT`, counted, with `label` naming the frame in the message.
 */
export async function roundOfFrame(
  host: AggregatorIntakeHost,
  frame: RoutedFrame,
  label: string,
  gate: FutureRoundGate,
): Promise<RoundCollector> {
  const before = host.current();
  if (before !== undefined && frame.round <= before.round) {
    if (frame.round === before.round) return before;
    refuse(
      host.counters,
      'WRONG_CONTEXT',
      `${label} is for round ${frame.round}, the current round is ${before.round}`,
    );
  }
  if (before !== undefined && frame.round > before.round + 1) {
    refuse(
      host.counters,
      'WRONG_CONTEXT',
      `${label} is for round ${frame.round}, more than one round ahead of the current round ${before.round}`,
    );
  }
  const refusal = gate.enter(frame.sender);
  if (refusal !== undefined) {
    refuse(
      host.counters,
      'WRONG_CONTEXT',
      refusal === 'SENDER_WAITING'
        ? `${label} is for round ${frame.round}, not open here yet, and a frame of ${JSON.stringify(frame.sender)} already waits for a RoundOpen`
        : `${label} is for round ${frame.round}, not open here yet, and ${gate.waiting} frames already wait for a RoundOpen`,
    );
  }
  try {
    await host.waitForRound(frame.round);
  } finally {
    gate.leave(frame.sender);
  }
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

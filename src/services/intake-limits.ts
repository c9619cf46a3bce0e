import { InvalidArgumentError } from '../errors/index.ts';
import {
  CONTROL_MAX_BYTES,
  type ControlType,
  maxBlockFrameBytes,
  maxManifestFrameBytes,
} from '../protocol/index.ts';
import type { SubscribeOptions, TransportDropReason } from '../transport/index.ts';
import type { MemberContext } from './member-context.ts';

/** What a subscription of a member's intake carries: control messages of one type, or update frames. */
export type IntakeKind = ControlType | 'site-update' | 'partial' | 'snapshot' | 'share' | 'epoch';

/**
 * Chunks per second and burst a sender may push into one subscription. A heartbeat or vote is one
 * chunk a second or less; an update or partial is one chunk per block, once a round (the 2NN's is
 * about 15 blocks, a 10M-parameter model's about 600: within the burst). Junk blocks at the size
 * cap are the costliest refusal (a CRC and a protobuf skip over each; `npm run bench -- hostile`
 * measures it), so a sender may push them at well below what an aggregator can refuse.
 */
const RATES: Readonly<Record<'control' | 'frames', { perSecond: number; burst: number }>> = {
  control: { perSecond: 50, burst: 100 },
  frames: { perSecond: 200, burst: 1000 },
};

/**
 * Transport-level limits of a subscription that takes `kind` from other members (docs/security.md:
 * every byte from the network is capped before it is decoded and counted when refused): the
 * largest message of that kind, a per-sender token bucket, and drops reported to `onDrop` (every
 * reason but `DUPLICATE`, which is a request's own retry, not a refusal).
 *
 * A snapshot's largest size depends on the model, not on the protocol: `snapshotMaxBytes` (the
 * intake's `maxSnapshotBytes` of the model's parameter count, for `'share'` the largest share
 * bundle of the model, for `'epoch'` the largest deal of a roster of the configured sites) is
 * required for `'snapshot'`, `'share'` and `'epoch'` and refused for any other kind, so no snapshot subscription falls back to the transport's 64 MiB
 * frame cap and reassembles and hashes an offer before refusing it.
 *
 * @throws InvalidArgumentError for `'snapshot'` without a positive safe integer `snapshotMaxBytes`,
 *   or with it for another kind.
 */
export function intakeLimits(
  ctx: MemberContext,
  kind: IntakeKind,
  onDrop: (reason: TransportDropReason, subject: string) => void,
  snapshotMaxBytes?: number,
): Pick<SubscribeOptions, 'maxMessageBytes' | 'rateLimit' | 'onDrop'> {
  const sized = kind === 'snapshot' || kind === 'share' || kind === 'epoch';
  if (sized) {
    if (
      typeof snapshotMaxBytes !== 'number' ||
      !Number.isSafeInteger(snapshotMaxBytes) ||
      snapshotMaxBytes < 1
    ) {
      throw new InvalidArgumentError(
        `snapshotMaxBytes must be a positive safe integer for a ${kind} subscription, got ${String(snapshotMaxBytes)}`,
        { details: { name: 'snapshotMaxBytes' } },
      );
    }
  } else if (snapshotMaxBytes !== undefined) {
    throw new InvalidArgumentError(`snapshotMaxBytes applies to a snapshot subscription, not ${kind}`, {
      details: { name: 'snapshotMaxBytes' },
    });
  }
  const block = maxBlockFrameBytes(ctx.ckks.maxCiphertextBytes);
  const maxMessageBytes =
    kind === 'site-update'
      ? Math.max(block, maxManifestFrameBytes(0))
      : kind === 'partial'
        ? Math.max(block, maxManifestFrameBytes(ctx.config.codec.maxContributors))
        : sized
          ? snapshotMaxBytes!
          : CONTROL_MAX_BYTES[kind];
  const frames = kind === 'site-update' || kind === 'partial' || sized;
  return {
    maxMessageBytes,
    rateLimit: frames ? RATES.frames : RATES.control,
    onDrop: (reason, subject) => {
      if (reason !== 'DUPLICATE') onDrop(reason, subject);
    },
  };
}

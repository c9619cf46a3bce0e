import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { StoredContribution } from '../../round/index.ts';
import { ContributionError } from '../../round/index.ts';
import { assertSubjectToken, federationSubjects } from '../../transport/index.ts';
import { type ContributionKey, contributionFrameSubject } from '../store/index.ts';

/** Frames of one contribution published at once. */
const PARALLEL_FRAMES = 16;

/** Stores one contribution: see {@link contributionWriter}. */
export type ContributionWriter = (
  key: Omit<ContributionKey, 'aggregator'>,
  contribution: StoredContribution,
) => Promise<void>;

/**
 * An aggregator's writer of the contributions it sums (docs/log-format.md, "Contributions"):
 * each frame (0 the site's manifest, then its blocks in block-index order) is one JetStream publish
 * on `cohort.F.contribution.<aggregator>.<round>.<attempt>.<site>.<frame>`, the only subjects its
 * NATS user may publish there (it needs no JetStream API right, and has no read right on the
 * stream). Every publish carries `Nats-Expected-Last-Subject-Sequence: 0`, so a frame is written
 * once even on a stream weaker than write-once, and no message id (no deduplication applies).
 * Resolves once the stream acknowledged every frame.
 *
 * @throws ContributionError `CONTRIBUTION_NOT_STORED` naming the frame when the stream refuses one
 *   (written before, too large, no stream, no permission, timeout).
 */
export function contributionWriter(
  nc: NatsConnection,
  federation: string,
  aggregator: string,
  options: { readonly timeoutMs?: number } = {},
): ContributionWriter {
  assertSubjectToken('aggregator', aggregator);
  const stream = federationSubjects(federation).contributionsStream;
  // No account check ($JS.API.INFO): the aggregator's user may not send it.
  const js = jetstream(nc, {
    checkAPI: false,
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
  });
  return async (key, contribution) => {
    if (
      typeof contribution !== 'object' ||
      contribution === null ||
      !(contribution.manifest instanceof Uint8Array)
    ) {
      throw new InvalidArgumentError('contribution must hold a manifest frame', {
        details: { name: 'contribution' },
      });
    }
    const full: ContributionKey = { ...key, aggregator };
    const frames = [contribution.manifest, ...contribution.blocks];
    const publish = async (i: number): Promise<void> => {
      const subject = contributionFrameSubject(federation, full, i);
      try {
        const ack = await js.publish(subject, frames[i]!, { expect: { lastSubjectSequence: 0 } });
        if (ack.stream !== stream || ack.duplicate) {
          throw new Error(`acknowledged by ${ack.stream}${ack.duplicate ? ' as a duplicate' : ''}`);
        }
      } catch (err) {
        throw new ContributionError(
          'CONTRIBUTION_NOT_STORED',
          `frame ${i} of the contribution of ${key.site} (round ${key.round}) was not stored: ${(err as Error).message}`,
          { cause: err, details: { subject } },
        );
      }
    };
    for (let from = 0; from < frames.length; from += PARALLEL_FRAMES) {
      const batch: Promise<void>[] = [];
      for (let i = from; i < Math.min(frames.length, from + PARALLEL_FRAMES); i++) batch.push(publish(i));
      await Promise.all(batch);
    }
  };
}

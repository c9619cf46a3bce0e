import type { LaneContext } from '../../crypto/lanes/index.ts';
import { maxContributionFrameBytes } from '../round/index.ts';
import { federationServerLimits, type NatsServerLimits } from '../transport/index.ts';
import { CONTRIBUTION_HEADER_BYTES } from './store/index.ts';

/**
 * The server-wide limits of a federation's nats-server (`federationServerLimits`), sized from its
 * `users` and the largest message it sends unchunked: a contribution frame (one block) and its
 * JetStream headers, at the federation's CKKS (or `plain`) parameters. What `cohort nats config`
 * writes and the local deployment runs with.
 */
export function federationLimitsFor(
  users: number,
  lanes: Pick<LaneContext, 'maxCiphertextBytes'>,
): NatsServerLimits {
  return federationServerLimits({
    users,
    largestMessageBytes: maxContributionFrameBytes(lanes.maxCiphertextBytes) + CONTRIBUTION_HEADER_BYTES,
  });
}

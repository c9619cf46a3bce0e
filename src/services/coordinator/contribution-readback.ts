import type { LaneContext } from '../../../crypto/lanes/index.ts';
import {
  type ControlBodies,
  type Encoding,
  updateLayout,
  type VerifiedUpdate,
} from '../../protocol/index.ts';
import type { AcceptedPartial } from '../../round/index.ts';
import { contributionReader, encodeContribution, openContribution } from '../../round/index.ts';
import { readStoredContribution } from '../store/index.ts';
import type { RoundHost } from './round-host.ts';

/** Why a listed contribution could not be taken back from the contributions stream. */
export type ReadbackFault =
  /** Not in the stream (never stored, or expired), or the stream could not answer. */
  | 'CONTRIBUTION_UNAVAILABLE'
  /** What is stored is not the update the partial listed and the site signed. */
  | 'CONTRIBUTION_MISMATCH'
  /** A frame was written more than once (a stream weaker than write-once). */
  | 'CONTRIBUTION_OVERWRITTEN';

/** One listed contribution read back: the verified update, or what is wrong and who stored it. */
export type Readback =
  | { readonly site: string; readonly update: VerifiedUpdate }
  | {
      readonly site: string;
      readonly fault: ReadbackFault;
      /** The aggregator the RoundOpen assigned the site to: it stores the update it sums. */
      readonly storedBy: string;
      /** False when the stream itself could not answer (nobody is at fault for that). */
      readonly attributable: boolean;
      readonly reason: string;
    };

/**
 * Reads back, from the contributions stream, every contribution `partial` lists, each under the
 * aggregator the RoundOpen assigned its site to (each aggregator stores what it sums, write-once,
 * before it sends its partial), and checks each is the update the partial listed and its site
 * signed. Shared by the robust step (`plain` mode) and the fault finder (an aggregate whose MAC
 * failed). Reads one at a time: at most one update of memory beyond what is kept.
 */
export async function* readListedContributions(
  host: RoundHost,
  open: ControlBodies['round-open'],
  encoding: Encoding,
  partial: AcceptedPartial,
): AsyncGenerator<Readback> {
  const { ctx } = host;
  const { verifier, maxBytes, maxFrames } = contributionReader({
    open,
    blocks: updateLayout(open.totalParams, encoding).blocks,
    encoding,
    lanes: ctx.ckks as LaneContext,
    keys: ctx.keys,
    allowedAlgorithms: ctx.config.crypto.signature.allowed,
  });
  const assigned = new Map(open.assignments.map((a) => [a.site, a.aggregator]));
  for (const [i, listed] of partial.sites.entries()) {
    const storedBy = assigned.get(listed.site) ?? partial.aggregator;
    const fault = (f: ReadbackFault, reason: string, attributable = true): Readback => ({
      site: listed.site,
      fault: f,
      storedBy,
      attributable,
      reason: `the update of ${listed.site} (stored by ${storedBy}, listed by ${partial.aggregator}) ${reason}`,
    });
    let read: Awaited<ReturnType<typeof readStoredContribution>>;
    try {
      read = await readStoredContribution(
        ctx.transport.connection,
        ctx.config.federation.id,
        { aggregator: storedBy, round: open.round, attempt: open.attempt, site: listed.site },
        { maxFrames, maxBytes, timeoutMs: ctx.config.nats.timeoutMs },
      );
    } catch (err) {
      yield fault('CONTRIBUTION_UNAVAILABLE', `cannot be read: ${(err as Error).message}`, false);
      continue;
    }
    if (read.status === 'absent') {
      yield fault('CONTRIBUTION_UNAVAILABLE', 'is not in the contributions stream');
      continue;
    }
    if (read.status === 'overwritten') {
      yield fault('CONTRIBUTION_OVERWRITTEN', read.reason);
      continue;
    }
    if (read.status !== 'found') {
      yield fault('CONTRIBUTION_MISMATCH', read.reason);
      continue;
    }
    const [manifest, ...blocks] = read.frames;
    const opened = openContribution(
      encodeContribution({ manifest: manifest!, blocks }),
      partial.siteManifests[i] ?? new Uint8Array(0),
      listed,
      verifier,
    );
    if (typeof opened === 'string') {
      yield fault('CONTRIBUTION_MISMATCH', `is not the listed one: ${opened}`);
      continue;
    }
    yield { site: listed.site, update: opened };
  }
}

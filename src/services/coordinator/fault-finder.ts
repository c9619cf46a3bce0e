import { bytesEqual } from '../../../crypto/digest/index.ts';
import {
  AggregateBuilder,
  type ControlBodies,
  type CulpritRecord,
  type Encoding,
} from '../../protocol/index.ts';
import type { AcceptedPartial } from '../../round/index.ts';
import { encodeContribution } from '../../round/index.ts';
import { readListedContributions } from './contribution-readback.ts';
import type { RoundHost } from './round-host.ts';

/** What {@link findCulprits} found about a round whose aggregate every voter found wrong. */
export interface Findings {
  /** Aggregators whose partial is not the exact sum of what they list, or who did not keep it. */
  readonly culprits: readonly CulpritRecord[];
  /**
   * Every partial was read back and is the exact sum of its listed contributions: the aggregate
   * is what the contributions make, so one of them spoiled it (a site's wrong tag).
   */
  readonly exact: boolean;
}

/** Object of the aggregates stream that keeps the frames of `aggregator`'s partial of `round`. */
export function partialEvidenceName(round: number, aggregator: string): string {
  return `round-${round}-partial-${aggregator}`;
}

/**
 * Finds who made a round's aggregate wrong (docs/security.md, "Blame"): for each partial the
 * coordinator took in, reads back every contribution it lists from the contributions stream and
 * re-adds them (ciphertext addition is deterministic, so an honest partial is the same bytes). A
 * partial that is not that sum names its aggregator (`PARTIAL_NOT_SUM`), and its frames as
 * received (the aggregator-signed manifest and blocks, `encodeContribution`) are stored as
 * evidence: an auditor verifies them under the aggregator's key and re-adds the contributions; a listed contribution the assigned aggregator did not keep, or kept
 * otherwise, names that aggregator (`CONTRIBUTION_NOT_STORED`). Run only when every voter found
 * the aggregate wrong, so the cost of re-adding falls on a round that failed anyway.
 */
export async function findCulprits(
  host: RoundHost,
  input: {
    readonly open: ControlBodies['round-open'];
    readonly encoding: Encoding;
    readonly partials: readonly AcceptedPartial[];
    /** The contributions stream was there when the round opened (else a missing one is no one's fault). */
    readonly evidenceKept: boolean;
  },
): Promise<Findings> {
  const { ctx } = host;
  const { open, encoding } = input;
  const culprits: CulpritRecord[] = [];
  let exact = true;
  for (const partial of input.partials) {
    const builder = new AggregateBuilder(ctx.ckks, { encoding, totalParams: open.totalParams });
    let complete = true;
    try {
      for await (const read of readListedContributions(host, open, encoding, partial)) {
        if ('update' in read) {
          builder.add(read.update);
          continue;
        }
        complete = false;
        exact = false;
        if (read.attributable && input.evidenceKept && !culprits.some((c) => c.member === read.storedBy)) {
          culprits.push({
            member: read.storedBy,
            role: 'aggregator',
            fault: 'CONTRIBUTION_NOT_STORED',
            detail: `${read.fault}: ${read.reason}`,
            evidence: '',
          });
        }
        break;
      }
      if (!complete) continue;
      const sum = builder.finish();
      if (
        sum.ciphertexts.length === partial.ciphertexts.length &&
        sum.ciphertexts.every((c, b) => bytesEqual(c, partial.ciphertexts[b]!))
      ) {
        continue;
      }
      exact = false;
      const evidence = partialEvidenceName(open.round, partial.aggregator);
      let stored = evidence;
      try {
        await (await host.aggregates()).put(
          evidence,
          encodeContribution({ manifest: partial.manifest, blocks: partial.blocks }),
        );
      } catch (err) {
        stored = '';
        ctx.log.error(
          { round: open.round, aggregator: partial.aggregator, err },
          'cannot store the evidence of a partial',
        );
      }
      if (!culprits.some((c) => c.member === partial.aggregator)) {
        culprits.push({
          member: partial.aggregator,
          role: 'aggregator',
          fault: 'PARTIAL_NOT_SUM',
          detail: `its signed partial of round ${open.round} is not the sum of the ${partial.sites.length} contribution(s) it lists`,
          evidence: stored,
        });
      }
    } finally {
      builder.dispose();
    }
  }
  return { culprits: culprits.sort((a, b) => (a.member < b.member ? -1 : 1)), exact };
}

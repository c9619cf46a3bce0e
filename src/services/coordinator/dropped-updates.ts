import { bytesEqual } from '../../../crypto/digest/index.ts';
import { type ControlBodies, type CulpritRecord, type KeyLookup, openControl } from '../../protocol/index.ts';
import type { AcceptedPartial } from '../../round/index.ts';

/** The code a NO vote's reason starts with when the voter's received update was left out. */
const UPDATE_DROPPED = 'UPDATE_DROPPED:';

/** What {@link droppedUpdates} found in a round's NO votes. */
export interface DroppedUpdates {
  /** Aggregators that signed a receipt of an update and then a partial without it. */
  readonly culprits: readonly CulpritRecord[];
  /** Voters whose NO that proves: they are not at fault for it. */
  readonly excused: readonly string[];
}

/**
 * The NO votes of a round that prove an aggregator dropped the voter's update (docs/security.md,
 * "Blame"): the vote carries the receipt its aggregator signed when the update was whole (this
 * round, this attempt, this site, the update's digest), and the partial that aggregator signed and
 * sent the coordinator does not list the site. The aggregator signed both, so it is the culprit
 * (`UPDATE_DROPPED`) and the voter is excused. A receipt that does not check, or an aggregator
 * whose partial did not reach the coordinator (it was late, refused, or went to a parent in a
 * deeper tree, where either may have dropped it), proves nothing: the voter answers for its NO.
 */
export function droppedUpdates(input: {
  readonly open: ControlBodies['round-open'];
  readonly votes: ReadonlyMap<string, ControlBodies['vote']>;
  readonly no: readonly string[];
  readonly partials: readonly AcceptedPartial[];
  readonly keys: KeyLookup;
}): DroppedUpdates {
  const { open } = input;
  const culprits: CulpritRecord[] = [];
  const excused: string[] = [];
  const partialOf = new Map(input.partials.map((p) => [p.aggregator, p]));
  for (const voter of input.no) {
    const vote = input.votes.get(voter);
    if (vote === undefined || !vote.reason.startsWith(UPDATE_DROPPED) || (vote.receipt?.length ?? 0) === 0)
      continue;
    const aggregator = open.assignments.find((a) => a.site === voter)?.aggregator;
    const partial = aggregator === undefined ? undefined : partialOf.get(aggregator);
    if (aggregator === undefined || partial === undefined) continue;
    let receipt: ControlBodies['receipt'];
    try {
      receipt = openControl(vote.receipt!, 'receipt', input.keys, { signer: aggregator }).body;
    } catch {
      continue;
    }
    if (
      receipt.federation !== open.federation ||
      receipt.round !== open.round ||
      !bytesEqual(receipt.attempt, open.attempt) ||
      receipt.aggregator !== aggregator ||
      receipt.site !== voter ||
      partial.sites.some((c) => c.site === voter)
    ) {
      continue;
    }
    excused.push(voter);
    if (!culprits.some((c) => c.member === aggregator)) {
      culprits.push({
        member: aggregator,
        role: 'aggregator',
        fault: 'UPDATE_DROPPED',
        detail: `it signed a receipt of the update of ${voter} in round ${open.round} and a partial without it`,
        evidence: '',
      });
    }
  }
  return { culprits, excused };
}

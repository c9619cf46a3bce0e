import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { AggregateInfo, ControlBodies } from '../../protocol/index.ts';
import { aggregateDigest } from '../../round/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import type { AgentCore } from './agent-core.ts';
import { fetchAggregate } from './aggregate-fetch.ts';
import { decryptProblem } from './aggregate-shares.ts';
import { UPDATE_DROPPED, VoteNo } from './voter-error.ts';

/** The aggregate a PREPARE proposes, as received and checked, ready to decrypt. */
export interface PreparedAggregate {
  readonly info: AggregateInfo;
  readonly ciphertexts: readonly Uint8Array[];
}

/**
 * What every round that sums updates checks of its PREPARE before decrypting (round step 7,
 * docs/round-protocol.md): this site holds the CKKS key, the contributor list has its own update
 * as it signed it ({@link checkContributors}), the ciphertexts (inline, or read from the
 * aggregates store) hash to the digest PREPARE names, and the log has the round open, of the kind
 * PREPARE says. Throws {@link VoteNo} with the reason.
 */
export async function preparedAggregate(
  core: AgentCore,
  p: ControlBodies['prepare'],
): Promise<PreparedAggregate> {
  const problem = decryptProblem(core, p.round);
  if (problem !== undefined) throw new VoteNo(`cannot decrypt: ${problem}`);
  checkContributors(core, p);
  let ciphertexts = p.ciphertexts;
  if (ciphertexts.length === 0 && p.aggregateObject !== '') {
    ciphertexts = await fetchAggregate(core, p.aggregateObject, p.totalParams, p.aggregateDigest, 'vote-no');
  } else if (!bytesEqual(aggregateDigest(ciphertexts), p.aggregateDigest)) {
    throw new VoteNo('the ciphertexts do not hash to the aggregate digest PREPARE names');
  }
  const open = core.follower.history.openRound?.roundOpen;
  if (open === undefined || open.round !== p.round)
    throw new VoteNo(`the log does not show round ${p.round} open`);
  if ((open.kind ?? '') !== (p.kind === 'statistics' ? 'statistics' : '')) {
    throw new VoteNo(`PREPARE of kind ${p.kind} for round ${p.round}, opened as ${open.kind || 'round'}`);
  }
  const info: AggregateInfo = {
    encoding: p.encoding,
    totalParams: p.totalParams,
    contributors: p.contributors,
    totalWeight: p.totalWeight,
    participants: p.participants,
    totalExamples: p.totalExamples,
    object: '',
    objectBytes: 0,
  };
  return { info, ciphertexts };
}

/**
 * What a site checks of an aggregate's contributor list before decrypting it (`applyAggregate`
 * then refuses fewer than `round.minContributors` sites): its own update, when it delivered one
 * this round, listed with the digest and weight it signed. An aggregator that dropped it, or
 * listed another update under its name, is caught here.
 */
function checkContributors(core: AgentCore, p: ControlBodies['prepare']): void {
  const sent = core.lastUpdate?.round === p.round ? core.lastUpdate : null;
  const listed = p.contributors.find((c) => c.site === core.member);
  // My aggregator's partial is in (another of its sites is listed) but my acknowledged update is
  // not: it was dropped. A partial cut whole (late, refused) lists none of its sites: no offence.
  if (sent !== null && listed === undefined && p.contributors.some((c) => sent.peers.includes(c.site))) {
    throw new VoteNo(
      `${UPDATE_DROPPED}: my update of round ${p.round} was received by ${sent.aggregator}, whose partial is in the aggregate without it`,
      sent.receipt ?? undefined,
    );
  }
  if (listed !== undefined && sent !== null && !bytesEqual(listed.digest, sent.digest)) {
    throw new VoteNo(
      `the aggregate lists another update under my name (digest ${bytesToHex(listed.digest).slice(0, 12)})`,
    );
  }
  if (listed !== undefined && listed.weight !== core.examples) {
    throw new VoteNo(`the aggregate lists my weight as ${listed.weight}, I have ${core.examples} examples`);
  }
}

import type { CkksParams } from '../../crypto/ckks/index.ts';
import { bytesEqual } from '../../crypto/digest/index.ts';
import {
  type AggregateInfo,
  BlockVerifier,
  type ControlBodies,
  type CulpritRecord,
  type DecisionBody,
  decodeManifestBody,
  FRAME_KIND,
  type KeyLookup,
  openControl,
  unframe,
  updateLayout,
} from '../protocol/index.ts';
import {
  blamedDecrypter,
  decodeContribution,
  encodeAggregateObject,
  maxContributionFrameBytes,
} from '../round/index.ts';
import { auditLanes } from './audit-lanes.ts';
import type { AuditProblem, AuditUnchecked } from './audit-report.ts';
import type { AuditSource } from './audit-source.ts';
import { type LoggedPartialRecord, recomputeAggregate } from './recompute-check.ts';

/** The problems that prove a partial is not the sum of what it lists, once re-added. */
const NOT_SUM = new Set(['AGGREGATE_RECOMPUTE_MISMATCH', 'CONTRIBUTION_MISSING', 'CONTRIBUTION_DUPLICATE']);

/** What checking an ABORT's culprits concluded. */
export interface CulpritCheck {
  /** Culprits whose fault the evidence proves. */
  readonly proven: number;
  readonly problems: readonly AuditProblem[];
  readonly unchecked: readonly AuditUnchecked[];
}

/** What {@link checkCulprits} needs about the round. */
export interface CulpritCheckInput {
  readonly source: AuditSource;
  /** Log sequence of the decision. */
  readonly sequence: number;
  readonly decision: DecisionBody;
  readonly open: ControlBodies['round-open'];
  readonly partials: readonly LoggedPartialRecord[];
  /** The round's logged votes, by voter. */
  readonly votes: ReadonlyMap<string, ControlBodies['vote']>;
  /** A member's signing key in force. */
  readonly keys: KeyLookup;
  readonly siteKey: (site: string) => ReturnType<KeyLookup>;
  readonly ckksParams: readonly CkksParams[];
  readonly retentionMs?: number;
  readonly now?: () => number;
}

/**
 * Checks from the evidence alone every culprit an ABORT names (docs/security.md, "Blame"), so a
 * coordinator cannot strike an honest member unnoticed:
 * - `PARTIAL_NOT_SUM`: the evidence object holds the aggregator's partial as received (its manifest
 *   is the logged partial record's, its blocks verify under the aggregator's key), and re-adding
 *   the contributions it lists does not give its ciphertexts;
 * - `UPDATE_DROPPED`: a logged NO vote of a site carries a receipt the aggregator signed of its
 *   update in this round and attempt, and the aggregator's logged partial does not list the site;
 * - `CONTRIBUTION_NOT_STORED`: a listed contribution stored by the aggregator is not in the store,
 *   or not the listed one;
 * - `SHARES_INVALID` (threshold keys): more than half of the round's logged voters voted NO because
 *   that decrypting site's share bundle did not open (`blamedDecrypter`).
 * A culprit the evidence does not bear out is `CULPRIT_UNPROVEN`. An `ISOLATED` site (named by
 * elimination over rounds) cannot be proven from one round's evidence: listed
 * `CULPRIT_BY_ELIMINATION`.
 */
export async function checkCulprits(input: CulpritCheckInput): Promise<CulpritCheck> {
  const problems: AuditProblem[] = [];
  const unchecked: AuditUnchecked[] = [];
  let proven = 0;
  const { sequence, decision, open } = input;
  const unproven = (c: CulpritRecord, why: string) =>
    problems.push({
      sequence,
      code: 'CULPRIT_UNPROVEN',
      message: `round ${decision.round} names ${c.member} (${c.fault}) but ${why}`,
    });
  for (const c of decision.culprits) {
    const partial = input.partials.find((p) => p.record.aggregator === c.member);
    if (c.fault === 'ISOLATED') {
      unchecked.push({
        sequence,
        code: 'CULPRIT_BY_ELIMINATION',
        message: `round ${decision.round} names ${c.member} by elimination over rounds, which one round's evidence cannot prove`,
      });
      continue;
    }
    if (c.fault === 'UPDATE_DROPPED') {
      const dropped = droppedBy(input, c.member, partial);
      if (dropped === null) proven++;
      else unproven(c, dropped);
      continue;
    }
    if (c.fault === 'SHARES_INVALID') {
      // Threshold keys: more than half the round's logged voters blame its share bundle.
      if (blamedDecrypter(decision.voters, input.votes)?.site === c.member) proven++;
      else unproven(c, 'no more than half of the logged votes blame its decryption shares');
      continue;
    }
    if (partial === undefined) {
      unproven(c, 'the log holds no partial of it for the round');
      continue;
    }
    if (c.fault === 'PARTIAL_NOT_SUM') {
      const result = await notSum(input, c, partial);
      if (result === 'proven') proven++;
      else if (result.unchecked)
        unchecked.push({ sequence, code: 'CONTRIBUTIONS_UNAVAILABLE', message: result.why });
      else unproven(c, result.why);
      continue;
    }
    if (c.fault === 'CONTRIBUTION_NOT_STORED') {
      // Re-adding the partial's contributions against nothing: the missing one is reported.
      const result = await recomputeAggregate({
        source: input.source,
        sequence,
        open,
        info: infoOf(partial),
        aggregate: new Uint8Array(0),
        partials: [partial],
        siteKey: input.siteKey,
        ckksParams: input.ckksParams,
        ...(input.retentionMs === undefined ? {} : { retentionMs: input.retentionMs }),
        ...(input.now === undefined ? {} : { now: input.now }),
      });
      if (result.problems.some((p) => !NOT_SUM.has(p.code))) proven++;
      else if (result.unchecked.length > 0) unchecked.push(...result.unchecked);
      else unproven(c, 'every contribution its partial lists is stored as listed');
      continue;
    }
    unproven(c, `the fault ${JSON.stringify(c.fault)} is not one the audit knows`);
  }
  return { proven, problems, unchecked };
}

/** Why a logged NO vote does not prove `aggregator` dropped its voter's update, or null when it does. */
function droppedBy(
  input: CulpritCheckInput,
  aggregator: string,
  partial: LoggedPartialRecord | undefined,
): string | null {
  if (partial === undefined) return 'the log holds no partial of it for the round';
  const listed = new Set(
    decodeManifestBody(unframe(partial.record.manifest, FRAME_KIND.manifest)).contributorList.map(
      (c) => c.site,
    ),
  );
  for (const [voter, vote] of input.votes) {
    // An abstention proves nothing (it objects to nothing), whatever it carries.
    if (vote.yes || vote.abstain === true || (vote.receipt?.length ?? 0) === 0 || listed.has(voter)) continue;
    try {
      const r = openControl(vote.receipt!, 'receipt', input.keys, { signer: aggregator }).body;
      if (
        r.federation === input.open.federation &&
        r.round === input.open.round &&
        bytesEqual(r.attempt, input.open.attempt) &&
        r.aggregator === aggregator &&
        r.site === voter
      ) {
        return null;
      }
    } catch {
      // not a receipt of this aggregator: look at the next vote
    }
  }
  return 'no logged NO vote carries its receipt of an update its partial leaves out';
}

/** The AggregateInfo a partial's re-addition needs (its encoding and size, from its manifest). */
function infoOf(partial: LoggedPartialRecord): AggregateInfo {
  const m = decodeManifestBody(unframe(partial.record.manifest, FRAME_KIND.manifest));
  return {
    encoding: m.encoding,
    totalParams: m.totalParams,
    contributors: m.contributorList,
    totalWeight: m.exampleWeight,
    participants: 0,
    totalExamples: 0,
    object: `partial of ${partial.record.aggregator}`,
    objectBytes: 0,
  };
}

/** Whether the evidence of `c` proves its partial is not the sum of what it lists. */
async function notSum(
  input: CulpritCheckInput,
  c: CulpritRecord,
  partial: LoggedPartialRecord,
): Promise<'proven' | { why: string; unchecked?: boolean }> {
  if (c.evidence === '') return { why: 'no evidence of its partial was kept' };
  const info = infoOf(partial);
  const lanes = await auditLanes(input.ckksParams, info.encoding.ckksParamsId);
  if (lanes === undefined) {
    return { why: 'its CKKS parameters are not known to the auditor', unchecked: true };
  }
  const maxCiphertextBytes = lanes.maxCiphertextBytes;
  const blocks = updateLayout(info.totalParams, info.encoding).blocks;
  const maxBytes =
    4 + (blocks + 1) * (4 + maxContributionFrameBytes(maxCiphertextBytes)) + partial.record.manifest.length;
  const read = await input.source.aggregate(c.evidence, maxBytes);
  if (read.status === 'unavailable') {
    return {
      why: `evidence ${JSON.stringify(c.evidence)} could not be read: ${read.reason}`,
      unchecked: true,
    };
  }
  if (read.status !== 'found') return { why: `evidence ${JSON.stringify(c.evidence)} is ${read.status}` };
  let ciphertexts: Uint8Array[];
  try {
    const stored = decodeContribution(read.bytes);
    if (!bytesEqual(stored.manifest, partial.record.manifest)) {
      return { why: 'the evidence holds another manifest than its logged partial' };
    }
    const key = input.keys(c.member);
    const verifier = new BlockVerifier({
      context: {
        federation: input.open.federation,
        round: input.open.round,
        baseCommit: input.open.baseCommit,
        version: input.open.version,
      },
      ckksParamsId: info.encoding.ckksParamsId,
      keys: (id) => (id === c.member ? key : undefined),
      allowedAlgorithms: ['falcon-512', 'ml-dsa-65'],
      kind: 'partial',
      maxCiphertextBytes,
    });
    ciphertexts = [
      ...verifier.verifyUpdate({ blocks: stored.blocks, manifest: stored.manifest }).ciphertexts,
    ];
  } catch (err) {
    return { why: `the evidence is not its signed partial: ${(err as Error).message}` };
  }
  const result = await recomputeAggregate({
    source: input.source,
    sequence: input.sequence,
    open: input.open,
    info,
    aggregate: encodeAggregateObject(ciphertexts),
    partials: [partial],
    siteKey: input.siteKey,
    ckksParams: input.ckksParams,
    ...(input.retentionMs === undefined ? {} : { retentionMs: input.retentionMs }),
    ...(input.now === undefined ? {} : { now: input.now }),
  });
  if (result.problems.some((p) => NOT_SUM.has(p.code))) return 'proven';
  if (result.unchecked.length > 0) return { why: result.unchecked[0]!.message, unchecked: true };
  if (result.problems.length > 0) return { why: result.problems[0]!.message };
  return { why: 'its partial is the exact sum of the contributions it lists' };
}

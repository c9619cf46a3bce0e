import { type CkksParams, PlainLaneContext, PlainLaneKeyset } from '../../crypto/ckks/index.ts';
import { bytesEqual } from '../../crypto/digest/index.ts';
import type { LaneContext } from '../../crypto/lanes/index.ts';
import {
  AggregateBuilder,
  type AggregateInfo,
  type BlockVerifier,
  type ControlBodies,
  decodeManifestBody,
  FRAME_KIND,
  type PartialRecordBody,
  unframe,
  type VerifiedUpdate,
} from '../protocol/index.ts';
import {
  contributionReader,
  encodeAggregateObject,
  openContribution,
  type RoundRobust,
} from '../round/index.ts';
import { applyRobustRule, plainUpdateDelta } from '../services/robust-plan.ts';
import { type ContributionKey, contributionName } from '../services/store/index.ts';
import { bytesToHex } from '../versions/index.ts';
import { expectedAggregateBlocks } from './aggregate-check.ts';
import { auditLanes } from './audit-lanes.ts';
import type { AuditProblem, AuditUnchecked } from './audit-report.ts';
import type { AuditSource, ContributionRead } from './audit-source.ts';

/** A partial record of the round, as logged (its content checked by the history rules). */
export interface LoggedPartialRecord {
  readonly sequence: number;
  readonly record: PartialRecordBody;
}

/** What re-adding one COMMIT's contributions concluded. */
export interface RecomputeCheck {
  /** Contributions loaded, verified and re-added (0 unless the sum was recomputed). */
  readonly contributions: number;
  /** Whether a robust record was recomputed and found right. */
  readonly robust?: boolean;
  readonly problems: readonly AuditProblem[];
  readonly unchecked: readonly AuditUnchecked[];
}

/** What {@link recomputeAggregate} needs about the round. */
export interface RecomputeInput {
  readonly source: AuditSource;
  /** Log sequence of the COMMIT. */
  readonly sequence: number;
  readonly open: ControlBodies['round-open'];
  readonly info: AggregateInfo;
  /** The stored aggregate object (its digest already checked against the decision). */
  readonly aggregate: Uint8Array;
  readonly partials: readonly LoggedPartialRecord[];
  /** The site's signing key in force (undefined: not a site, or unknown). */
  readonly siteKey: (site: string) => ReturnType<ConstructorParameters<typeof BlockVerifier>[0]['keys']>;
  /**
   * CKKS parameter sets the auditor knows; the one whose id (or, in `plain` mode, whose plain id)
   * the encoding names is used.
   */
  readonly ckksParams: readonly CkksParams[];
  /** The COMMIT's robust record (`plain` mode with a robust rule), rechecked once the sum is. */
  readonly robust?: RoundRobust;
  /**
   * How long contributions are kept (`history.updateRetentionMs`; 0: until removed). A gone
   * contribution of a round that ended more than this (plus {@link EXPIRY_SLACK_MS}) before the
   * source's read time is expired, not a problem. Absent: none expires.
   */
  readonly retentionMs?: number;
  /** Do not read the contributions (`CONTRIBUTIONS_SKIPPED`). */
  readonly skipContributions?: boolean;
  /** The auditor's clock (default `Date.now`): the source's read time is capped at it. */
  readonly now?: () => number;
}

/**
 * Time after a round's deadline by which its aggregators have stored its contributions (they store
 * each before their partial, and send it by the deadline), with room for clocks that disagree.
 */
export const EXPIRY_SLACK_MS = 3_600_000;

const ALGORITHMS = ['falcon-512', 'ml-dsa-65'] as const;

/**
 * Re-adds a COMMIT's contributions and compares the sum with the stored aggregate, byte for byte
 * (docs/log-format.md, "Auditing"). Every site the round's partial records list must have its
 * contribution stored, under the aggregator its RoundOpen assigned it to (the contributions
 * stream, `contributionName`): one that is not there is `CONTRIBUTION_NOT_STORED` and one written
 * twice `CONTRIBUTION_OVERWRITTEN`, at the partial, naming round, site and aggregator. A stored one
 * must hold the very manifest the partial forwarded, and its blocks must verify under the site's
 * key with that manifest's update digest (`CONTRIBUTION_MISMATCH`, at the partial). The
 * contributions are then added block-wise with node-seal (no secret key: a sum of ciphertexts is
 * public) and serialized as the coordinator stores aggregates. A sum that differs is diagnosed:
 * equal to the sum without one site (`CONTRIBUTION_MISSING`), or with one site counted twice
 * (`CONTRIBUTION_DUPLICATE`), else `AGGREGATE_RECOMPUTE_MISMATCH`; all at the COMMIT. Modular
 * addition of ciphertexts is exact and commutative, so the order of the partial sums does not
 * change the bytes.
 *
 * Not problems, listed: contributions that could not be read (no access, a bundle exported without
 * them, a timeout: `CONTRIBUTIONS_UNAVAILABLE`, which makes the audit incomplete), that are gone
 * past the retention (`CONTRIBUTIONS_EXPIRED`), or skipped on request (`CONTRIBUTIONS_SKIPPED`).
 */
export async function recomputeAggregate(input: RecomputeInput): Promise<RecomputeCheck> {
  const { sequence, open, info } = input;
  const unchecked = (message: string): RecomputeCheck => ({
    contributions: 0,
    problems: [],
    unchecked: [{ sequence, code: 'CONTRIBUTIONS_UNAVAILABLE', message: `round ${open.round}: ${message}` }],
  });
  if (input.partials.length === 0) {
    return {
      contributions: 0,
      problems: [],
      unchecked: [
        {
          sequence,
          code: 'CONTRIBUTIONS_UNLOGGED',
          message: `round ${open.round}: the log holds no partial record (a log written before partials were logged); its aggregate was not re-added`,
        },
      ],
    };
  }
  if (input.skipContributions === true) {
    return {
      contributions: 0,
      problems: [],
      unchecked: [
        {
          sequence,
          code: 'CONTRIBUTIONS_SKIPPED',
          message: `round ${open.round}: its aggregate was not re-added (contributions skipped on request)`,
        },
      ],
    };
  }
  // A plain-mode block names the plain id of the same parameters.
  const ckks = await auditLanes(input.ckksParams, info.encoding.ckksParamsId);
  if (ckks === undefined) {
    return unchecked(
      `CKKS parameters ${bytesToHex(info.encoding.ckksParamsId).slice(0, 12)} are not known to the auditor (pass the federation's configuration)`,
    );
  }
  const { verifier, maxBytes, maxFrames } = contributionReader({
    open,
    blocks: expectedAggregateBlocks(info),
    lanes: ckks,
    keys: input.siteKey,
    allowedAlgorithms: ALGORITHMS,
  });
  const retention = input.retentionMs ?? 0;
  const now = (input.now ?? Date.now)();
  const readAt = Math.min(input.source.readAtUnixMs?.() ?? now, now);
  const expired = retention > 0 && open.deadlineUnixMs + EXPIRY_SLACK_MS + retention < readAt;
  const assigned = new Map(open.assignments.map((a) => [a.site, a.aggregator]));
  const problems: AuditProblem[] = [];
  const updates: VerifiedUpdate[] = [];
  const gone: string[] = [];
  for (const { sequence: at, record } of input.partials) {
    let manifest: ReturnType<typeof decodeManifestBody>;
    try {
      manifest = decodeManifestBody(unframe(record.manifest, FRAME_KIND.manifest));
    } catch {
      return unchecked(`the partial at entry ${at} does not decode`);
    }
    for (const [i, c] of manifest.contributorList.entries()) {
      const key: ContributionKey = {
        aggregator: assigned.get(c.site) ?? record.aggregator,
        round: open.round,
        attempt: record.attempt,
        site: c.site,
      };
      const name = contributionName(key);
      let read: ContributionRead;
      try {
        read =
          input.source.contribution === undefined
            ? { status: 'unavailable', reason: 'this source holds no contributions' }
            : await input.source.contribution(key, maxBytes, maxFrames);
      } catch (err) {
        read = { status: 'unavailable', reason: (err as Error).message };
      }
      if (read.status === 'unavailable') {
        return unchecked(`contribution ${JSON.stringify(name)}: ${read.reason}`);
      }
      const whose = `round ${open.round}: the contribution of ${c.site} stored by ${key.aggregator} (listed by ${record.aggregator}, ${JSON.stringify(name)})`;
      if (read.status === 'absent') {
        if (expired) gone.push(c.site);
        else {
          problems.push({
            sequence: at,
            code: 'CONTRIBUTION_NOT_STORED',
            message: `${whose} is not in the contributions stream${input.source.kind === 'bundle' ? ' (nor in the bundle)' : ''}`,
          });
        }
        continue;
      }
      const mismatch = (why: string) =>
        problems.push({ sequence: at, code: 'CONTRIBUTION_MISMATCH', message: `${whose}: ${why}` });
      if (read.status === 'overwritten') {
        problems.push({
          sequence: at,
          code: 'CONTRIBUTION_OVERWRITTEN',
          message: `${whose}: ${read.reason}`,
        });
      } else if (read.status !== 'found') {
        mismatch(read.reason);
        continue;
      }
      const opened = openContribution(
        read.bytes,
        manifest.siteManifests[i] ?? new Uint8Array(0),
        c,
        verifier,
      );
      if (typeof opened === 'string') mismatch(opened);
      else updates.push(opened);
    }
  }
  if (problems.length === 0 && gone.length > 0) {
    return {
      contributions: 0,
      problems: [],
      unchecked: [
        {
          sequence,
          code: 'CONTRIBUTIONS_EXPIRED',
          message: `round ${open.round}: the contributions of ${gone.join(', ')} are gone, the round ended more than the ${retention} ms retention before the evidence was read; its aggregate was not re-added`,
        },
      ],
    };
  }
  if (problems.length > 0) return { contributions: 0, problems, unchecked: [] };
  const at = `aggregate ${JSON.stringify(info.object)} of round ${open.round}`;
  const target = input.aggregate;
  if (bytesEqual(sum(ckks, updates), target)) {
    const robust = input.robust === undefined ? null : robustProblems(ckks, input, updates);
    return {
      contributions: updates.length,
      robust: robust !== null && robust.length === 0,
      problems: robust ?? [],
      unchecked: [],
    };
  }
  const diagnosis = diagnose(ckks, updates, target);
  return {
    contributions: updates.length,
    problems: [
      diagnosis === null
        ? {
            sequence,
            code: 'AGGREGATE_RECOMPUTE_MISMATCH',
            message: `${at} is not the sum of the ${updates.length} stored contributions its partials list`,
          }
        : {
            sequence,
            code: diagnosis.twice ? 'CONTRIBUTION_DUPLICATE' : 'CONTRIBUTION_MISSING',
            message: diagnosis.twice
              ? `${at} counts the contribution of ${diagnosis.site} twice`
              : `${at} leaves out the contribution of ${diagnosis.site}, which its partial lists`,
          },
    ],
    unchecked: [],
  };
}

/** The aggregate object of `updates` summed block-wise, serialized as the coordinator stores it. */
function sum(ckks: LaneContext, updates: readonly VerifiedUpdate[]): Uint8Array {
  if (updates.length === 0) return new Uint8Array(0);
  const builder = new AggregateBuilder(ckks);
  try {
    for (const u of updates) builder.add(u);
    return encodeAggregateObject(builder.finish().ciphertexts);
  } finally {
    builder.dispose();
  }
}

/** Which one contribution left out, or counted twice, turns the recomputed sum into `target`; else null. */
function diagnose(
  ckks: LaneContext,
  updates: readonly VerifiedUpdate[],
  target: Uint8Array,
): { site: string; twice: boolean } | null {
  const equal = (list: readonly VerifiedUpdate[]) => {
    try {
      return bytesEqual(sum(ckks, list), target);
    } catch {
      return false; // e.g. beyond the lanes' headroom
    }
  };
  for (const [i, u] of updates.entries()) {
    if (equal(updates.filter((_, j) => j !== i))) return { site: u.signer, twice: false };
    // The same update again under another name: AggregateBuilder refuses a site twice.
    const again: VerifiedUpdate = {
      ...u,
      sites: [{ site: `${u.signer}\u0000again`, digest: u.digest, weight: 0 }],
    };
    if (equal([...updates, again])) return { site: u.signer, twice: true };
  }
  return null;
}

/**
 * Recomputes a robust round's Δ̄ from the re-added contributions (each decoded alone, the rule
 * applied in site order, as the coordinator does) and compares the kept sites and Δ̄'s SHA-256
 * with the COMMIT's robust record.
 */
function robustProblems(
  lanes: LaneContext,
  input: RecomputeInput,
  updates: readonly VerifiedUpdate[],
): AuditProblem[] {
  const record = input.robust!;
  const { open, sequence } = input;
  const problem = (why: string): AuditProblem[] => [
    { sequence, code: 'ROBUST_AGGREGATE_MISMATCH', message: `round ${open.round}: ${why}` },
  ];
  if (!(lanes instanceof PlainLaneContext)) return problem('a robust record on a round of encrypted updates');
  const keyset = new PlainLaneKeyset(lanes);
  let result: ReturnType<typeof applyRobustRule>;
  try {
    const deltas = updates.map((u) => ({
      site: u.signer,
      delta: plainUpdateDelta(keyset, u, record.parameters),
    }));
    result = applyRobustRule(deltas, record.rule);
  } catch (err) {
    return problem(
      `the ${record.rule.name} of the stored contributions cannot be computed: ${(err as Error).message}`,
    );
  }
  if (result.selected.join(',') !== record.selected.join(',')) {
    return problem(
      `${record.rule.name} keeps ${result.selected.join(', ')}; the commit records ${record.selected.join(', ')}`,
    );
  }
  if (!bytesEqual(result.digest, record.delta)) {
    return problem(
      `the ${record.rule.name} of the stored contributions is not the aggregate update the commit records`,
    );
  }
  return [];
}

import { PlainLaneContext, PlainLaneKeyset } from '../../../crypto/ckks/index.ts';
import type { RobustRule } from '../../../federation/index.ts';
import { CohortError } from '../../errors/index.ts';
import type { ControlBodies, CulpritRecord, Encoding } from '../../protocol/index.ts';
import type { AcceptedPartial, RoundRobust } from '../../round/index.ts';
import {
  applyRobustRule,
  plainUpdateDelta,
  type RobustRoundResult,
  robustDeltaObjectName,
} from '../robust-plan.ts';
import { type ReadbackFault, readListedContributions } from './contribution-readback.ts';
import type { RoundHost } from './round-host.ts';

/** Stable codes of {@link RobustRoundError}. */
export type RobustRoundErrorCode = 'PLAIN_MODE_REQUIRED' | ReadbackFault;

/** Why a robust round's inputs could not be read: the round then fails with this reason. */
export class RobustRoundError extends CohortError {
  /** The aggregator that did not keep the contribution it summed, when one is at fault. */
  readonly culprit: CulpritRecord | undefined;
  constructor(
    code: RobustRoundErrorCode,
    message: string,
    options?: { cause?: unknown; culprit?: CulpritRecord },
  ) {
    super(code, message, options);
    this.culprit = options?.culprit;
  }
}

/** What {@link robustRound} needs about the round. */
export interface RobustRoundInput {
  /** The round's RoundOpen: its context, attempt, assignments and size. */
  readonly open: ControlBodies['round-open'];
  readonly encoding: Encoding;
  /** The partials whose sum the round holds (their sites are the rule's inputs). */
  readonly partials: readonly AcceptedPartial[];
  readonly rule: RobustRule;
}

/**
 * The robust aggregate of a `plain`-mode round (docs/security.md, "plain mode"): reads every
 * contribution the partials list from the contributions stream, under the aggregator the RoundOpen
 * assigned the site to (each aggregator stores what it sums before sending its partial, write-once),
 * checks it is the update the partial listed and the site signed, decodes each site's Δ_k and
 * applies the rule. Throws, naming the site and the aggregator, when an update cannot be read, was
 * written twice or is not the listed one: the round then fails rather than commit an aggregate of
 * other inputs.
 */
export async function robustRound(host: RoundHost, input: RobustRoundInput): Promise<RobustRoundResult> {
  const lanes = host.ctx.ckks;
  if (!(lanes instanceof PlainLaneContext)) {
    throw new RobustRoundError('PLAIN_MODE_REQUIRED', 'a robust rule needs federation.mode plain');
  }
  const keyset = new PlainLaneKeyset(lanes);
  const updates: { site: string; delta: Float32Array }[] = [];
  for (const partial of input.partials) {
    for await (const read of readListedContributions(host, input.open, input.encoding, partial)) {
      if ('update' in read) {
        updates.push({ site: read.site, delta: plainUpdateDelta(keyset, read.update, host.parameterCount) });
        continue;
      }
      const culprit: CulpritRecord | undefined = read.attributable
        ? {
            member: read.storedBy,
            role: 'aggregator',
            fault: 'CONTRIBUTION_NOT_STORED',
            detail: `${read.fault}: ${read.reason}`,
            evidence: '',
          }
        : undefined;
      throw new RobustRoundError(read.fault, read.reason, culprit === undefined ? {} : { culprit });
    }
  }
  return applyRobustRule(updates, input.rule);
}

/**
 * The robust step of a round: {@link robustRound}, then Δ̄ stored in the aggregates store under
 * {@link robustDeltaObjectName} (sites read it there before voting). Returns the record the
 * commit's params carry, or why the round cannot commit.
 */
export async function robustStep(
  host: RoundHost,
  input: RobustRoundInput,
): Promise<
  { readonly record: RoundRobust } | { readonly failed: string; readonly culprit?: CulpritRecord | undefined }
> {
  let result: RobustRoundResult;
  try {
    result = await robustRound(host, input);
  } catch (err) {
    const code = err instanceof CohortError ? ` [${err.code}]` : '';
    return {
      failed: `robust aggregation (${input.rule.name})${code}: ${(err as Error).message}`,
      culprit: err instanceof RobustRoundError ? err.culprit : undefined,
    };
  }
  try {
    await (await host.aggregates()).put(robustDeltaObjectName(input.open.round), result.bytes);
  } catch (err) {
    return { failed: `cannot store the aggregate update: ${(err as Error).message}` };
  }
  const kept = new Set(result.selected);
  const dropped = input.partials
    .flatMap((p) => p.sites.map((s) => s.site))
    .filter((s) => !kept.has(s))
    .sort();
  const round = input.open.round;
  host.ctx.log.info({ round, rule: input.rule.name, dropped, clipped: result.clipped }, 'robust aggregate');
  host.emit({
    type: 'robust',
    round,
    rule: input.rule.name,
    kept: result.selected,
    dropped,
    clipped: result.clipped,
  });
  return {
    record: {
      rule: input.rule,
      selected: result.selected,
      clipped: result.clipped,
      parameters: result.delta.length,
      delta: result.digest,
    },
  };
}

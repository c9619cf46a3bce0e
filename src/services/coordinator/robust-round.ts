import { PlainLaneContext, PlainLaneKeyset } from '../../../crypto/lanes/index.ts';
import type { RobustRule } from '../../../federation/index.ts';
import { CohortError } from '../../errors/index.ts';
import {
  type Assignment,
  BlockVerifier,
  type Encoding,
  encodedLaneCount,
  maxBlockFrameBytes,
  type RoundContext,
} from '../../protocol/index.ts';
import { contributionObjectName, openContribution } from '../aggregator/index.ts';
import {
  applyRobustRule,
  plainUpdateDelta,
  type RobustRoundResult,
  robustDeltaObjectName,
} from '../robust-plan.ts';
import { readObject } from '../store/index.ts';
import type { AcceptedPartial } from './partial-intake.ts';
import type { RoundHost } from './round-host.ts';
import type { RoundRobust } from './round-params.ts';

/** Stable codes of {@link RobustRoundError}. */
export type RobustRoundErrorCode =
  | 'PLAIN_MODE_REQUIRED'
  | 'CONTRIBUTION_UNAVAILABLE'
  | 'CONTRIBUTION_MISMATCH';

/** Why a robust round's inputs could not be read: the round then fails with this reason. */
export class RobustRoundError extends CohortError {
  constructor(code: RobustRoundErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** What {@link robustRound} needs about the round. */
export interface RobustRoundInput {
  readonly context: RoundContext;
  readonly attempt: Uint8Array;
  readonly assignments: readonly Assignment[];
  readonly encoding: Encoding;
  readonly totalParams: number;
  /** The partials whose sum the round holds (their sites are the rule's inputs). */
  readonly partials: readonly AcceptedPartial[];
  readonly rule: RobustRule;
}

/**
 * The robust aggregate of a `plain`-mode round (docs/security.md, "plain mode"): reads every
 * contribution the partials list from the updates store (the aggregators stored each before
 * sending their partial), checks it is the update the partial listed and the site signed, decodes
 * each site's Δ_k and applies the rule. Throws, naming the site, when an update cannot be read or
 * is not the listed one: the round then fails rather than commit an aggregate of other inputs.
 */
export async function robustRound(host: RoundHost, input: RobustRoundInput): Promise<RobustRoundResult> {
  const { ctx } = host;
  const lanes = ctx.ckks;
  if (!(lanes instanceof PlainLaneContext)) {
    throw new RobustRoundError('PLAIN_MODE_REQUIRED', 'a robust rule needs federation.mode plain');
  }
  const keyset = new PlainLaneKeyset(lanes);
  const { context, assignments, encoding, totalParams } = input;
  const weights = new Map(assignments.map((a) => [a.site, a.examples]));
  const participants = assignments.map((a) => a.site);
  const verifier = new BlockVerifier({
    context,
    ckksParamsId: lanes.paramsId,
    encoding,
    keys: (signer) => (weights.has(signer) ? ctx.keys(signer) : undefined),
    allowedAlgorithms: ctx.config.crypto.signature.allowed,
    kind: 'site-update',
    maxCiphertextBytes: lanes.maxCiphertextBytes,
    participants: participants.length,
    pinned: { totalParams, weightOf: (site) => weights.get(site) },
  });
  const blocks = Math.ceil(
    encodedLaneCount(totalParams, encoding.bits, participants.length) / encoding.paramsPerBlock,
  );
  const maxBytes = 4 + (blocks + 1) * (4 + maxBlockFrameBytes(lanes.maxCiphertextBytes));
  const updates: { site: string; delta: Float32Array }[] = [];
  for (const partial of input.partials) {
    for (const [i, listed] of partial.sites.entries()) {
      const name = contributionObjectName(context.round, input.attempt, listed.site);
      const bytes = await readObject(ctx.transport.connection, ctx.subjects.updatesBucket, name, {
        maxBytes,
        timeoutMs: ctx.config.nats.timeoutMs,
      });
      if (bytes === null) {
        throw new RobustRoundError(
          'CONTRIBUTION_UNAVAILABLE',
          `the update of ${listed.site} is not in the updates store`,
        );
      }
      const opened = openContribution(bytes, partial.siteManifests[i] ?? new Uint8Array(0), listed, verifier);
      if (typeof opened === 'string') {
        throw new RobustRoundError(
          'CONTRIBUTION_MISMATCH',
          `the stored update of ${listed.site} (via ${partial.aggregator}): ${opened}`,
        );
      }
      updates.push({
        site: listed.site,
        delta: plainUpdateDelta(keyset, opened, context, participants, host.parameterCount),
      });
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
): Promise<{ readonly record: RoundRobust } | { readonly failed: string }> {
  let result: RobustRoundResult;
  try {
    result = await robustRound(host, input);
  } catch (err) {
    const code = err instanceof CohortError ? ` [${err.code}]` : '';
    return { failed: `robust aggregation (${input.rule.name})${code}: ${(err as Error).message}` };
  }
  try {
    await (await host.aggregates()).putBlob(
      { name: robustDeltaObjectName(input.context.round) },
      result.bytes,
    );
  } catch (err) {
    return { failed: `cannot store the aggregate update: ${(err as Error).message}` };
  }
  const kept = new Set(result.selected);
  const dropped = input.partials
    .flatMap((p) => p.sites.map((s) => s.site))
    .filter((s) => !kept.has(s))
    .sort();
  const round = input.context.round;
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

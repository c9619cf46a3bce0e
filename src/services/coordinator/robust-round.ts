import { PlainLaneContext, PlainLaneKeyset } from '../../../crypto/lanes/index.ts';
import type { RobustRule } from '../../../federation/index.ts';
import { CohortError } from '../../errors/index.ts';
import { type ControlBodies, type Encoding, updateLayout } from '../../protocol/index.ts';
import { contributionReader, encodeContribution, openContribution } from '../aggregator/index.ts';
import {
  applyRobustRule,
  plainUpdateDelta,
  type RobustRoundResult,
  robustDeltaObjectName,
} from '../robust-plan.ts';
import { readStoredContribution } from '../store/index.ts';
import type { AcceptedPartial } from './partial-intake.ts';
import type { RoundHost } from './round-host.ts';
import type { RoundRobust } from './round-params.ts';

/** Stable codes of {@link RobustRoundError}. */
export type RobustRoundErrorCode =
  | 'PLAIN_MODE_REQUIRED'
  /** The contribution is not in the contributions stream (or it could not be read). */
  | 'CONTRIBUTION_UNAVAILABLE'
  /** What is stored is not the update the partial listed and the site signed. */
  | 'CONTRIBUTION_MISMATCH'
  /** A frame of the contribution was written more than once (a stream weaker than write-once). */
  | 'CONTRIBUTION_OVERWRITTEN';

/** Why a robust round's inputs could not be read: the round then fails with this reason. */
export class RobustRoundError extends CohortError {
  constructor(code: RobustRoundErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
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
  const { ctx } = host;
  const lanes = ctx.ckks;
  if (!(lanes instanceof PlainLaneContext)) {
    throw new RobustRoundError('PLAIN_MODE_REQUIRED', 'a robust rule needs federation.mode plain');
  }
  const keyset = new PlainLaneKeyset(lanes);
  const { open, encoding } = input;
  const { verifier, maxBytes, maxFrames } = contributionReader({
    open,
    blocks: updateLayout(open.totalParams, encoding).blocks,
    encoding,
    lanes,
    keys: ctx.keys,
    allowedAlgorithms: ctx.config.crypto.signature.allowed,
  });
  const assigned = new Map(open.assignments.map((a) => [a.site, a.aggregator]));
  const updates: { site: string; delta: Float32Array }[] = [];
  for (const partial of input.partials) {
    for (const [i, listed] of partial.sites.entries()) {
      const aggregator = assigned.get(listed.site) ?? partial.aggregator;
      const where = `the update of ${listed.site} (stored by ${aggregator})`;
      let read: Awaited<ReturnType<typeof readStoredContribution>>;
      try {
        read = await readStoredContribution(
          ctx.transport.connection,
          ctx.config.federation.id,
          { aggregator, round: open.round, attempt: open.attempt, site: listed.site },
          { maxFrames, maxBytes, timeoutMs: ctx.config.nats.timeoutMs },
        );
      } catch (err) {
        throw new RobustRoundError(
          'CONTRIBUTION_UNAVAILABLE',
          `${where} cannot be read: ${(err as Error).message}`,
          {
            cause: err,
          },
        );
      }
      if (read.status === 'absent') {
        throw new RobustRoundError('CONTRIBUTION_UNAVAILABLE', `${where} is not in the contributions stream`);
      }
      if (read.status === 'overwritten') {
        throw new RobustRoundError('CONTRIBUTION_OVERWRITTEN', `${where}: ${read.reason}`);
      }
      if (read.status !== 'found') {
        throw new RobustRoundError('CONTRIBUTION_MISMATCH', `${where}: ${read.reason}`);
      }
      const [manifest, ...blocks] = read.frames;
      const opened = openContribution(
        encodeContribution({ manifest: manifest!, blocks }),
        partial.siteManifests[i] ?? new Uint8Array(0),
        listed,
        verifier,
      );
      if (typeof opened === 'string') {
        throw new RobustRoundError(
          'CONTRIBUTION_MISMATCH',
          `the stored update of ${listed.site} (stored by ${aggregator}, listed by ${partial.aggregator}): ${opened}`,
        );
      }
      updates.push({
        site: listed.site,
        delta: plainUpdateDelta(keyset, opened, host.parameterCount),
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
    await (await host.aggregates()).putBlob({ name: robustDeltaObjectName(input.open.round) }, result.bytes);
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

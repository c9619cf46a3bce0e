import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import type { RobustRule } from '../../../federation/index.ts';
import { decodeRoundParams, type RoundRobust } from '../../round/index.ts';
import { decodeRobustDelta, robustDeltaObjectName, serviceRobustRule } from '../robust-plan.ts';
import { aggregateStore } from '../store/index.ts';
import type { AgentCore } from './agent-core.ts';
import { AgentError } from './agent-error.ts';
import { fetchObject } from './aggregate-fetch.ts';
import { VoteNo } from './voter-error.ts';

/** What a round's commit says about its robust aggregation. */
export interface RobustRound {
  readonly params: Uint8Array;
  readonly round: number;
  /** Sites whose updates the round's sum holds. */
  readonly contributors: readonly string[];
  /** Parameters of the model. */
  readonly parameters: number;
}

/**
 * The aggregate update Δ̄ a `plain`-mode round with a robust rule applies, or null for a round
 * aggregated by FedAvg of the sum, whatever its params carry (docs/security.md, "plain mode"). Before reading it the site
 * checks the params' robust record: the rule is the federation's (`federation.aggregation`), the
 * kept sites are contributors of the sum and as many as the rule keeps; then Δ̄ must hash to the
 * record's digest, have the model's length and be finite. A failure is a {@link VoteNo} on PREPARE
 * (`'vote-no'`) and `REPLAY_MISMATCH` on catch-up.
 */
export async function robustDeltaFor(
  core: AgentCore,
  r: RobustRound,
  onMismatch: 'vote-no' | 'REPLAY_MISMATCH',
): Promise<Float32Array | null> {
  const refuse = (problem: string) =>
    onMismatch === 'vote-no'
      ? new VoteNo(problem)
      : new AgentError('REPLAY_MISMATCH', `round ${r.round}: ${problem}`);
  const rule = serviceRobustRule(core.ctx.config);
  // FedAvg of the sum: what a site applies does not depend on the params' trailers.
  if (rule === null) return null;
  let record: RoundRobust | undefined;
  try {
    record = decodeRoundParams(r.params).robust;
  } catch (err) {
    throw refuse(`the round params do not decode: ${(err as Error).message}`);
  }
  if (record === undefined)
    throw refuse(`the round records no robust aggregation; this federation uses ${rule.name}`);
  if (ruleKey(record.rule) !== ruleKey(rule)) {
    throw refuse(`the round records rule ${ruleKey(record.rule)}, this federation's is ${ruleKey(rule)}`);
  }
  if (record.parameters !== r.parameters) {
    throw refuse(`the robust record is for ${record.parameters} parameters, the model has ${r.parameters}`);
  }
  const listed = new Set(r.contributors);
  const stranger = record.selected.find((s) => !listed.has(s));
  if (stranger !== undefined)
    throw refuse(`the robust record keeps ${stranger}, not a contributor of the sum`);
  const kept = keptCount(rule, r.contributors.length);
  if (record.selected.length !== kept) {
    throw refuse(
      `the robust record keeps ${record.selected.length} of ${r.contributors.length} updates, ${rule.name} keeps ${kept}`,
    );
  }
  const name = robustDeltaObjectName(r.round);
  const bytes = await fetchObject(
    core,
    aggregateStore(core.ctx.config.federation.id),
    name,
    4 * r.parameters,
  );
  if (!bytesEqual(sha256(bytes), record.delta))
    throw refuse(`${name} does not hash to the digest the round records`);
  try {
    return decodeRobustDelta(bytes, r.parameters);
  } catch (err) {
    throw refuse((err as Error).message);
  }
}

/** How many of n updates `rule` averages. */
function keptCount(rule: RobustRule, n: number): number {
  return rule.name === 'multi-krum' ? (rule.select ?? n - rule.byzantine) : n;
}

/** A rule as one comparable string (fields in a fixed order, absent ones left out). */
function ruleKey(rule: RobustRule): string {
  const fields = Object.entries(rule)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return JSON.stringify(Object.fromEntries(fields));
}

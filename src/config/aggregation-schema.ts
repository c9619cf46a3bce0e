import { z } from 'zod';

/**
 * A robust aggregation rule (`federation/robust`), as the federation config
 * (`federation.aggregation`) and experiment files (`aggregation`) write it: `mean` (unweighted),
 * `median`, `trimmed-mean` or `multi-krum`, each with an optional per-update L2 `normBound`.
 */
export const robustRuleSchema = z.discriminatedUnion('name', [
  z.strictObject({ name: z.literal('mean'), normBound: z.number().gt(0).optional() }),
  z.strictObject({ name: z.literal('median'), normBound: z.number().gt(0).optional() }),
  z.strictObject({
    name: z.literal('trimmed-mean'),
    /** Share of the values dropped at each end, per coordinate. */
    trimFraction: z.number().min(0).lt(0.5),
    normBound: z.number().gt(0).optional(),
  }),
  z.strictObject({
    name: z.literal('multi-krum'),
    /** f: Byzantine sites tolerated; a round needs more than 2f + 2 updates. */
    byzantine: z.int().min(0),
    /** m: updates averaged; default n − f. */
    select: z.int().min(1).optional(),
    normBound: z.number().gt(0).optional(),
  }),
]);

interface AggregationFields {
  readonly federation?: {
    readonly mode?: string;
    readonly aggregation?: { readonly name: string; readonly byzantine?: number; readonly select?: number };
  };
  readonly round?: { readonly minContributors?: number };
  readonly privacy?: unknown;
}

/**
 * Cross-field checks of `federation.aggregation`: a robust rule reads every update, so it needs
 * `plain` mode; it would undo the distributed noise of `privacy` (a median of noise shares is not
 * their sum); and Multi-Krum needs more than 2f + 2 updates in the smallest round that commits.
 */
export function checkAggregation(cfg: AggregationFields, ctx: z.RefinementCtx): void {
  const rule = cfg.federation?.aggregation;
  if (rule === undefined) return;
  const path = ['federation', 'aggregation'];
  if (cfg.federation?.mode !== 'plain') {
    ctx.addIssue({
      code: 'custom',
      path,
      message: `a robust rule reads every update: it needs federation.mode plain (in ${cfg.federation?.mode ?? 'he'} mode only the sum is ever seen)`,
    });
  }
  if (cfg.privacy !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path,
      message: `${rule.name} would drop the sites' shares of the privacy noise (the noise is only whole in the sum): remove privacy or the aggregation rule`,
    });
  }
  const k = cfg.round?.minContributors;
  if (rule.name === 'multi-krum' && Number.isInteger(rule.byzantine) && Number.isInteger(k)) {
    const f = rule.byzantine!;
    if (!(k! > 2 * f + 2)) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, 'byzantine'],
        message: `Multi-Krum tolerating ${f} needs more than ${2 * f + 2} updates a round, round.minContributors is ${k}`,
      });
    } else if (rule.select !== undefined && rule.select > k!) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, 'select'],
        message: `Multi-Krum selects ${rule.select} updates, round.minContributors is ${k}: a round of ${k} could not`,
      });
    }
  }
}

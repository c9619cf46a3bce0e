import { z } from 'zod';

/**
 * Site-level differential privacy of the committed models (docs/privacy.md): every site clips its
 * update to `clipNorm`, rounds it to integer levels and adds its share of Skellam noise before
 * encrypting, so only the sum carries the whole noise; every member accounts the ε spent from the
 * log, each commit records it, and the coordinator opens no round that could pass `epsilon`.
 */
export const privacySchema = z
  .strictObject({
    mechanism: z.literal('skellam').default('skellam'),
    /** ε the federation may spend (the budget). */
    epsilon: z.number().gt(0),
    delta: z.number().gt(0).lt(1).default(1e-5),
    /**
     * Summed noise standard deviation over the L2 sensitivity. Default: calibrated so that
     * `plannedRounds` rounds of `round.minContributors` sites spend exactly `epsilon`.
     */
    noiseMultiplier: z.number().gt(0).optional(),
    /** Rounds the calibration plans for (needed without `noiseMultiplier`). */
    plannedRounds: z.int().min(1).max(1_000_000).optional(),
    /** L2 norm each site clips its update Δw to (model units). */
    clipNorm: z.number().gt(0),
  })
  .refine((p) => p.noiseMultiplier !== undefined || p.plannedRounds !== undefined, {
    error: 'needs noiseMultiplier or plannedRounds (to calibrate one for epsilon)',
  });

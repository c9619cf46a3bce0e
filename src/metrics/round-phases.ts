/**
 * A phase of a round (`cohort_round_phase_duration_seconds`), or `total`, the whole round
 * (`cohort_round_duration_seconds`).
 */
export type RoundPhase = 'collect' | 'vote' | 'total';

/** Every {@link RoundPhase}, in round order. */
export const ROUND_PHASES: readonly RoundPhase[] = Object.freeze(['collect', 'vote', 'total']);

/** One phase duration, seconds. */
export interface PhaseObservation {
  readonly phase: RoundPhase;
  readonly seconds: number;
}

/** Rounds remembered at once; older ones are forgotten (a coordinator runs one round at a time). */
const KEPT_ROUNDS = 8;

/**
 * Phase durations of rounds from the coordinator's events, stamped with the metrics' clock when
 * each event arrives (docs/metrics.md):
 * - `collect`: `round-open` → `prepare` (sites train and upload, aggregators sum, the partials
 *   arrive), or `round-open` → `decision` for a round aborted before PREPARE;
 * - `vote`: `prepare` → `decision` (sites fetch, decrypt and apply the aggregate and vote; the
 *   decision is logged and published);
 * - `total`: the decision's `durationMs` (from just before RoundOpen was logged to the decision's
 *   publication), for every decided round: rollback rounds and a restart's abort have no
 *   `round-open`, so `total` is their only phase.
 */
export class RoundPhaseClock {
  readonly #opened = new Map<number, number>();
  readonly #prepared = new Map<number, number>();

  /** `round-open` of `round` at `atMs`. */
  open(round: number, atMs: number): void {
    this.#opened.set(round, atMs);
    forgetOld(this.#opened);
  }

  /** `prepare` of `round` at `atMs`: ends its collect phase. */
  prepare(round: number, atMs: number): PhaseObservation[] {
    this.#prepared.set(round, atMs);
    forgetOld(this.#prepared);
    const opened = this.#opened.get(round);
    return opened === undefined ? [] : [{ phase: 'collect', seconds: seconds(atMs - opened) }];
  }

  /** The decision of `round` at `atMs`, which took `durationMs` in all. */
  decided(round: number, durationMs: number, atMs: number): PhaseObservation[] {
    const out: PhaseObservation[] = [];
    const opened = this.#opened.get(round);
    const prepared = this.#prepared.get(round);
    if (prepared !== undefined) out.push({ phase: 'vote', seconds: seconds(atMs - prepared) });
    else if (opened !== undefined) out.push({ phase: 'collect', seconds: seconds(atMs - opened) });
    if (Number.isFinite(durationMs)) out.push({ phase: 'total', seconds: seconds(durationMs) });
    this.#opened.delete(round);
    this.#prepared.delete(round);
    return out;
  }
}

function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}

function forgetOld(m: Map<number, number>): void {
  while (m.size > KEPT_ROUNDS) m.delete(Math.min(...m.keys()));
}

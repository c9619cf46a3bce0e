import { createHash } from 'node:crypto';
import { assertInteger } from '../../errors/index.ts';

/**
 * Rounds without a site-caused fault after which suspicion is forgotten (the suspects then all
 * take part again): long enough that a site that faults now and then is still isolated, short
 * enough that honest sites do not sit out for good after one fault.
 */
export const SUSPICION_ROUNDS = 64;

/**
 * Who can have spoiled an aggregate whose every partial was the exact sum of its listed
 * contributions but whose MAC did not hold (docs/security.md, "Blame"): one of the round's
 * contributors wrote a wrong tag. Nobody can tell which from the sum (only sites hold the MAC key,
 * and no site may see another's update), so the coordinator narrows it down by group testing:
 * the culprit is in the contributors of every such round, so the suspects are the intersection of
 * those sets, and each later round includes only half of the suspects (with every site not
 * suspected). A round the culprit spoils again halves the suspects; a round it lets through commits
 * (the federation goes on either way). Once one suspect is left it is the culprit: struck like a
 * NO voter, and kept as the only suspect, so that it is struck again the next time it spoils a
 * round. With one hostile site among n, it spoils at most ⌈log₂ n⌉ + 1 rounds before it is named.
 *
 * Pure and deterministic (the half a round includes is chosen from a hash of the round), held in
 * the coordinator's memory: a restarted coordinator starts without suspicion.
 */
export class SuspectSet {
  #suspects: ReadonlySet<string> = new Set();
  #lastFault = 0;

  /** The suspects, sorted. */
  get suspects(): string[] {
    return [...this.#suspects].sort();
  }

  /**
   * The sites of round `round` from `eligible`: all of them without suspicion; else every site not
   * suspected and the half of the suspects `round` picks, adding more suspects (in the order the
   * round's hash gives) while fewer than `minimum` sites would take part.
   */
  cohort(eligible: readonly string[], round: number, minimum: number): string[] {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    if (this.#suspects.size === 0) return [...eligible];
    if (round > this.#lastFault + SUSPICION_ROUNDS) {
      this.#suspects = new Set();
      return [...eligible];
    }
    const clear = eligible.filter((s) => !this.#suspects.has(s));
    const suspected = eligible
      .filter((s) => this.#suspects.has(s))
      .map((s) => ({ s, h: createHash('sha256').update(`cohort/v1/suspect\0${round}\0${s}`).digest() }))
      .sort((a, b) => Buffer.compare(a.h, b.h))
      .map((x) => x.s);
    // A lone suspect is the named culprit: it takes part (and is struck again if it spoils the round).
    const take = Math.max(Math.ceil(suspected.length / 2), minimum - clear.length, 0);
    const chosen = new Set([...clear, ...suspected.slice(0, take)]);
    return eligible.filter((s) => chosen.has(s));
  }

  /**
   * Round `round`, whose contributors were `contributors`, failed for a fault only a contribution
   * can cause. Returns the culprit when the suspects narrow to one site, else undefined.
   */
  fault(round: number, contributors: readonly string[]): string | undefined {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    this.#lastFault = round;
    const inRound = new Set(contributors);
    const narrowed =
      this.#suspects.size === 0 ? [...inRound] : [...this.#suspects].filter((s) => inRound.has(s));
    // Empty: the faults have no one common culprit (more than one hostile site): start over.
    this.#suspects = new Set(narrowed.length === 0 ? inRound : narrowed);
    return this.#suspects.size === 1 ? [...this.#suspects][0] : undefined;
  }
}

import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';

/** The breaker's levels, by number: what the coordinator does at each (docs/round-protocol.md). */
export const BREAKER_LEVELS = ['closed', 'shrink', 'drop-optional', 'frozen'] as const;

/** 0 closed, 1 shrink, 2 drop optional work, 3 frozen. */
export type BreakerLevel = 0 | 1 | 2 | 3;

/** One of {@link BREAKER_LEVELS}. */
export type BreakerLevelName = (typeof BREAKER_LEVELS)[number];

/** The breaker's settings (`round.breaker`, validated by the config schema). */
export interface BreakerSettings {
  /** Off: the breaker observes nothing and stays closed (today's behaviour). */
  readonly enabled: boolean;
  /** Decided rounds the failing share is computed over (≥ 1). */
  readonly window: number;
  /** Failing shares (0 < shrinkAt < dropOptionalAt < freezeAt ≤ 1) at which levels 1, 2, 3 start. */
  readonly shrinkAt: number;
  readonly dropOptionalAt: number;
  readonly freezeAt: number;
  /** Calm rounds in a row (share below the level's threshold) before stepping down one level (≥ 1). */
  readonly coolDownRounds: number;
  /** And ms since the first of them; frozen, ms before the probe round (≥ 0). */
  readonly coolDownMs: number;
}

/** What one decided round says about its sites (docs/round-protocol.md, "Circuit breaker"). */
export interface RoundOutcome {
  readonly round: number;
  /** Sites the round counted on: its cohort, its voters, and seen sites that are gone. */
  readonly expected: readonly string[];
  /** Those of {@link expected} that failed or were late: no update in the aggregate, NO, no vote, gone. */
  readonly failing: readonly string[];
  readonly committed: boolean;
}

/** A change of level. */
export interface BreakerTransition {
  readonly from: BreakerLevel;
  readonly to: BreakerLevel;
  /** Why, for the log and the event. */
  readonly reason: string;
  /** The failing share of the window when it changed, in [0, 1]. */
  readonly share: number;
  /** The round that caused it (the round about to open, for an escalation before it). */
  readonly round: number;
  readonly atMs: number;
}

/** The breaker as the admin API and `stats()` show it. */
export interface BreakerState {
  readonly enabled: boolean;
  readonly level: BreakerLevel;
  readonly name: BreakerLevelName;
  /** Failing share of the window, in [0, 1] (0 with an empty window). */
  readonly share: number;
  /** Rounds in the window. */
  readonly rounds: number;
  /** Sites that failed in the window, sorted: left out of cohorts from level 1. */
  readonly failing: readonly string[];
  /** Frozen and running its one probe round (half-open). */
  readonly probing: boolean;
  /** Clock (ms) of the last level change; null before any. */
  readonly changedAtMs: number | null;
  /** Frozen: clock (ms) from which the probe round may open; null otherwise. */
  readonly probeAtMs: number | null;
  /** Level changes so far. */
  readonly transitions: number;
}

/** A round's cohort after the breaker (see {@link CircuitBreaker.cohort}). */
export interface BreakerCohort {
  /** The sites to assign, in the order given. */
  readonly sites: readonly string[];
  /** Eligible sites left out because they failed in the window, sorted. */
  readonly leftOut: readonly string[];
  /**
   * A site that failed in every round of the window that expected it stays in the cohort, because
   * leaving it out too would leave fewer than `minContributors`: the caller escalates.
   */
  readonly short: boolean;
}

/** Which level a failing share calls for. */
export function levelFor(settings: BreakerSettings, share: number): BreakerLevel {
  if (share >= settings.freezeAt) return 3;
  if (share >= settings.dropOptionalAt) return 2;
  if (share >= settings.shrinkAt) return 1;
  return 0;
}

function threshold(settings: BreakerSettings, level: BreakerLevel): number {
  return [0, settings.shrinkAt, settings.dropOptionalAt, settings.freezeAt][level]!;
}

function assertSettings(s: BreakerSettings): void {
  assertInteger('settings.window', s.window, 1, 1_000_000);
  assertInteger('settings.coolDownRounds', s.coolDownRounds, 1, 1_000_000);
  assertInteger('settings.coolDownMs', s.coolDownMs, 0, Number.MAX_SAFE_INTEGER);
  const t = [s.shrinkAt, s.dropOptionalAt, s.freezeAt];
  if (!t.every((x) => Number.isFinite(x) && x > 0 && x <= 1) || !(t[0]! < t[1]! && t[1]! < t[2]!)) {
    throw new InvalidArgumentError(
      `settings thresholds must satisfy 0 < shrinkAt < dropOptionalAt < freezeAt <= 1, got ${t.join(', ')}`,
      { details: { name: 'settings' } },
    );
  }
}

/**
 * The coordinator's three-level circuit breaker (pure: the caller passes the clock and acts on
 * the level). It keeps the outcomes of the last `window` decided rounds; their failing share is
 * Σ failing / Σ expected (site-rounds, so one flaky round among many weighs little).
 *
 * - Rising: once the window is full, when an outcome puts the share at or above a higher level's
 *   threshold, the breaker goes straight to that level (a first bad round of a fresh coordinator,
 *   or one blip among `window` rounds, weighs 1 / `window`). {@link escalate} raises it one level
 *   from outside (the cohort could not shed a site that keeps failing).
 * - Falling: one level at a time, after `coolDownRounds` calm outcomes in a row (share below the
 *   current level's threshold) spanning at least `coolDownMs`.
 * - Frozen (level 3): no training round opens. `coolDownMs` after freezing (or after a failed
 *   probe) one probe round may open ({@link probeDue}, {@link beginProbe}); if it commits with a
 *   share below `freezeAt`, the breaker steps down to level 2 and the window restarts from the
 *   probe (older outcomes predate the freeze); otherwise it stays frozen for another `coolDownMs`.
 */
export class CircuitBreaker {
  readonly settings: BreakerSettings;
  readonly #window: RoundOutcome[] = [];
  #level: BreakerLevel = 0;
  #changedAt: number | null = null;
  #frozenSince = 0;
  #probing = false;
  #calmRounds = 0;
  #calmSince: number | undefined;
  #transitions = 0;

  constructor(settings: BreakerSettings) {
    assertSettings(settings);
    this.settings = settings;
  }

  get level(): BreakerLevel {
    return this.#level;
  }

  /** Frozen, with the probe round admitted and not decided yet. */
  get probing(): boolean {
    return this.#probing;
  }

  /** Level 2 and above (and the probe): rounds carry no optional work. */
  get dropsOptionalWork(): boolean {
    return this.#level >= 2;
  }

  /** Failing share of the window: Σ failing / Σ expected, 0 when empty. */
  share(): number {
    let expected = 0;
    let failing = 0;
    for (const o of this.#window) {
      expected += o.expected.length;
      failing += o.failing.length;
    }
    return expected === 0 ? 0 : failing / expected;
  }

  /** Sites that failed in any round of the window, sorted. */
  failingSites(): string[] {
    return [...new Set(this.#window.flatMap((o) => o.failing))].sort();
  }

  /**
   * Records a decided round's outcome at clock `nowMs`; returns the level change it causes, if
   * any. A round with no expected site carries no evidence and is ignored; so is everything while
   * disabled. While frozen, only the probe's outcome can change the level.
   */
  observe(outcome: RoundOutcome, nowMs: number): BreakerTransition | undefined {
    if (!this.settings.enabled || outcome.expected.length === 0) return undefined;
    const expected = new Set(outcome.expected);
    const failing = [...new Set(outcome.failing)].filter((s) => expected.has(s));
    const clean: RoundOutcome = { ...outcome, expected: [...expected], failing };
    if (this.#probing) {
      this.#probing = false;
      const share = failing.length / expected.size;
      if (outcome.committed && share < this.settings.freezeAt) {
        this.#window.length = 0;
        this.#window.push(clean);
        return this.#move(
          2,
          `probe round ${outcome.round} committed with a failing share of ${fmt(share)}`,
          outcome.round,
          nowMs,
        );
      }
      this.#push(clean);
      this.#frozenSince = nowMs;
      return undefined;
    }
    this.#push(clean);
    if (this.#level === 3) return undefined;
    const share = this.share();
    const target = levelFor(this.settings, share);
    if (target > this.#level && this.#window.length >= this.settings.window) {
      return this.#move(
        target,
        `failing share ${fmt(share)} over ${this.#window.length} round(s) reached ${BREAKER_LEVELS[target]} at ${threshold(this.settings, target)}`,
        outcome.round,
        nowMs,
      );
    }
    if (target >= this.#level) {
      this.#calmRounds = 0;
      this.#calmSince = undefined;
      return undefined;
    }
    this.#calmRounds++;
    this.#calmSince ??= nowMs;
    if (
      this.#calmRounds < this.settings.coolDownRounds ||
      nowMs - this.#calmSince < this.settings.coolDownMs
    ) {
      return undefined;
    }
    const below = threshold(this.settings, this.#level);
    return this.#move(
      (this.#level - 1) as BreakerLevel,
      `failing share ${fmt(share)} below ${below} for ${this.#calmRounds} round(s) and ${nowMs - this.#calmSince} ms`,
      outcome.round,
      nowMs,
    );
  }

  /**
   * The cohort of a round from the `eligible` sites: from level 1 (not for the probe), the sites
   * that failed in the window are left out, most failures first (ties by id), as long as
   * `minContributors` remain. `short` when one kept in failed in every round of the window that
   * expected it (the caller escalates); a site that failed once among good rounds is not.
   */
  cohort(eligible: readonly string[], minContributors: number): BreakerCohort {
    assertInteger('minContributors', minContributors, 1, Number.MAX_SAFE_INTEGER);
    if (this.#level === 0 || this.#probing) return { sites: [...eligible], leftOut: [], short: false };
    const failures = new Map<string, number>();
    const expected = new Map<string, number>();
    for (const o of this.#window) {
      for (const s of o.expected) expected.set(s, (expected.get(s) ?? 0) + 1);
      for (const s of o.failing) failures.set(s, (failures.get(s) ?? 0) + 1);
    }
    const failing = eligible
      .filter((s) => failures.has(s))
      .sort((a, b) => failures.get(b)! - failures.get(a)! || (a < b ? -1 : a > b ? 1 : 0));
    const room = Math.max(0, eligible.length - minContributors);
    const out = new Set(failing.slice(0, room));
    const kept = failing.slice(room);
    return {
      sites: eligible.filter((s) => !out.has(s)),
      leftOut: [...out].sort(),
      short: eligible.length >= minContributors && kept.some((s) => failures.get(s) === expected.get(s)),
    };
  }

  /** Raises the level by one (not above frozen) for `reason`, before round `round` opens. */
  escalate(round: number, reason: string, nowMs: number): BreakerTransition | undefined {
    if (!this.settings.enabled || this.#level === 3) return undefined;
    return this.#move((this.#level + 1) as BreakerLevel, reason, round, nowMs);
  }

  /** Frozen, no probe running, and `coolDownMs` passed since the freeze or the last failed probe. */
  probeDue(nowMs: number): boolean {
    return this.#level === 3 && !this.#probing && nowMs - this.#frozenSince >= this.settings.coolDownMs;
  }

  /** Admits the probe round (call when {@link probeDue}); its outcome decides (see {@link observe}). */
  beginProbe(): void {
    if (this.#level === 3) this.#probing = true;
  }

  /** The probe round ended undecided (the coordinator stopped, or a round that never opened). */
  cancelProbe(nowMs: number): void {
    if (!this.#probing) return;
    this.#probing = false;
    this.#frozenSince = nowMs;
  }

  state(): BreakerState {
    return {
      enabled: this.settings.enabled,
      level: this.#level,
      name: BREAKER_LEVELS[this.#level],
      share: this.share(),
      rounds: this.#window.length,
      failing: this.failingSites(),
      probing: this.#probing,
      changedAtMs: this.#changedAt,
      probeAtMs: this.#level === 3 ? this.#frozenSince + this.settings.coolDownMs : null,
      transitions: this.#transitions,
    };
  }

  #push(outcome: RoundOutcome): void {
    this.#window.push(outcome);
    while (this.#window.length > this.settings.window) this.#window.shift();
  }

  #move(to: BreakerLevel, reason: string, round: number, nowMs: number): BreakerTransition {
    const from = this.#level;
    this.#level = to;
    this.#changedAt = nowMs;
    this.#calmRounds = 0;
    this.#calmSince = undefined;
    this.#transitions++;
    if (to === 3) this.#frozenSince = nowMs;
    return { from, to, reason, share: this.share(), round, atMs: nowMs };
  }
}

function fmt(share: number): string {
  return share.toFixed(3);
}

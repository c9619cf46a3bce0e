import { bytesEqual } from '../../../crypto/digest/index.ts';
import { assertInteger } from '../../errors/index.ts';
import type { ExclusionRecord } from '../../protocol/index.ts';
import type { MemberRoleName } from './events.ts';

/** What the coordinator knows of one site or aggregator from its signed heartbeats and switches. */
export interface MemberView {
  readonly role: MemberRoleName;
  /** Coordinator clock (ms) of the last heartbeat. */
  lastSeen: number;
  /** A site's example count (n_k). */
  examples: number;
  /** The head the member last reported (heartbeat or switched). */
  head: Uint8Array;
  height: number;
  state: string;
}

/** Heartbeat accounting of one member (see {@link Membership.heartbeatCounts}). */
interface HeartbeatSpan {
  /** Sender stamp (ms) of the latest heartbeat. */
  last: number;
  /** Sum of the gaps between consecutive heartbeats within spans, ms. */
  gapMs: number;
  /** Spans begun: the first heartbeat, and each one after a silence longer than the window. */
  spans: number;
  received: number;
}

/** The coordinator's head, as membership needs it. */
export interface HeadRef {
  readonly hash: Uint8Array;
  readonly height: number;
}

/** Most rounds an excluded site sits out, however many offences in a row. */
export const MAX_SIT_OUT_ROUNDS = 64;

/** Rounds a site sits out after its `strikes`-th offence in a row: 1, 2, 4, … up to {@link MAX_SIT_OUT_ROUNDS}. */
export function sitOutRounds(strikes: number): number {
  return Math.min(MAX_SIT_OUT_ROUNDS, 2 ** Math.max(0, strikes - 1));
}

/**
 * Liveness and eligibility of the federation's members (docs/round-protocol.md, "Membership").
 *
 * A member is live while its last heartbeat is at most `window` ms old. A site is eligible for a
 * round when it is live, not excluded, and reports the coordinator's head: a site behind the head
 * catches up from the log and is eligible once it reports the head, so it never holds a round up.
 *
 * Exclusion: a site that voted NO, or did not vote in time, or that the round named as the
 * culprit of a fault, is excluded at round r with one more strike; so is an aggregator named as a
 * culprit (it is then left out of the tree until its sit-out is over and it is live).
 * A site's NO caused by someone else's fault (an aggregate every decrypting site found wrong) is
 * no offence: see `judgeVotes` and `decide`. It is readmitted once both (1) it is live and reports the coordinator's current head (it
 * caught up: after a commit it missed, by replaying the log) and (2) it sat out
 * `sitOutRounds(strikes)` rounds, so a site that keeps failing is asked less and less often —
 * unless no other site is eligible, when waiting would stop the federation. A YES in a committed
 * round clears its strikes. The table is written with every decision, so a restarted coordinator
 * keeps it. (`atHeight`, the head height at exclusion, is recorded for operators and auditors.)
 */
export class Membership {
  readonly #roles: ReadonlyMap<string, MemberRoleName>;
  readonly #window: number;
  readonly #now: () => number;
  readonly #revoked: (id: string) => boolean;
  readonly #clockLag = new Map<string, number>();
  readonly #views = new Map<string, MemberView>();
  readonly #beats = new Map<string, HeartbeatSpan>();
  #exclusions = new Map<string, ExclusionRecord>();

  /**
   * @param window liveness window in ms (`round.missedHeartbeats × round.heartbeatMs`).
   * @param revoked whether a member is revoked in the registry: a revoked member is never live.
   */
  constructor(
    roles: ReadonlyMap<string, MemberRoleName>,
    window: number,
    now: () => number,
    revoked: (id: string) => boolean = () => false,
  ) {
    this.#roles = roles;
    this.#window = window;
    this.#now = now;
    this.#revoked = revoked;
  }

  role(id: string): MemberRoleName | undefined {
    return this.#roles.get(id);
  }

  /**
   * How far member `id`'s clock seemed behind this one at its last heartbeat, ms (its stamp's age
   * on arrival: clock lag plus transit, never below 0); 0 before any heartbeat. A member that acts
   * at a deadline on its own clock acts that much later on this one.
   */
  clockLag(id: string): number {
    return this.#clockLag.get(id) ?? 0;
  }

  view(id: string): MemberView | undefined {
    return this.#views.get(id);
  }

  /** Records a verified heartbeat; `joined` when the member was not live before. */
  heartbeat(
    id: string,
    role: MemberRoleName,
    hb: { examples: number; head: Uint8Array; height: number; state: string; sentUnixMs?: number },
  ): { joined: boolean } {
    this.#countHeartbeat(id, Number.isSafeInteger(hb.sentUnixMs) ? hb.sentUnixMs! : this.#now());
    if (Number.isSafeInteger(hb.sentUnixMs))
      this.#clockLag.set(id, Math.max(0, this.#now() - hb.sentUnixMs!));
    const known = this.#views.get(id);
    const joined = known === undefined || !this.isLive(id);
    const view: MemberView = known ?? {
      role,
      lastSeen: 0,
      examples: 0,
      head: new Uint8Array(0),
      height: 0,
      state: '',
    };
    view.lastSeen = this.#now();
    view.examples = role === 'site' && Number.isFinite(hb.examples) && hb.examples > 0 ? hb.examples : 0;
    view.head = hb.head;
    view.height = Number.isSafeInteger(hb.height) && hb.height >= 0 ? hb.height : 0;
    view.state = hb.state;
    this.#views.set(id, view);
    return { joined };
  }

  /**
   * Heartbeats expected and received so far, over every member (the two counters of the
   * heartbeat-loss ratio, docs/metrics.md). Per member, a span is a run of heartbeats whose
   * sender stamps are at most the liveness window apart (a longer silence ends the span: the
   * member was gone, not losing heartbeats); a span from stamp a to stamp b expects
   * `1 + round((b − a) / heartbeatMs)` heartbeats. Extra heartbeats (a site announces a catch-up
   * at once) count as received only up to what is expected, so both values only grow.
   *
   * @param heartbeatMs the members' heartbeat interval (`round.heartbeatMs`), > 0.
   */
  heartbeatCounts(heartbeatMs: number): { expected: number; received: number } {
    assertInteger('heartbeatMs', heartbeatMs, 1, Number.MAX_SAFE_INTEGER);
    let expected = 0;
    let received = 0;
    for (const b of this.#beats.values()) {
      const e = b.spans + Math.round(b.gapMs / heartbeatMs);
      expected += e;
      received += Math.min(b.received, e);
    }
    return { expected, received };
  }

  #countHeartbeat(id: string, stamp: number): void {
    const b = this.#beats.get(id);
    if (b === undefined) {
      this.#beats.set(id, { last: stamp, gapMs: 0, spans: 1, received: 1 });
      return;
    }
    const gap = stamp - b.last;
    if (gap > this.#window) b.spans++;
    else if (gap > 0) b.gapMs += gap;
    b.received++;
    b.last = Math.max(b.last, stamp);
  }

  /** A verified `switched`: the site is at `head` now. */
  switched(id: string, head: HeadRef): void {
    const view = this.#views.get(id);
    if (view === undefined) return;
    view.head = head.hash;
    view.height = head.height;
  }

  /** Heard from within the window, and not revoked. */
  isLive(id: string): boolean {
    const v = this.#views.get(id);
    return v !== undefined && this.#now() - v.lastSeen <= this.#window && !this.#revoked(id);
  }

  /** Members of `role` seen within the window, sorted. */
  live(role: MemberRoleName): string[] {
    const out: string[] = [];
    for (const [id, v] of this.#views) if (v.role === role && this.isLive(id)) out.push(id);
    return out.sort();
  }

  /** Whether the live site `id` reports `head`. */
  atHead(id: string, head: HeadRef): boolean {
    const v = this.#views.get(id);
    return v !== undefined && bytesEqual(v.head, head.hash);
  }

  /** Aggregators that may serve in a round: live and not excluded. Sorted. */
  usableAggregators(): string[] {
    return this.live('aggregator').filter((a) => !this.isExcluded(a));
  }

  /** Sites that may take part in a round on `head`: live, reporting `head`, not excluded. Sorted. */
  eligibleSites(head: HeadRef): string[] {
    return this.live('site').filter((s) => this.atHead(s, head) && !this.isExcluded(s));
  }

  /**
   * Readmits every excluded site that qualifies for round `round` on `head`; returns them, sorted.
   * When no live site at `head` is eligible at all, every excluded one that reports `head` is
   * readmitted whatever its sit-out: rounds count the sit-out, and none could run without them.
   */
  readmitQualified(head: HeadRef, round: number): string[] {
    const force = this.eligibleSites(head).length === 0;
    return this.excluded().filter((s) => this.readmit(s, head, round, force));
  }

  /**
   * Readmits every excluded aggregator whose sit-out is over and that is live (an aggregator holds
   * no head); when no aggregator is usable at all, every live excluded one, whatever its sit-out.
   */
  readmitAggregators(round: number): string[] {
    const force = this.usableAggregators().length === 0;
    return this.excluded().filter((id) => {
      const r = this.#exclusions.get(id)!;
      if (this.#roles.get(id) !== 'aggregator' || !this.isLive(id)) return false;
      if (!force && round < r.sinceRound + sitOutRounds(r.strikes) + 1) return false;
      this.#exclusions.set(id, { ...r, excluded: false });
      return true;
    });
  }

  isExcluded(site: string): boolean {
    return this.#exclusions.get(site)?.excluded === true;
  }

  /** Sites currently excluded, sorted. */
  excluded(): string[] {
    return [...this.#exclusions.values()]
      .filter((r) => r.excluded)
      .map((r) => r.site)
      .sort();
  }

  /** The exclusion table (records with strikes), sorted by site: what a decision records. */
  table(): ExclusionRecord[] {
    return [...this.#exclusions.values()].map((r) => ({ ...r })).sort((a, b) => (a.site < b.site ? -1 : 1));
  }

  /**
   * The table after round `round` (decided at head height `height`): every site in `offenders`
   * gains a strike and is excluded; every site in `credited` loses its record. Pure: apply it
   * with {@link adopt} once the decision is in the log.
   */
  nextTable(change: {
    offenders: readonly string[];
    credited: readonly string[];
    round: number;
    height: number;
  }): ExclusionRecord[] {
    const next = new Map(this.#exclusions);
    for (const site of change.credited) next.delete(site);
    for (const site of change.offenders) {
      const prior = next.get(site);
      next.set(site, {
        site,
        strikes: (prior?.strikes ?? 0) + 1,
        sinceRound: change.round,
        atHeight: change.height,
        excluded: true,
      });
    }
    return [...next.values()].sort((a, b) => (a.site < b.site ? -1 : 1));
  }

  /** Replaces the exclusion table (after a decision, or from the log at start). */
  adopt(table: readonly ExclusionRecord[]): void {
    this.#exclusions = new Map(
      table
        .filter((r) => this.#roles.get(r.site) === 'site' || this.#roles.get(r.site) === 'aggregator')
        .map((r) => [r.site, { ...r }]),
    );
  }

  /**
   * Readmits `site` when it qualifies for round `round` on `head` (`force`: whatever its sit-out);
   * true when it was readmitted now. Its strikes stay until a YES in a committed round.
   */
  readmit(site: string, head: HeadRef, round: number, force = false): boolean {
    const r = this.#exclusions.get(site);
    if (r === undefined || !r.excluded) return false;
    if (!this.isLive(site) || !this.atHead(site, head)) return false;
    if (!force && round < r.sinceRound + sitOutRounds(r.strikes) + 1) return false;
    this.#exclusions.set(site, { ...r, excluded: false });
    return true;
  }
}

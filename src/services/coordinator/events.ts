import type {
  Assignment,
  CryptoTimingObserver,
  CulpritRecord,
  EvaluationBody,
} from '../../protocol/index.ts';
import type { AdminControls } from './admin-control.ts';
import type { BreakerLevelName, BreakerState } from './circuit-breaker.ts';

/** Options of `startCoordinator`. */
export interface CoordinatorOptions {
  /**
   * The round to stop after (default `round.count`; 0: until stopped). Rounds are the log's: a
   * coordinator restarted on a log that ends at round 3 with `rounds: 5` runs rounds 4 and 5.
   */
  readonly rounds?: number;
  /**
   * Outlive runs (docs/admin-api.md): rounds open only inside a run, the start-up run is
   * `rounds` when given (none otherwise), and after a run the coordinator waits for the next one
   * started through `startRun` instead of ending; it ends on `stop`. Default false.
   */
  readonly idle?: boolean;
  /** Called for every event (membership, round steps, decisions, switches); errors it throws are ignored. */
  readonly onEvent?: (event: CoordinatorEvent) => void;
  /** Wait for partials this long after the round's deadline (default 2000 ms). */
  readonly graceMs?: number;
  /**
   * After a COMMIT, wait this long at most for the voters' `switched` before opening the next
   * round (sites not at the head sit a round out), and after the last round before ending
   * (default 2000 ms).
   */
  readonly switchWaitMs?: number;
  /**
   * How long to wait for another holder's lease to expire before giving up with `LEASE_HELD`
   * (default 2 × `history.leaseMs`: a coordinator restarted after a crash waits out the lease of
   * its dead predecessor, while a second one started beside a live coordinator gives up; a hot
   * standby passes a large value).
   */
  readonly leaseWaitMs?: number;
  /** Clock, ms since the epoch (default `Date.now`). */
  readonly now?: () => number;
  /**
   * Reports the signature verifications it runs (`partial` and the forwarded `site-update`
   * manifests of partials; `control` for heartbeats, votes and switches) and its CKKS work on
   * partials (`load`, `add`); e.g. `createCoordinatorMetrics(…).timings`. Nothing is timed without it.
   */
  readonly cryptoTimings?: CryptoTimingObserver;
}

/** What the coordinator reports as it goes. */
export type CoordinatorEvent =
  | { readonly type: 'started'; readonly round: number; readonly head: string; readonly height: number }
  | {
      readonly type: 'recovered';
      /** What the restart finished: an undecided round aborted, or the last decision re-announced. */
      readonly action: 'aborted-open-round' | 'reannounced';
      readonly round: number;
    }
  | {
      readonly type: 'member';
      readonly member: string;
      readonly role: MemberRoleName;
      readonly joined: boolean;
    }
  | { readonly type: 'excluded'; readonly member: string; readonly round: number; readonly reason: string }
  | { readonly type: 'readmitted'; readonly member: string }
  | {
      readonly type: 'round-open';
      readonly round: number;
      readonly assignments: readonly Assignment[];
      readonly clip: number;
      readonly totalExamples: number;
      readonly deadlineUnixMs: number;
    }
  | {
      readonly type: 'partial';
      readonly round: number;
      readonly aggregator: string;
      readonly sites: readonly string[];
    }
  | { readonly type: 'rejected'; readonly round: number; readonly from: string; readonly reason: string }
  | {
      readonly type: 'prepare';
      readonly round: number;
      readonly contributors: number;
      readonly aggregateDigest: string;
      readonly bytes: number;
    }
  | {
      readonly type: 'vote';
      readonly round: number;
      readonly member: string;
      readonly yes: boolean;
      /** With `yes` false: an abstention (the voter could not read what it needs), not a NO. */
      readonly abstain: boolean;
      readonly reason: string;
    }
  | { readonly type: 'decision'; readonly summary: RoundSummary }
  | {
      readonly type: 'switched';
      readonly round: number;
      readonly member: string;
      readonly latencyMs: number;
      readonly testAccuracy: number | undefined;
    }
  | { readonly type: 'snapshot'; readonly height: number; readonly site: string; readonly bytes: number }
  | { readonly type: 'rollback-requested'; readonly target: string; readonly height: number }
  | {
      /**
       * `plain` mode with a robust rule: the rule's aggregate of a round is stored (docs/security.md):
       * the sites whose updates it kept and left out, and how many the norm bound scaled down.
       */
      readonly type: 'robust';
      readonly round: number;
      readonly rule: string;
      readonly kept: readonly string[];
      readonly dropped: readonly string[];
      readonly clipped: number;
    }
  | {
      /** The privacy budget would not survive one more round: the run ends (docs/privacy.md). */
      readonly type: 'privacy-budget';
      readonly round: number;
      /** ε spent so far, and the budget. */
      readonly epsilon: number;
      readonly budget: number;
    }
  | {
      /** The circuit breaker changed level (docs/round-protocol.md, "Circuit breaker"). */
      readonly type: 'breaker';
      readonly from: BreakerLevelName;
      readonly to: BreakerLevelName;
      readonly reason: string;
      /** Failing share of the window, in [0, 1]. */
      readonly share: number;
      readonly round: number;
    };

export type MemberRoleName = 'site' | 'aggregator';

/** One decided round. */
export interface RoundSummary {
  readonly round: number;
  /** `round` (training) or `rollback`. */
  readonly kind: 'round' | 'rollback' | 'statistics';
  readonly commit: boolean;
  /** Why it aborted ('' on COMMIT). */
  readonly reason: string;
  /** Sites whose updates are in the aggregate. */
  readonly contributors: number;
  /** Sites assigned (m). */
  readonly participants: number;
  /** Hex commit hash on COMMIT. */
  readonly commitHash: string | undefined;
  readonly height: number;
  readonly logSequence: number;
  /** Bytes of the stored aggregate (0 without one). */
  readonly aggregateBytes: number;
  /** Bytes the sites sent this round (blocks and manifests, as reported in their votes). */
  readonly uploadBytes: number;
  /** From RoundOpen to the decision's publication. */
  readonly durationMs: number;
  /** Sites that voted NO (excluded until they catch up after a later commit). */
  readonly noVoters: readonly string[];
  /** Voters that did not vote in time (excluded like NO voters). */
  readonly missing: readonly string[];
  /**
   * COMMIT with federated evaluation: the participants' totals on their validation rows for the
   * round's base model (the parent commit), as the decision records them; null otherwise.
   */
  readonly evaluation: EvaluationBody | null;
  /** ABORT: the members found at fault, as the decision records them (docs/security.md, "Blame"). */
  readonly culprits: readonly CulpritRecord[];
}

/** What `CoordinatorHandle.done` resolves with. */
export interface CoordinatorSummary {
  /** The decided rounds of this run, the newest 256 of them (`RECENT_ROUND_SUMMARIES`); the log holds all. */
  readonly rounds: readonly RoundSummary[];
  /** COMMITs and ABORTs of this run, all of them. */
  readonly committed: number;
  readonly aborted: number;
  /** Head after the run: hex commit hash and height. */
  readonly head: string;
  readonly height: number;
  /** Decision publication → site `switchedUnixMs`, over this run's COMMITs (the newest 10,000 switches: `LATENCY_SAMPLES`). */
  readonly switchLatency: {
    readonly count: number;
    readonly p50Ms: number | undefined;
    readonly p99Ms: number | undefined;
  };
  /** Mean test accuracy reported (≥ 0) for the latest COMMIT that had any report. */
  readonly testAccuracy: number | undefined;
  /** True when `CoordinatorHandle.stop` ended the run early. */
  readonly stopped: boolean;
  /** With privacy: ε spent as of the head, δ, and whether the budget ended the run. */
  readonly privacy?: { readonly epsilon: number; readonly delta: number; readonly budgetSpent: boolean };
}

/** Live counters. */
export interface CoordinatorStats {
  readonly phase: 'starting' | 'waiting' | 'collecting' | 'sharing' | 'voting' | 'deciding' | 'done';
  readonly round: number;
  readonly head: string;
  readonly height: number;
  /** Sequence of the last log entry. */
  readonly logSequence: number;
  readonly liveSites: readonly string[];
  readonly liveAggregators: readonly string[];
  readonly excluded: readonly string[];
  readonly committed: number;
  readonly aborted: number;
  /** Refused heartbeats, partials, votes, switches, snapshots and requests, and transport drops. */
  readonly rejected: number;
  /** {@link rejected} by reason: a `CohortError` code (`BLOCK_OVERSIZE`, `VOTE_REFUSED`…) or a transport drop reason. */
  readonly rejectedByReason: Readonly<Record<string, number>>;
  /** Snapshots stored by this run. */
  readonly snapshots: number;
  /** Parameters of the federation's model (what a float32 update carries, 4 bytes each). */
  readonly parameters: number;
  /**
   * Heartbeats the live members should have sent so far, by their sender stamps and
   * `round.heartbeatMs` (see `Membership.heartbeatCounts`); grows only.
   */
  readonly heartbeatsExpected: number;
  /** Verified heartbeats received, at most {@link heartbeatsExpected}; grows only. */
  readonly heartbeatsReceived: number;
  /** The circuit breaker: level, failing share of its window, sites it leaves out. */
  readonly breaker: BreakerState;
  /** With differential privacy: ε spent as of the head (0 before the first private round) and the budget. */
  readonly privacy?: { readonly epsilon: number; readonly budget: number };
}

/** A running coordinator; its operator controls ({@link AdminControls}) serve the admin API. */
export interface CoordinatorHandle extends AdminControls {
  /**
   * Resolves after the last round (or stop); rejects when the log cannot be written or read, the
   * lease is lost, or the log is behind what members report (`LOG_BEHIND`).
   */
  readonly done: Promise<CoordinatorSummary>;
  /** Ends the run at the next wait point (an undecided round stays open in the log) and unsubscribes. */
  stop(): Promise<void>;
  stats(): CoordinatorStats;
  /**
   * Queues a rollback to `target` (a commit hash on the log's chain, below the head): the next
   * round is a rollback round decided by 2PC. Resolves with that round's number.
   */
  rollback(target: Uint8Array, reason?: string): Promise<number>;
}

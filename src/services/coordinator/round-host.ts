import type { ControlBodies } from '../../protocol/index.ts';
import type { PartialIntake, ShareContext } from '../../round/index.ts';
import type { MemberContext } from '../member-context.ts';
import type { WriteOnceObjects } from '../store/index.ts';
import type { ThresholdEpoch } from '../threshold-dealing.ts';
import type { BreakerTransition, CircuitBreaker, RoundOutcome } from './circuit-breaker.ts';
import type { CoordinatorLog } from './coordinator-log.ts';
import type { CoordinatorEvent, CoordinatorOptions, CoordinatorStats } from './events.ts';
import type { Membership } from './membership.ts';
import type { PrivacyBudget } from './privacy-budget.ts';
import type { SuspectSet } from './suspects.ts';
import type { SwitchTracker } from './switch-tracker.ts';

/** The round in progress, as the message handlers see it. */
export interface ActiveRound {
  readonly round: number;
  /** The RoundOpen's attempt id: votes must name it. */
  readonly attempt: Uint8Array;
  /** Training rounds: the partials' intake (closed once PREPARE is out). */
  readonly intake: PartialIntake | undefined;
  phase: 'collecting' | 'sharing' | 'voting' | 'decided';
  /**
   * Threshold keys: the share request published for the round (its context and the signed bytes),
   * and each decrypting site's verified share bundle as received.
   */
  shareRequest?: { readonly context: ShareContext; readonly bytes: Uint8Array };
  readonly shares: Map<string, Uint8Array>;
  /** Votes of any site for this round (only the round's voters count). */
  readonly votes: Map<string, ControlBodies['vote']>;
  /** Each vote's framed envelope exactly as received (logged as evidence before the decision). */
  readonly envelopes: Map<string, Uint8Array>;
}

/** A round without partials (rollback, or one decided without its intake), already collecting votes. */
export function votingRound(round: number, attempt: Uint8Array): ActiveRound {
  return {
    round,
    attempt,
    intake: undefined,
    phase: 'voting',
    shares: new Map(),
    votes: new Map(),
    envelopes: new Map(),
  };
}

/** What a round needs from the coordinator that runs it (a narrow view of its state). */
export interface RoundHost {
  readonly ctx: MemberContext;
  readonly options: CoordinatorOptions;
  readonly now: () => number;
  readonly membership: Membership;
  readonly switches: SwitchTracker;
  readonly log: CoordinatorLog;
  /** Parameters of the federation's model. */
  readonly parameterCount: number;
  /**
   * Lanes every training update carries: the parameters' (more than `parameterCount` with
   * differential privacy), then the RMS histogram (`UpdatePlan.requiredLanes`).
   */
  readonly requiredLanes: number;
  /** Differential privacy: the plan, what is spent, the gate before each round. */
  readonly budget: PrivacyBudget;
  /** Lanes of every site's update in a training round: the parameters, then the evaluation lanes. */
  readonly updateLength: number;
  /** The clip of the next training round (adapted after each commit). */
  clip: number;
  /** The round the handlers route partials and votes to. */
  current: ActiveRound | undefined;
  stopping(): boolean;
  setPhase(phase: CoordinatorStats['phase']): void;
  emit(event: CoordinatorEvent): void;
  /** Waits until `condition` holds, the deadline passes or the coordinator stops (see the service). */
  until(condition: () => boolean, deadline: number): Promise<boolean>;
  /**
   * The write-once stream of aggregates (`COHORT_<F>_AGGREGATES`, created or checked on first use
   * with `history.replicas`): each round's aggregate, a robust round's Δ̄, a culprit's evidence.
   */
  aggregates(): Promise<WriteOnceObjects>;
  /**
   * Creates (once) the write-once stream where aggregators keep the site updates they sum
   * (`COHORT_<F>_CONTRIBUTIONS`, `history.updateRetentionMs`), so aggregators only ever write to it.
   */
  ensureUpdatesStore(): Promise<void>;
  /** Sites suspected of spoiling aggregates with a wrong tag, narrowed round by round. */
  readonly suspects: SuspectSet;
  /**
   * Threshold keys (`crypto.keys: threshold`): the key epoch (roster, threshold, id) loaded and
   * checked at start; undefined with a shared key.
   */
  readonly threshold: ThresholdEpoch | undefined;
  /** Threshold keys: sites of the roster that sent no shares when asked, with the round. */
  readonly silentDecrypters: Map<string, number>;
  /** The circuit breaker: its level shapes a round's cohort and optional work. */
  readonly breaker: CircuitBreaker;
  /** Logs and announces a level change (nothing for undefined). */
  breakerChanged(change: BreakerTransition | undefined): void;
  /**
   * A decided round's sites for the breaker: `expected` its cohort and voters, `failing` those
   * whose update the aggregate lacks, that voted NO or did not vote. The host adds the sites
   * that are gone (seen before, not live now) to both.
   */
  roundDecided(outcome: RoundOutcome): void;
}

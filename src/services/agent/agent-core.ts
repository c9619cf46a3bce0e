import type { LaneKeyset } from '../../../crypto/lanes/index.ts';
import type { AggregateMacKey } from '../../../crypto/mac/index.ts';
import type { ModelSpec, ServerStrategy } from '../../../federation/index.ts';
import type { Dataset, TrainingEngine } from '../../../gpu/index.ts';
import type { SiteConfig } from '../../config/index.ts';
import type { SiteData } from '../../data/index.ts';
import type { CryptoTimingObserver, Evaluation } from '../../protocol/index.ts';
import type { LoggedEpoch } from '../../round/index.ts';
import type { ExternalTrainer } from '../../trainer/index.ts';
import type { Commit, ModelStore } from '../../versions/index.ts';
import type { SharedLogReads } from '../federation-log/index.ts';
import type { MemberContext } from '../member-context.ts';
import type { SiteThreshold } from '../site-threshold.ts';
import type { AgentStateMachine } from './agent-state.ts';
import type { LogFollower } from './log-follower.ts';
import type { EvaluationState } from './site-evaluation.ts';

/** Options of `startAgent`. */
export interface AgentOptions {
  /** Evaluate every committed model on the MNIST test set (`learning.testLimit` rows) and report it. */
  readonly evaluate?: boolean;
  /**
   * Log entries this site shares with the other sites of its process (a swarm): each entry is
   * read and checked once, and a decision's entry is folded into the site's log view before it
   * switches (one event loop serves every site). None by default: a site reads its log itself.
   */
  readonly sharedLogReads?: SharedLogReads;
  /**
   * Tests: the CKKS keyset to use instead of unwrapping `<keysDir>/<member>.ckks.env`, or a function
   * returning it (one that throws acts like a key that cannot be loaded). The agent does not free
   * a keyset it was given.
   */
  readonly keysetOverride?: LaneKeyset | (() => LaneKeyset);
  /**
   * Tests: the aggregate-MAC key to use instead of the one derived from the data key (a site whose
   * key differs from every other site's: the tags it writes and the checks it makes are wrong).
   * The agent does not wipe a key it was given.
   */
  readonly macKeyOverride?: AggregateMacKey;
  /** Tests: a training engine to use instead of the one `learning.engine` names (freed on stop). */
  readonly engine?: TrainingEngine;
  /**
   * The site's own configuration (`cohort agent --site-config`): the agent trains on the files it
   * names, checked against the federation's data contract (`data`) before anything else is
   * loaded; a violation stops the start. Without it: the site's IID share of MNIST.
   */
  readonly siteConfig?: SiteConfig;
  /**
   * `siteConfig`'s data, already read and checked (`loadContractData`): the CLI does that before it
   * connects to NATS, so a violation never reaches the federation. Only with `siteConfig`.
   */
  readonly siteData?: SiteData;
  /**
   * Reports the CKKS `encrypt` of each block of its updates and the `decrypt` of each block of the
   * aggregates it decrypts; e.g. `createSiteMetrics(…).timings`. Nothing is timed without it.
   */
  readonly cryptoTimings?: CryptoTimingObserver;
  /**
   * Whether the site may join from a snapshot (default true). False: it never reads one, and a new
   * or far-behind store replays every commit from its head or genesis, checking each against the
   * log (what `npm run bench -- history` measures as replay; a site that wants to have rebuilt
   * every version itself).
   */
  readonly snapshots?: boolean;
}

/** The agent's last vote. */
export interface AgentVote {
  readonly round: number;
  readonly yes: boolean;
  readonly reason: string;
  /** Hex of the voted commit hash ('' for NO). */
  readonly commitHash: string;
}

/** Counters of a running agent. */
export interface AgentStats {
  /** n_k: rows of this site's shard. */
  readonly examples: number;
  /** Why the CKKS key could not be loaded, or null. */
  readonly keysetError: string | null;
  readonly roundsTrained: number;
  /** Rounds whose training was cut at the deadline (the partial result was sent). */
  readonly trainingCut: number;
  readonly updatesSent: number;
  readonly blocksSent: number;
  /** RoundOpens naming this site that it skipped (wrong base, no key, busy, deadline). */
  readonly roundsSkipped: number;
  /** RoundOpens and PREPAREs refused as replays (a decided round, another attempt). */
  readonly replaysRefused: number;
  /**
   * Threshold keys: re-sharing requests refused (a roster, committee or threshold the federation
   * does not allow, a deadline passed, a deal that could not be made or collected).
   */
  readonly epochRequestsRefused: number;
  /** Threshold keys: complaints sent about a dealer whose envelope did not open. */
  readonly complaintsSent: number;
  readonly votesYes: number;
  readonly votesNo: number;
  /** Abstentions: votes neither YES nor NO, sent when the log or a store did not answer in time. */
  readonly abstentions: number;
  /** Rounds taken up from the log because their RoundOpen broadcast never arrived here. */
  readonly roundsFromLog: number;
  readonly commits: number;
  readonly aborts: number;
  /** Commits applied by replaying the log (catch-up), and snapshots joined from. */
  readonly replayed: number;
  readonly snapshotsJoined: number;
  /** Snapshots this site wrote and the coordinator acknowledged. */
  readonly snapshotsWritten: number;
  /** Residuals made current by a commit that included this site's update / dropped (abort, cut). */
  readonly residualsApplied: number;
  readonly residualsDropped: number;
  readonly lastVote: AgentVote | null;
  /** Test accuracy of the last committed model (evaluating agents), else null. */
  readonly lastTestAccuracy: number | null;
  /** Own evaluations of a round's base model this site put in its update (federated evaluation). */
  readonly evaluationsSent: number;
  /**
   * The last 32 of them, oldest first: the model (commit hash, hex) and this site's own figures on
   * its validation rows (what it sent, encrypted, in the evaluation lanes).
   */
  readonly ownEvaluations: readonly { readonly model: string; readonly evaluation: Evaluation }[];
  /** Why the agent halted (a replayed model that does not hash to the log's), or null. */
  readonly fatal: string | null;
  /** With differential privacy: ε and δ spent as of this site's head, by its own count (else null). */
  readonly privacy: { readonly epsilon: number; readonly delta: number } | null;
}

/** Mutable counters behind {@link AgentStats}. */
export type AgentCounters = { -readonly [K in keyof AgentStats]: AgentStats[K] };

/**
 * What the agent's steps share: the member's context and everything loaded at start. One object,
 * owned by the service; each step module reads and updates it from the agent's single queue, so
 * no two steps run at once.
 */
export interface AgentCore {
  readonly ctx: MemberContext;
  readonly options: AgentOptions;
  readonly member: string;
  readonly machine: AgentStateMachine;
  readonly strategy: ServerStrategy;
  readonly spec: ModelSpec;
  readonly genesis: { readonly commit: Commit; readonly parameters: Float32Array };
  /** The site's training rows as loaded (checked against the data contract). */
  readonly shard: Dataset;
  /**
   * n_k: the site's FedAvg weight, announced in heartbeats and pinned in RoundOpen. The training
   * rows' count, or what the site's own trainer process reports (it reads its own rows).
   */
  readonly examples: number;
  /** The site's own trainer process (site configuration `trainer`), or null: the engine trains. */
  readonly trainer: ExternalTrainer | null;
  /** The site's validation rows (a site configuration with a `validation` section), else null. */
  readonly validation: Dataset | null;
  /** The site's own configuration (`AgentOptions.siteConfig`, validated), else null. */
  readonly siteConfig: SiteConfig | null;
  /** Index of the site in `members.sites` (its shuffle stream). */
  readonly siteIndex: number;
  readonly store: ModelStore;
  readonly follower: LogFollower;
  readonly counters: AgentCounters;
  engine: TrainingEngine | null;
  testSet: Dataset | null;
  keyset: LaneKeyset | null;
  keysetError: string | null;
  /**
   * Threshold keys (`crypto.keys: threshold`): the site's key material, position ledger and
   * keyset ({@link keyset} is its keyset); null with a shared key.
   */
  threshold: SiteThreshold | null;
  /**
   * Threshold keys: the key ceremony's epoch (roster and id; public), in force until the log holds
   * a re-sharing; null with a shared key or when it cannot be read.
   */
  readonly thresholdGenesis: LoggedEpoch | null;
  /** Threshold keys: re-sharing requests answered and acknowledged (`<generation>:<roster seed>:<phase>`). */
  readonly epochAnswers: Set<string>;
  /**
   * Threshold keys: the data key of every re-shared epoch this site was in, by epoch id (hex); the
   * key ceremony's epoch uses {@link dataKey}. See `dataKeyAt`.
   */
  readonly epochDataKeys: Map<string, Uint8Array>;
  /** The aggregate MAC key of each data key in use, by epoch id (hex; '' for {@link dataKey}). */
  readonly macKeys: Map<string, AggregateMacKey>;
  /** The federation data key (snapshots), or null when this site has none. */
  dataKey: Uint8Array | null;
  /**
   * The aggregate MAC's key, derived from the data key (`AggregateMacKey.fromDataKey`): tags this
   * site's updates and checks every aggregate it decrypts. Null without a data key: the site then
   * neither trains nor votes YES.
   */
  macKey: AggregateMacKey | null;
  /** The contributors' median update RMS of the round prepared, for its YES vote (`medianRmsOf`). */
  preparedRms: { readonly round: number; readonly rms: number } | null;
  /** The round whose candidate is prepared (state PREPARED), else null. */
  preparedRound: number | null;
  /** This site's update in the current round: RMS and bytes for its vote, digest for the residual. */
  /**
   * The update this site last delivered (every block and the manifest acknowledged): its round,
   * RMS, bytes, digest, the aggregator it went to and the other sites assigned there.
   */
  lastUpdate: {
    round: number;
    rms: number;
    bytes: number;
    digest: Uint8Array;
    aggregator: string;
    peers: readonly string[];
    /** Its aggregator's signed receipt of it (framed), or null when none valid came back. */
    receipt: Uint8Array | null;
  } | null;
  /** Measured time of the last upload, ms (the next round leaves that much before its deadline). */
  lastUploadMs: number;
  /** Federated evaluation: this site's own last evaluation and the totals of the prepared round. */
  evaluation: EvaluationState;
}

// The bodies of the federation log's records (`LogRecord` in cohort.proto), as protobufjs decodes
// them: what `log-record` control messages carry (docs/log-format.md).
import type { ControlBodies } from './control.ts';
import type { Evaluation } from './evaluation-lanes.ts';
import type { Contributor, Encoding } from './messages.ts';

/** How a stored aggregate decodes into the round's mean update (a Decision's `aggregate`). */
export interface AggregateInfo {
  encoding: Encoding;
  totalParams: number;
  /** Sites summed and their update digests, sorted by site. */
  contributors: Contributor[];
  /** W = Σ n_k of the contributors. */
  totalWeight: number;
  /** m announced in RoundOpen. */
  participants: number;
  /** N announced in RoundOpen. */
  totalExamples: number;
  /** Object-store name of the aggregate. */
  object: string;
  objectBytes: number;
}

/** One site's exclusion record (a Decision carries the whole table). */
export interface ExclusionRecord {
  site: string;
  /** Offences in a row. */
  strikes: number;
  /** Round of the last offence. */
  sinceRound: number;
  /** Head height when excluded: readmission needs a later head. */
  atHeight: number;
  /** Still left out of rounds (false: readmitted, strikes remembered). */
  excluded: boolean;
}

/**
 * Totals of a federated evaluation (cohort.proto `Evaluation`): the {@link Evaluation} of the model
 * `model` (a commit hash), summed over the round's participants.
 */
export interface EvaluationBody extends Evaluation {
  model: Uint8Array;
}

/** A round's outcome as the log records it (fields as in cohort.proto `Decision`). */
export interface DecisionBody {
  federation: string;
  round: number;
  commit: boolean;
  commitHash: Uint8Array;
  modelHash: Uint8Array;
  parent: Uint8Array;
  height: number;
  aggregateDigest: Uint8Array;
  voters: string[];
  reason: string;
  kind: string;
  params: Uint8Array;
  aggregate: AggregateInfo | null;
  rollbackTarget: Uint8Array;
  stateHash: Uint8Array;
  missing: string[];
  exclusions: ExclusionRecord[];
  nextClip: number;
  /** The RoundOpen's attempt (empty for a round never opened). */
  attempt: Uint8Array;
  /** COMMIT of a round with evaluation lanes: the participants' evaluation of `parent`; else null. */
  evaluation: EvaluationBody | null;
  /** ABORT: the members found at fault (struck instead of the voters), sorted by member. */
  culprits: CulpritRecord[];
}

/**
 * A member found at fault for a round's failure (cohort.proto `Culprit`). `fault` is a stable code:
 * `PARTIAL_NOT_SUM` (an aggregator's signed partial is not the sum of the contributions it lists;
 * `evidence` names the stored partial), `CONTRIBUTION_NOT_STORED` (an aggregator listed a
 * contribution it did not keep, or kept another), `ISOLATED` (a site left alone in the
 * intersection of the contributors of rounds whose aggregate only a contribution could spoil),
 * `SHARES_INVALID` (threshold keys: a decrypting site whose signed share bundle more than half of
 * the voters could not open).
 */
export interface CulpritRecord {
  member: string;
  role: 'aggregator' | 'site';
  fault: string;
  detail: string;
  evidence: string;
}

/** A stored snapshot (cohort.proto `SnapshotRecord`). */
export interface SnapshotRecordBody {
  commitHash: Uint8Array;
  height: number;
  object: string;
  digest: Uint8Array;
  bytes: number;
  site: string;
}

/**
 * A registry change signed by the registry officer (cohort.proto `RegistryChange`): `body` is the
 * exact `RegistryChangeBody` bytes the signature covers (see `src/registry`).
 */
export interface RegistryChangeRecord {
  body: Uint8Array;
  officerKeyId: string;
  signature: Uint8Array;
}

/**
 * An operator's action through the admin API (cohort.proto `AdminAction`), logged by the
 * coordinator before it acts. `caller` is the bearer token's configured id, never the token.
 */
export interface AdminActionBody {
  /** Stable action name (`runs.start`, `versions.rollback`, `sites.enroll`…). */
  action: string;
  caller: string;
  /** The scope the route requires. */
  scope: string;
  /** What it acts on (a run id, a round, a commit hash, a member id); '' for none. */
  target: string;
  /** Canonical JSON bytes of the request's validated arguments. */
  arguments: Uint8Array;
  /** The API's clock when it accepted the request, ms since the epoch. */
  unixMs: number;
}

/**
 * A partial aggregate the coordinator accepted (cohort.proto `PartialRecord`): the aggregator-signed
 * manifest frame exactly as received, which lists the sites summed and carries each one's own
 * signed manifest. Logged before PREPARE, as evidence for the audit.
 */
export interface PartialRecordBody {
  round: number;
  /** The RoundOpen's attempt. */
  attempt: Uint8Array;
  /** The manifest's signer. */
  aggregator: string;
  /** The framed `UpdateManifest` (frame kind manifest). */
  manifest: Uint8Array;
}

/**
 * A vote the coordinator counted (cohort.proto `VoteRecord`): the member's framed vote envelope
 * exactly as received. Logged before the decision, as evidence for the audit.
 */
export interface VoteRecordBody {
  round: number;
  /** The RoundOpen's attempt. */
  attempt: Uint8Array;
  /** The voter (the envelope's signer). */
  member: string;
  /** The framed `SignedEnvelope` of type `vote`. */
  envelope: Uint8Array;
}

/** One vote of a {@link VoteBatchBody} (cohort.proto `BatchedVote`). */
export interface BatchedVote {
  /** The voter (the envelope's signer). */
  member: string;
  /** The framed `SignedEnvelope` of type `vote`, exactly as received. */
  envelope: Uint8Array;
}

/**
 * Votes the coordinator counted, several in one log entry (cohort.proto `VoteBatch`): one
 * coordinator signature and one log read per batch instead of per vote. Each vote is evidence
 * exactly as a {@link VoteRecordBody} of the same round, attempt, member and envelope would be.
 * Logged before the decision, in the decision's `voters` order; at least one vote.
 */
export interface VoteBatchBody {
  round: number;
  /** The RoundOpen's attempt. */
  attempt: Uint8Array;
  votes: BatchedVote[];
}

/** A site of a threshold key epoch's roster and its Shamir evaluation point (cohort.proto `EpochSite`). */
export interface EpochSiteBody {
  id: string;
  point: number;
  /** A key holder: every roster site deals it a share; `threshold` holders decrypt. */
  holds: boolean;
}

/**
 * Threshold keys: a re-shared key epoch, in force from `fromRound` (cohort.proto
 * `ThresholdEpochRecord`). `readies` are the roster sites' signed EpochReady control messages for
 * `epochId`, in roster order; `publicShareDigests` the SHA-256 of each stored public share.
 */
export interface ThresholdEpochBody {
  generation: number;
  epochId: Uint8Array;
  paramsId: Uint8Array;
  threshold: number;
  sites: EpochSiteBody[];
  fromRound: number;
  readies: Uint8Array[];
  publicShareDigests: Uint8Array[];
}

/**
 * What a log entry holds: exactly one of `roundOpen`, `decision`, `snapshot`, `registryChange`,
 * `adminAction`, `partial`, `vote`, `votes`, `thresholdEpoch` (named by `record`). The coordinator now logs votes as
 * `votes`; `vote` (one per entry) is what earlier coordinators wrote, and is still read.
 */
export type LogRecordKind =
  | 'roundOpen'
  | 'decision'
  | 'snapshot'
  | 'registryChange'
  | 'adminAction'
  | 'partial'
  | 'vote'
  | 'votes'
  | 'thresholdEpoch';

/** One federation log entry (cohort.proto `LogRecord`). */
export interface LogRecordBody {
  federation: string;
  /** JetStream sequence of the entry. */
  sequence: number;
  /** SHA-256 of the previous entry's stored bytes (32 zero bytes for sequence 1). */
  previousEntry: Uint8Array;
  unixMs: number;
  /** Which member of the oneof is set. */
  record?: LogRecordKind;
  roundOpen?: ControlBodies['round-open'] | null;
  decision?: DecisionBody | null;
  snapshot?: SnapshotRecordBody | null;
  registryChange?: RegistryChangeRecord | null;
  adminAction?: AdminActionBody | null;
  partial?: PartialRecordBody | null;
  vote?: VoteRecordBody | null;
  votes?: VoteBatchBody | null;
  thresholdEpoch?: ThresholdEpochBody | null;
}

import { InvalidArgumentError } from '../errors/index.ts';

/** A subject token: no dots, wildcards, whitespace or control characters; 1-128 characters. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Throws `INVALID_ARGUMENT` naming `name` unless `value` is a safe single NATS subject token
 * (letters, digits, `-` and `_`; so no `.`, `*`, `>` or spaces).
 */
export function assertSubjectToken(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !TOKEN_PATTERN.test(value)) {
    throw new InvalidArgumentError(
      `${name} must be 1-128 characters of A-Z, a-z, 0-9, "-" and "_" (a single NATS subject token), got ${JSON.stringify(String(value))}`,
      { details: { name, value: String(value) } },
    );
  }
}

/**
 * The subject layout of one federation. Every subject lives under `cohort.<federation>.` and
 * names its sender where permissions depend on it (a site may publish only its own subjects).
 */
export interface FederationSubjects {
  readonly federation: string;
  /** `cohort.F.>`: everything of the federation. */
  readonly all: string;
  /** `cohort.F.round.open`: the coordinator's signed RoundOpen. */
  readonly roundOpen: string;
  /** `cohort.F.update.<aggregator>.<site>`: a site's update blocks, sent to its aggregator. */
  update(aggregator: string, site: string): string;
  /** `cohort.F.update.<aggregator>.>`: every update addressed to one aggregator. */
  updatesFor(aggregator: string): string;
  /** `cohort.F.partial.<aggregator>`: an aggregator's partial aggregate, sent to its parent. */
  partial(aggregator: string): string;
  /**
   * `cohort.F.subpartial.<parent>.<child>`: a child aggregator's partial aggregate, sent to its
   * parent aggregator (an aggregation tree deeper than one level, RoundOpen's `parents`).
   */
  subpartial(parent: string, child: string): string;
  /** `cohort.F.subpartial.<parent>.*`: every child's partial addressed to one aggregator. */
  subpartialsFor(parent: string): string;
  /** `cohort.F.prepare`: the 2PC PREPARE broadcast. */
  readonly prepare: string;
  /** `cohort.F.vote.<site>`: a site's signed 2PC vote. */
  vote(site: string): string;
  /**
   * `cohort.F.share-request`: threshold keys only; the coordinator names a round's decrypting set
   * and asks its sites for their decryption shares of the stored aggregate.
   */
  readonly shareRequest: string;
  /** `cohort.F.share.<site>`: a decrypting site's signed, sealed share bundle (a request to the coordinator). */
  share(site: string): string;
  /**
   * `cohort.F.epoch-request`: threshold keys only; the coordinator asks the new roster's sites to
   * deal, then to collect, a re-shared key epoch.
   */
  readonly epochRequest: string;
  /** `cohort.F.epoch.<site>`: a site's signed deal or ready of a re-sharing (a request to the coordinator). */
  epoch(site: string): string;
  /** `cohort.F.decision`: the COMMIT / ABORT broadcast. */
  readonly decision: string;
  /** `cohort.F.heartbeat.<member>`: liveness of a site or aggregator. */
  heartbeat(member: string): string;
  /** `cohort.F.switched.<site>`: a site reports it switched to the committed model. */
  switched(site: string): string;
  /** `cohort.F.log`: subject of the JetStream stream holding the signed, hash-chained federation log. */
  readonly log: string;
  /** `COHORT_<F upper-cased>`: the JetStream stream of the log. */
  readonly logStream: string;
  /**
   * `COHORT_<F>_AGGREGATES`: the write-once stream of each round's aggregate, a robust round's Δ̄
   * and a culprit partial's evidence (docs/log-format.md, "Aggregates and snapshots"); only the
   * coordinator writes it.
   */
  readonly aggregatesStream: string;
  /** `cohort.F.aggregate.>`: every subject of the aggregates stream. */
  readonly aggregates: string;
  /**
   * `cohort.F.aggregate.<object>.<frame>`: frame `frame` of object `object` of the aggregates
   * stream (0 its header, 1… its bytes); `object` is one token of 1-255 characters of A-Z, a-z,
   * 0-9, `-` and `_` (`round-<r>`, `round-<r>-robust`, `round-<r>-partial-<aggregator>`).
   */
  aggregateFrame(object: string, frame: number): string;
  /**
   * `cohort-F-aggregates`: the object store that held the aggregates before the write-once stream
   * ({@link aggregatesStream}) replaced it; no member writes or reads it any more.
   */
  readonly legacyAggregatesBucket: string;
  /**
   * `cohort-F-updates`: the object store where aggregators kept the site updates they summed
   * before the contributions stream ({@link contributionsStream}) replaced it; no member writes or
   * reads it any more.
   */
  readonly updatesBucket: string;
  /**
   * `COHORT_<F>_CONTRIBUTIONS`: the JetStream stream where each aggregator keeps the site updates it
   * sums, for the audit (docs/log-format.md, "Contributions"): one message a frame, write-once.
   */
  readonly contributionsStream: string;
  /** `cohort.F.contribution.>`: every subject of the contributions stream. */
  readonly contributions: string;
  /** `cohort.F.contribution.<aggregator>.>`: the contributions one aggregator may write. */
  contributionsOf(aggregator: string): string;
  /**
   * `cohort.F.contribution.<aggregator>.<round>.<attempt>.<site>.<frame>`: frame `frame` (0 the
   * site's manifest, then its blocks in block-index order) of the update `site` sent for `round`
   * (its opening `attempt`, lowercase hex), as `aggregator` summed it.
   */
  contributionFrame(aggregator: string, round: number, attempt: string, site: string, frame: number): string;
  /** `cohort.F.contribution.<aggregator>.<round>.<attempt>.<site>.*`: every frame of one contribution. */
  contributionFrames(aggregator: string, round: number, attempt: string, site: string): string;
  /**
   * `COHORT_<F>_SNAPSHOTS`: the write-once stream of encrypted model snapshots (docs/log-format.md,
   * "Aggregates and snapshots"); only the coordinator writes it, from its scheduled writer's offer.
   */
  readonly snapshotsStream: string;
  /** `cohort.F.snapshot-store.>`: every subject of the snapshots stream. */
  readonly snapshotStore: string;
  /**
   * `cohort.F.snapshot-store.<object>.<frame>`: frame `frame` of snapshot object `object`
   * (`height-<h>-<site>-<digest prefix>`; 0 its header, 1… its bytes).
   */
  snapshotFrame(object: string, frame: number): string;
  /**
   * `cohort-F-snapshots`: the object store that held the snapshots before the write-once stream
   * ({@link snapshotsStream}) replaced it; no member writes or reads it any more.
   */
  readonly legacySnapshotsBucket: string;
  /** `cohort-F-lease`: KV bucket of the coordinator's lease. */
  readonly leaseBucket: string;
  /** `cohort.F.snapshot.<site>`: a site hands the coordinator a snapshot to store. */
  snapshot(site: string): string;
  /** `cohort.F.admin.rollback`: an operator asks the coordinator to roll back. */
  readonly rollbackRequest: string;
  /** `cohort.F.admin.registry`: an operator sends the coordinator an officer-signed registry change. */
  readonly registryRequest: string;
  /** `cohort.F.registry`: the coordinator announces each registry change it logged (the log entry). */
  readonly registry: string;
  /** `_INBOX.F.<member>`: the reply-inbox prefix of one member's connection. */
  inboxPrefix(member: string): string;
}

/** Prefix of an object store's stream name (as `@nats-io/obj` and every NATS client name it). */
export const OBJECT_STREAM_PREFIX = 'OBJ_';

const BUCKET_RE = /^[A-Za-z0-9_-]{1,200}$/;
const STREAM_RE = /^[A-Za-z0-9_-]{1,255}$/;

/**
 * The stream that holds object store `bucket`: `OBJ_<bucket>`. Throws `INVALID_ARGUMENT` when
 * `bucket` is not a valid bucket name (1-200 characters of A-Z, a-z, 0-9, `_`, `-`).
 */
export function objectStreamName(bucket: string): string {
  if (typeof bucket !== 'string' || !BUCKET_RE.test(bucket)) {
    throw new InvalidArgumentError(
      `bucket must be 1-200 characters of A-Z, a-z, 0-9, _ and -, got ${JSON.stringify(String(bucket))}`,
      { details: { name: 'bucket', value: String(bucket) } },
    );
  }
  return `${OBJECT_STREAM_PREFIX}${bucket}`;
}

/**
 * The JetStream API subjects a read-only client of `stream` must be allowed to publish to:
 * `$JS.API.STREAM.INFO.<stream>` and `$JS.API.STREAM.MSG.GET.<stream>` (plus subscribe on its own
 * reply inbox). With only these, a user can read any message of the stream but cannot create
 * consumers, publish, delete, purge or list other streams. Throws `INVALID_ARGUMENT` for a name
 * with `.`, wildcards or spaces.
 */
export function readOnlyStreamSubjects(stream: string): string[] {
  if (typeof stream !== 'string' || !STREAM_RE.test(stream)) {
    throw new InvalidArgumentError(
      `stream must be 1-255 characters of A-Z, a-z, 0-9, _ and -, got ${JSON.stringify(String(stream))}`,
      { details: { name: 'stream', value: String(stream) } },
    );
  }
  return [`$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.MSG.GET.${stream}`];
}

const ATTEMPT_HEX_RE = /^[0-9a-f]{2,128}$/;
const OBJECT_TOKEN_RE = /^[A-Za-z0-9_-]{1,255}$/;

/**
 * Throws `INVALID_ARGUMENT` unless `object` can name an object of a write-once stream: one subject
 * token of 1-255 characters of A-Z, a-z, 0-9, `-` and `_`.
 */
export function assertObjectToken(name: string, object: unknown): asserts object is string {
  if (typeof object !== 'string' || !OBJECT_TOKEN_RE.test(object)) {
    throw new InvalidArgumentError(
      `${name} must be 1-255 characters of A-Z, a-z, 0-9, "-" and "_" (one subject token), got ${JSON.stringify(String(object).slice(0, 300))}`,
      { details: { name } },
    );
  }
}

/** `<prefix>.<object>.<frame>`, both validated. */
function objectFrameSubject(prefix: string, object: string, frame: number): string {
  assertObjectToken('object', object);
  if (!Number.isSafeInteger(frame) || frame < 0) {
    throw new InvalidArgumentError(`frame must be a non-negative integer, got ${String(frame)}`, {
      details: { name: 'frame', value: String(frame) },
    });
  }
  return `${prefix}.${object}.${frame}`;
}

/** The round, attempt and site tokens of a contribution subject, validated. */
function contributionTokens(aggregator: string, round: number, attempt: string, site: string): string {
  assertSubjectToken('aggregator', aggregator);
  if (!Number.isSafeInteger(round) || round < 1) {
    throw new InvalidArgumentError(`round must be a positive integer, got ${String(round)}`, {
      details: { name: 'round', value: String(round) },
    });
  }
  if (typeof attempt !== 'string' || !ATTEMPT_HEX_RE.test(attempt)) {
    throw new InvalidArgumentError('attempt must be 1-64 bytes as lowercase hex', {
      details: { name: 'attempt' },
    });
  }
  assertSubjectToken('site', site);
  return `${aggregator}.${round}.${attempt}.${site}`;
}

/** Builds the {@link FederationSubjects} of `federation`; every token passed in is validated. */
export function federationSubjects(federation: string): FederationSubjects {
  assertSubjectToken('federation', federation);
  const base = `cohort.${federation}`;
  const logStream = `COHORT_${federation.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}`;
  return Object.freeze({
    federation,
    all: `${base}.>`,
    roundOpen: `${base}.round.open`,
    update(aggregator: string, site: string): string {
      assertSubjectToken('aggregator', aggregator);
      assertSubjectToken('site', site);
      return `${base}.update.${aggregator}.${site}`;
    },
    updatesFor(aggregator: string): string {
      assertSubjectToken('aggregator', aggregator);
      return `${base}.update.${aggregator}.>`;
    },
    partial(aggregator: string): string {
      assertSubjectToken('aggregator', aggregator);
      return `${base}.partial.${aggregator}`;
    },
    subpartial(parent: string, child: string): string {
      assertSubjectToken('parent', parent);
      assertSubjectToken('child', child);
      return `${base}.subpartial.${parent}.${child}`;
    },
    subpartialsFor(parent: string): string {
      assertSubjectToken('parent', parent);
      return `${base}.subpartial.${parent}.*`;
    },
    prepare: `${base}.prepare`,
    vote(site: string): string {
      assertSubjectToken('site', site);
      return `${base}.vote.${site}`;
    },
    shareRequest: `${base}.share-request`,
    share(site: string): string {
      assertSubjectToken('site', site);
      return `${base}.share.${site}`;
    },
    epochRequest: `${base}.epoch-request`,
    epoch(site: string): string {
      assertSubjectToken('site', site);
      return `${base}.epoch.${site}`;
    },
    decision: `${base}.decision`,
    heartbeat(member: string): string {
      assertSubjectToken('member', member);
      return `${base}.heartbeat.${member}`;
    },
    switched(site: string): string {
      assertSubjectToken('site', site);
      return `${base}.switched.${site}`;
    },
    log: `${base}.log`,
    logStream,
    aggregatesStream: `${logStream}_AGGREGATES`,
    aggregates: `${base}.aggregate.>`,
    aggregateFrame(object: string, frame: number): string {
      return objectFrameSubject(`${base}.aggregate`, object, frame);
    },
    legacyAggregatesBucket: `cohort-${federation}-aggregates`,
    updatesBucket: `cohort-${federation}-updates`,
    contributionsStream: `${logStream}_CONTRIBUTIONS`,
    contributions: `${base}.contribution.>`,
    contributionsOf(aggregator: string): string {
      assertSubjectToken('aggregator', aggregator);
      return `${base}.contribution.${aggregator}.>`;
    },
    contributionFrame(
      aggregator: string,
      round: number,
      attempt: string,
      site: string,
      frame: number,
    ): string {
      if (!Number.isSafeInteger(frame) || frame < 0) {
        throw new InvalidArgumentError(`frame must be a non-negative integer, got ${String(frame)}`, {
          details: { name: 'frame', value: String(frame) },
        });
      }
      return `${base}.contribution.${contributionTokens(aggregator, round, attempt, site)}.${frame}`;
    },
    contributionFrames(aggregator: string, round: number, attempt: string, site: string): string {
      return `${base}.contribution.${contributionTokens(aggregator, round, attempt, site)}.*`;
    },
    snapshotsStream: `${logStream}_SNAPSHOTS`,
    snapshotStore: `${base}.snapshot-store.>`,
    snapshotFrame(object: string, frame: number): string {
      return objectFrameSubject(`${base}.snapshot-store`, object, frame);
    },
    legacySnapshotsBucket: `cohort-${federation}-snapshots`,
    leaseBucket: `cohort-${federation}-lease`,
    snapshot(site: string): string {
      assertSubjectToken('site', site);
      return `${base}.snapshot.${site}`;
    },
    rollbackRequest: `${base}.admin.rollback`,
    registryRequest: `${base}.admin.registry`,
    registry: `${base}.registry`,
    inboxPrefix(member: string): string {
      assertSubjectToken('member', member);
      return `_INBOX.${federation}.${member}`;
    },
  });
}

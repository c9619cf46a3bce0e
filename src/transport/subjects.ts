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
  /** `cohort.F.prepare`: the 2PC PREPARE broadcast. */
  readonly prepare: string;
  /** `cohort.F.vote.<site>`: a site's signed 2PC vote. */
  vote(site: string): string;
  /** `cohort.F.decision`: the COMMIT / ABORT broadcast. */
  readonly decision: string;
  /** `cohort.F.heartbeat.<member>`: liveness of a site or aggregator. */
  heartbeat(member: string): string;
  /** `cohort.F.switched.<site>`: a site reports it switched to the committed model. */
  switched(site: string): string;
  /** `cohort.F.log`: subject of the JetStream stream holding the signed decision log. */
  readonly log: string;
  /** `_INBOX.F.<member>`: the reply-inbox prefix of one member's connection. */
  inboxPrefix(member: string): string;
}

/** Builds the {@link FederationSubjects} of `federation`; every token passed in is validated. */
export function federationSubjects(federation: string): FederationSubjects {
  assertSubjectToken('federation', federation);
  const base = `cohort.${federation}`;
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
    prepare: `${base}.prepare`,
    vote(site: string): string {
      assertSubjectToken('site', site);
      return `${base}.vote.${site}`;
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
    inboxPrefix(member: string): string {
      assertSubjectToken('member', member);
      return `_INBOX.${federation}.${member}`;
    },
  });
}

// JSON schemas of the admin API's bodies, queries and answers (docs/admin-api.md). Every object
// is closed (`additionalProperties: false`): a request with an unknown field is a 400 naming it,
// and an answer never carries a field its schema does not list.

const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const num = { type: 'number' } as const;
const bool = { type: 'boolean' } as const;
const nullable = <T extends object>(schema: T) => ({ ...schema, nullable: true }) as const;
const strings = { type: 'array', items: str } as const;

/** A closed object whose listed properties are all required. */
export function closed<P extends Record<string, object>>(properties: P) {
  return {
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties),
    properties,
  } as const;
}

/** Lowercase hex of a SHA-256 hash. */
export const HASH = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;

/** A commit reference as `cohort versions` takes it. */
export const REF = {
  type: 'string',
  pattern: '^(HEAD(~[0-9]{1,9})?|@[0-9]{1,15}|[0-9a-fA-F]{4,64})$',
  description:
    'a commit hash (whole, or a unique prefix of at least 4 hex digits), HEAD, HEAD~n or @<height>',
} as const;

/** A positive decimal integer in a path or query (no type coercion: they arrive as text). */
export const COUNT_TEXT = { type: 'string', pattern: '^[1-9][0-9]{0,14}$' } as const;

/** An operator's reason (recorded in the log). */
export const REASON = { type: 'string', maxLength: 256 } as const;

/** The officer-signed registry change, base64 of the `RegistryChange` bytes `cohort registry` signs. */
export const REGISTRY_CHANGE_BODY = closed({
  change: {
    type: 'string',
    minLength: 4,
    maxLength: 22_000,
    pattern: '^[A-Za-z0-9+/]+={0,2}$',
    description: 'base64 of the officer-signed RegistryChange (cohort.proto), at most 16 KiB decoded',
  },
});

/** A registry change the coordinator queued. */
export const QUEUED_CHANGE = closed({
  queued: bool,
  kind: { type: 'string', enum: ['enroll', 'rotate', 'revoke'] },
  member: str,
  fromRound: int,
  actionSequence: { ...int, description: 'log sequence of the admin-action record' },
});

/** One decided round as the coordinator summarized it. */
export const ROUND_SUMMARY = closed({
  round: int,
  kind: { type: 'string', enum: ['round', 'rollback', 'statistics'] },
  commit: bool,
  reason: str,
  contributors: int,
  participants: int,
  commitHash: nullable(str),
  height: int,
  logSequence: int,
  aggregateBytes: int,
  uploadBytes: int,
  durationMs: num,
  noVoters: strings,
  missing: strings,
});

/** A training run. */
export const RUN = closed({
  id: str,
  label: str,
  rounds: nullable(int),
  untilRound: nullable(int),
  state: { type: 'string', enum: ['running', 'stopping', 'completed', 'stopped'] },
  startedBy: str,
  startedUnixMs: int,
  stoppedBy: nullable(str),
  endedUnixMs: nullable(int),
  decided: int,
  committed: int,
  aborted: int,
});

/** A run with its rounds, their contributors and timings. */
export const RUN_DETAIL = closed({
  ...RUN.properties,
  rounds: nullable(int),
  durationMs: nullable(num),
  roundsDecided: {
    description: 'The newest 256 decided rounds of the run (`decided` counts all of them).',
    type: 'array',
    items: closed({ ...ROUND_SUMMARY.properties, contributorSites: strings }),
  },
});

/** A configured site or aggregator. */
export const MEMBER = closed({
  id: str,
  role: { type: 'string', enum: ['site', 'aggregator'] },
  live: bool,
  excluded: bool,
  revoked: bool,
  lastSeenUnixMs: nullable(int),
  head: nullable(str),
  height: nullable(int),
  state: nullable(str),
  lastContribution: nullable(closed({ round: int, height: int, commitHash: str, unixMs: int })),
});

/** A round as the log holds it (decided, or the one open). */
export const LOGGED_ROUND = closed({
  round: int,
  kind: str,
  status: { type: 'string', enum: ['open', 'commit', 'abort'] },
  reason: str,
  baseHeight: int,
  height: int,
  commitHash: nullable(str),
  participants: strings,
  contributors: strings,
  voters: strings,
  missing: strings,
  openSequence: int,
  sequence: nullable(int),
  deadlineUnixMs: int,
  decidedUnixMs: nullable(int),
  evaluation: nullable({
    ...closed({ model: str, examples: int, correct: int, lossSum: num }),
    description:
      "a COMMIT's federated evaluation: the participants' totals on their validation rows for the model the round started from (`model`); accuracy = correct / examples, mean loss = lossSum / examples",
  }),
});

/** {@link LOGGED_ROUND} with its timings (`GET /v1/rounds`). */
export const TIMED_ROUND = closed({
  ...LOGGED_ROUND.properties,
  openedUnixMs: { ...int, description: 'log time of its RoundOpen, ms since the epoch' },
  durationMs: nullable({ ...int, description: 'RoundOpen to decision, ms (null while open)' }),
});

/** {@link TIMED_ROUND} with who was assigned where and what was summed (`GET /v1/rounds/{round}`). */
export const ROUND_DETAIL = closed({
  ...TIMED_ROUND.properties,
  assignments: {
    type: 'array',
    description:
      "the RoundOpen's assignments: each participant, its aggregator and its pinned example weight, and where that aggregator sends its partial",
    items: closed({
      site: str,
      aggregator: str,
      examples: int,
      aggregatorParent: {
        ...str,
        description:
          "the aggregator's parent in the round's aggregation tree (RoundOpen's parents); '' for the coordinator (always, at one level)",
      },
    }),
  },
  contributions: { type: 'array', items: closed({ site: str, digest: HASH, weight: num }) },
});

const CONTRIBUTOR = closed({ site: str, digest: str, weight: num });

/** `cohort versions log --json`'s commit object (`CommitJson`). */
export const COMMIT = closed({
  hash: str,
  height: int,
  round: int,
  kind: str,
  parent: str,
  modelHash: str,
  stateHash: nullable(str),
  aggregateDigest: str,
  contributors: { type: 'array', items: CONTRIBUTOR },
  voters: strings,
  missing: strings,
  sequence: nullable(int),
  unixMs: nullable(int),
  rollbackTarget: nullable(str),
  rollbackTargetHeight: nullable(int),
});

/** `cohort versions log --all --json`'s ABORT object (`AbortJson`). */
export const ABORT = closed({
  kind: { type: 'string', enum: ['abort'] },
  round: int,
  reason: str,
  parent: str,
  height: int,
  voters: strings,
  missing: strings,
  sequence: int,
  unixMs: int,
  rollbackTarget: nullable(str),
});

/** `cohort versions show --json` (`ShowJson`). */
export const COMMIT_DETAIL = closed({
  ...COMMIT.properties,
  params: nullable({
    type: 'object',
    additionalProperties: false,
    required: ['round', 'bits', 'clip', 'strategy', 'learningRate'],
    properties: { round: int, bits: int, clip: num, strategy: str, learningRate: num, dataContract: str },
  }),
  paramsHex: str,
  statistics: nullable(
    closed({ rows: int, mean: { type: 'array', items: num }, std: { type: 'array', items: num } }),
  ),
  aggregate: nullable(
    closed({ object: str, objectBytes: int, totalWeight: num, participants: int, totalExamples: num }),
  ),
  exclusions: {
    type: 'array',
    items: closed({ site: str, strikes: int, sinceRound: int, atHeight: int, excluded: bool }),
  },
  nextClip: nullable(num),
  snapshots: {
    type: 'array',
    items: closed({ sequence: int, unixMs: int, object: str, digest: str, bytes: int, site: str }),
  },
  evaluation: nullable(
    closed({
      model: str,
      examples: int,
      correct: int,
      lossSum: num,
      classes: int,
      confusion: { type: 'array', items: int },
    }),
  ),
});

/** `GET /v1/status`. */
export const STATUS = closed({
  federation: str,
  phase: str,
  round: int,
  head: str,
  height: int,
  logSequence: int,
  sites: closed({ configured: int, live: strings, excluded: strings, revoked: strings }),
  aggregators: closed({ configured: int, live: strings }),
  committed: int,
  aborted: int,
  rejected: int,
  snapshots: int,
  breaker: closed({
    enabled: bool,
    level: { type: 'integer', minimum: 0, maximum: 3 },
    state: { type: 'string', enum: ['closed', 'shrink', 'drop-optional', 'frozen'] },
    share: { ...num, description: 'failing or late site-rounds over expected ones in the window, 0..1' },
    rounds: int,
    failing: { ...strings, description: 'sites that failed in the window: left out of rounds from level 1' },
    probing: bool,
    changedUnixMs: nullable(int),
    probeUnixMs: { ...nullable(int), description: 'frozen: when the probe round may open' },
  }),
  run: nullable(RUN),
  privacy: {
    ...nullable(closed({ epsilon: num, budget: num })),
    description:
      'differential privacy: ε spent as of the head and the budget (docs/privacy.md); null without',
  },
  aggregation: {
    ...nullable(closed({ mode: { type: 'string', enum: ['he', 'plain'] }, rule: nullable(str) })),
    description:
      'federation.mode, and the robust rule of federation.aggregation (null: FedAvg of the sum; docs/security.md)',
  },
  lastRounds: { type: 'array', items: LOGGED_ROUND },
});

/** Answer of a queued rollback. */
export const ROLLBACK_QUEUED = closed({
  queued: bool,
  target: HASH,
  height: int,
  actionSequence: int,
});

/** Answer of an abort request. */
export const ABORT_REQUESTED = closed({ round: int, aborting: bool, actionSequence: int });

/** A binary download. */
export const BINARY = { type: 'string', format: 'binary' } as const;

/** `GET /v1/whoami`: the presented token's id and scopes. */
export const WHOAMI = closed({
  tokenId: str,
  scopes: { type: 'array', items: { type: 'string', enum: ['admin', 'operator', 'auditor'] } },
});

const AUDIT_FINDING = closed({ sequence: int, code: str, message: str });

/** `GET /v1/audit/verify`: the summary of an audit of the live log (`verifyAudit`, src/audit). */
export const AUDIT_VERIFIED = closed({
  verified: { ...bool, description: 'no problem, and the audit is complete' },
  federation: str,
  registry: { ...str, description: 'SHA-256 of the trusted member registry' },
  genesis: str,
  head: closed({ hash: str, height: int, sequence: int }),
  entries: int,
  lastEntry: nullable(closed({ sequence: int, hash: str })),
  historyThrough: int,
  checked: {
    type: 'object',
    description:
      'how many of each check the audit made (`AuditCheckCounts` of src/audit: signatures, links, historyRules, commitHashes, aggregates…)',
    additionalProperties: int,
  },
  problemCount: int,
  problems: { type: 'array', description: 'the first 100', items: AUDIT_FINDING },
  uncheckedCount: int,
  unchecked: { type: 'array', description: 'the first 100', items: AUDIT_FINDING },
  rounds: {
    type: 'array',
    description: 'decided rounds as the audit saw them, the last 1000',
    items: closed({
      round: int,
      sequence: int,
      outcome: { type: 'string', enum: ['commit', 'abort'] },
      kind: nullable(str),
      commit: nullable(str),
      height: int,
      aggregate: { type: 'string', enum: ['verified', 'problem', 'unchecked', 'none'] },
    }),
  },
  aggregatesSkipped: bool,
  startedUnixMs: int,
  durationMs: int,
});

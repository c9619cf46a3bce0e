import protobuf from 'protobufjs';
import {
  type PublicSigningKey,
  SIGNATURE_ALGORITHM_IDS,
  type SigningKeyPair,
  sign,
  verify,
} from '../../crypto/signature/index.ts';
import { BlockRejectedError } from '../errors/index.ts';
import type { KeyLookup } from './block-verifier.ts';
import type { EpochSiteBody, EvaluationBody, LogRecordBody } from './log-record-bodies.ts';
import { type Contributor, type Encoding, PROTO_PATH } from './messages.ts';
import { FRAME_KIND, frame, unframe } from './wire-frame.ts';

const root = protobuf.loadSync(PROTO_PATH);
const Envelope = root.lookupType('cohort.v1.SignedEnvelope');

/** A site's assigned aggregator for a round. */
export interface Assignment {
  site: string;
  aggregator: string;
  /** The site's example weight, pinned for the round: its update must declare exactly this. */
  examples: number;
}

/**
 * One aggregator's place in a round's aggregation tree (cohort.proto `TreeLink`, RoundOpen's
 * `parents`): whom it sends its partial to (`parent`, '' for the coordinator) and by when.
 */
export interface TreeLink {
  aggregator: string;
  /** The parent aggregator; '' when it sends its partial to the coordinator. */
  parent: string;
  /** It sends its partial by then at the latest (ms since the epoch); later than each child's. */
  deadlineUnixMs: number;
}

/** Bytes of a round attempt id (random, fresh for every RoundOpen). */
export const ATTEMPT_BYTES = 16;

/** Bodies of the control messages (fields as in cohort.proto, camelCased; uint64 as number). */
export interface ControlBodies {
  'round-open': {
    federation: string;
    round: number;
    version: number;
    baseCommit: Uint8Array;
    assignments: Assignment[];
    bits: number;
    clip: number;
    maxContributors: number;
    crcChunkBytes: number;
    deadlineUnixMs: number;
    totalExamples: number;
    /** Parameters of every update of the round (the model's size), pinned. */
    totalParams: number;
    /** {@link ATTEMPT_BYTES} random bytes naming this opening of the round. */
    attempt: Uint8Array;
    /**
     * '' (or 'round'): sites train and send model updates; 'statistics': sites send the sums of
     * their training rows' features (federated standardization), no model update. Decoded
     * messages always carry it ('' when unset).
     */
    kind?: string;
    /**
     * An aggregation tree deeper than one level: every aggregator of the round with its parent and
     * deadline (see `RoundTree`). Empty or absent: one level, every aggregator sends its partial to
     * the coordinator by `deadlineUnixMs`. Decoded messages always carry it ([] when unset), and a
     * RoundOpen without it serializes byte-identically to one written before trees existed.
     */
    parents?: TreeLink[];
    /**
     * Threshold keys: the id of the key epoch the round's updates are encrypted under (the one in
     * force at the round, from the log); absent under shared keys. Decoded messages carry an
     * empty array when unset.
     */
    epochId?: Uint8Array;
  };
  prepare: {
    federation: string;
    round: number;
    version: number;
    baseCommit: Uint8Array;
    aggregateDigest: Uint8Array;
    contributors: Contributor[];
    totalWeight: number;
    participants: number;
    totalExamples: number;
    encoding: Encoding;
    totalParams: number;
    ciphertexts: Uint8Array[];
    params: Uint8Array;
    /** Commit kind the round proposes: 'round' (also when empty), 'rollback' or 'statistics'. */
    kind: string;
    /** Rollback: the earlier commit whose model the new commit restores (empty otherwise). */
    rollbackTarget: Uint8Array;
    /**
     * A large aggregate travels by reference: `ciphertexts` is empty and sites read this object
     * of the aggregates store (its SHA-256 is `aggregateDigest`); '' when inline.
     */
    aggregateObject: string;
    /** The RoundOpen's attempt. */
    attempt: Uint8Array;
  };
  vote: {
    federation: string;
    round: number;
    member: string;
    yes: boolean;
    commitHash: Uint8Array;
    modelHash: Uint8Array;
    reason: string;
    meanUpdateRms: number;
    bytesSent: number;
    /** YES: `strategyStateHash` of the strategy state after the candidate (empty for NO). */
    stateHash: Uint8Array;
    /** The RoundOpen's attempt. */
    attempt: Uint8Array;
    /** YES in a round with evaluation lanes: the totals this voter decrypted; else null. */
    evaluation: EvaluationBody | null;
    /**
     * YES to a statistics PREPARE: the commit params (the decrypted feature sums); else empty.
     * Decoded messages always carry it.
     */
    params?: Uint8Array;
    /**
     * NO because this site's update is missing from the aggregate: the framed {@link ControlBodies}
     * `receipt` its aggregator signed for it (empty otherwise). Decoded messages always carry it.
     */
    receipt?: Uint8Array;
    /**
     * With `yes` false: an abstention, not an objection. The voter could not read what it needs
     * (the log, a stored aggregate or shares: a store that did not answer in time), so it neither
     * vouches for the candidate nor finds fault with it. The round can still commit on the other
     * voters' YES, and the abstainer is not struck. Decoded messages always carry it.
     */
    abstain?: boolean;
  };
  /** An aggregator's receipt of a site's whole update (the answer to the request that completed it). */
  receipt: {
    federation: string;
    round: number;
    attempt: Uint8Array;
    aggregator: string;
    site: string;
    updateDigest: Uint8Array;
    exampleWeight: number;
  };
  'log-record': LogRecordBody;
  'rollback-request': {
    federation: string;
    /** Hash of a commit on the log's chain. */
    target: Uint8Array;
    requestedUnixMs: number;
    reason: string;
  };
  heartbeat: {
    federation: string;
    member: string;
    role: string;
    sentUnixMs: number;
    head: Uint8Array;
    examples: number;
    state: string;
    /** Height of `head`. */
    height: number;
  };
  /** Threshold keys: the decrypting set asked for its shares of a stored aggregate (cohort.proto `ShareRequest`). */
  'share-request': {
    federation: string;
    round: number;
    attempt: Uint8Array;
    epochId: Uint8Array;
    aggregateDigest: Uint8Array;
    blocks: number;
    /** Sorted. */
    contributors: string[];
    /** Sorted by site. */
    decrypting: { site: string; point: number }[];
    minContributors: number;
    aggregateObject: string;
  };
  /** Threshold keys: a re-sharing of the key epoch, phase `deal` or `collect` (cohort.proto `EpochRequest`). */
  'epoch-request': {
    federation: string;
    generation: number;
    paramsId: Uint8Array;
    threshold: number;
    sites: EpochSiteBody[];
    phase: string;
    fromRound: number;
    deadlineUnixMs: number;
  };
  /** Threshold keys: a site's deal of one generation (cohort.proto `EpochDeal`). */
  'epoch-deal': {
    federation: string;
    generation: number;
    site: string;
    publicShare: Uint8Array;
    envelopes: { recipient: string; envelope: Uint8Array }[];
  };
  /** Threshold keys: a site holds its key material of the epoch (cohort.proto `EpochReady`). */
  'epoch-ready': {
    federation: string;
    generation: number;
    site: string;
    epochId: Uint8Array;
    /** The round the epoch applies from: a ready held back and logged later does not fit. */
    fromRound: number;
    /** HMAC-SHA-256 of the epoch id under the epoch's data key (`dataKeyConfirmation`): the same for every roster site. */
    keyConfirmation: Uint8Array;
  };
  /** Threshold keys: a site cannot collect because of a dealer's envelope (cohort.proto `EpochComplaint`). */
  'epoch-complaint': {
    federation: string;
    generation: number;
    site: string;
    dealer: string;
    reason: string;
    fromRound: number;
  };
  switched: {
    federation: string;
    round: number;
    member: string;
    commitHash: Uint8Array;
    switchedUnixMs: number;
    testAccuracy: number;
  };
}

/** The control message kinds. */
export type ControlType = keyof ControlBodies;

const TYPE_NAMES: Record<ControlType, string> = {
  'round-open': 'cohort.v1.RoundOpen',
  prepare: 'cohort.v1.Prepare',
  vote: 'cohort.v1.Vote',
  receipt: 'cohort.v1.Receipt',
  heartbeat: 'cohort.v1.Heartbeat',
  switched: 'cohort.v1.Switched',
  'share-request': 'cohort.v1.ShareRequest',
  'epoch-request': 'cohort.v1.EpochRequest',
  'epoch-deal': 'cohort.v1.EpochDeal',
  'epoch-ready': 'cohort.v1.EpochReady',
  'epoch-complaint': 'cohort.v1.EpochComplaint',
  'log-record': 'cohort.v1.LogRecord',
  'rollback-request': 'cohort.v1.RollbackRequest',
};
const TYPES = Object.fromEntries(
  Object.entries(TYPE_NAMES).map(([k, v]) => [k, root.lookupType(v)]),
) as Record<ControlType, protobuf.Type>;

/**
 * Largest framed control message of each type, in bytes: a message above its type's cap is
 * refused (`OVERSIZE`) before its envelope is decoded or its signature checked. A heartbeat, vote
 * or `switched` is a few hundred bytes plus a signature (ML-DSA-65: 3,309 bytes); RoundOpen grows
 * with its assignments (about 100 bytes a site); PREPARE carries an aggregate inline up to 8 MiB
 * and decisions (log records) the exclusion table.
 */
export const CONTROL_MAX_BYTES: Readonly<Record<ControlType, number>> = Object.freeze({
  heartbeat: 8 * 1024,
  // A NO vote may carry its aggregator's receipt (a signature of its own).
  vote: 16 * 1024,
  receipt: 8 * 1024,
  switched: 8 * 1024,
  'rollback-request': 8 * 1024,
  // Grows with the contributors and the decrypting set (about 100 bytes a site).
  'share-request': 4 * 1024 * 1024,
  'epoch-request': 4 * 1024 * 1024,
  'epoch-ready': 8 * 1024,
  'epoch-complaint': 8 * 1024,
  // One sealed share (about 123 KiB at N = 8192) per roster site: up to 1,024 sites.
  'epoch-deal': 160 * 1024 * 1024,
  'round-open': 4 * 1024 * 1024,
  prepare: 16 * 1024 * 1024,
  'log-record': 16 * 1024 * 1024,
});

/** Options of {@link openControl}. */
export interface OpenControlOptions {
  /**
   * The only signer accepted (the member the subject names, or the coordinator): any other is
   * `WRONG_SIGNER` before the signature is checked.
   */
  readonly signer?: string;
  /** Cap in bytes of the framed message; default {@link CONTROL_MAX_BYTES} of its type. */
  readonly maxBytes?: number;
  /**
   * Called after the lattice verification (not when a cheaper check refused first), with its
   * duration in milliseconds and whether it verified; for metrics. Errors it throws are ignored.
   */
  readonly onSignatureVerified?: (ms: number, ok: boolean) => void;
}

/** Signature domain of a control message type. */
export function controlDomain(type: ControlType): string {
  return `control.${type}`;
}

/** Serializes `body`, signs the exact bytes under the type's domain, and frames the envelope. */
export function sealControl<T extends ControlType>(
  type: T,
  body: ControlBodies[T],
  signer: string,
  key: SigningKeyPair,
): Uint8Array {
  const T = TYPES[type];
  const bytes = T.encode(T.fromObject(body)).finish();
  const envelope = Envelope.fromObject({
    type,
    body: bytes,
    signer,
    signerKeyId: key.keyId,
    signatureAlgorithm: SIGNATURE_ALGORITHM_IDS[key.algorithm],
    signature: sign(key, controlDomain(type), bytes),
  });
  return frame(FRAME_KIND.control, Envelope.encode(envelope).finish());
}

/** A verified control message. */
export interface OpenedControl<T extends ControlType> {
  readonly type: T;
  readonly signer: string;
  readonly body: ControlBodies[T];
  /**
   * The exact body bytes the signature covers: what identifies the message (an envelope may carry
   * fields the signature does not cover, so its bytes can differ for one signed message).
   */
  readonly signedBody: Uint8Array;
}

/**
 * Checks the size against the type's cap (`OVERSIZE`), unframes, checks the envelope's type is
 * `expected` and its signer is `options.signer` when given (`WRONG_SIGNER`), looks the signer's key
 * up (`WRONG_SIGNER` when unknown or a different key id), verifies the signature over the exact
 * body bytes (`BAD_SIGNATURE`) and decodes the body (`MALFORMED`): cheapest first. Context checks
 * (federation, round) are the caller's, who knows what it expects.
 */
export function openControl<T extends ControlType>(
  bytes: Uint8Array,
  expected: T,
  keys: KeyLookup,
  options: OpenControlOptions = {},
): OpenedControl<T> {
  const env = openEnvelope(bytes, expected, options.maxBytes ?? CONTROL_MAX_BYTES[expected]);
  if (options.signer !== undefined && env.signer !== options.signer) {
    throw new BlockRejectedError(
      'WRONG_SIGNER',
      `${expected} signed by ${JSON.stringify(env.signer)}, only ${JSON.stringify(options.signer)} may send it here`,
    );
  }
  const key: PublicSigningKey | undefined = keys(env.signer);
  if (
    !key ||
    key.keyId !== env.signerKeyId ||
    SIGNATURE_ALGORITHM_IDS[key.algorithm] !== env.signatureAlgorithm
  ) {
    throw new BlockRejectedError(
      'WRONG_SIGNER',
      `${expected} from ${JSON.stringify(env.signer)}: unknown signer or key`,
    );
  }
  const started = options.onSignatureVerified === undefined ? 0 : performance.now();
  const ok = verify(key, controlDomain(expected), env.body, env.signature);
  if (options.onSignatureVerified !== undefined) {
    try {
      options.onSignatureVerified(performance.now() - started, ok);
    } catch {
      // an observer must not change what is verified
    }
  }
  if (!ok) {
    throw new BlockRejectedError(
      'BAD_SIGNATURE',
      `${expected} from ${JSON.stringify(env.signer)} does not verify`,
    );
  }
  return { type: expected, signer: env.signer, body: decodeBody(expected, env.body), signedBody: env.body };
}

/** A control message decoded without its signature checked (see {@link readControl}). */
export interface UnverifiedControl<T extends ControlType> {
  readonly type: T;
  readonly signer: string;
  readonly signerKeyId: string;
  readonly signatureAlgorithm: number;
  readonly body: ControlBodies[T];
}

/**
 * Decodes a framed control message of type `expected` WITHOUT checking its signature: only for
 * bytes another verified signature already covers (a vote inside a coordinator-signed log record,
 * read by a reader that holds no member keys). Size cap, frame, envelope type and body as in
 * {@link openControl}; `MALFORMED`/`OVERSIZE`/`TRUNCATED` otherwise.
 */
export function readControl<T extends ControlType>(bytes: Uint8Array, expected: T): UnverifiedControl<T> {
  const env = openEnvelope(bytes, expected, CONTROL_MAX_BYTES[expected]);
  return {
    type: expected,
    signer: env.signer,
    signerKeyId: env.signerKeyId,
    signatureAlgorithm: env.signatureAlgorithm,
    body: decodeBody(expected, env.body),
  };
}

/**
 * The type a framed control message of at most `maxBytes` says it is, unverified (undefined when
 * larger, or not a control message): for a subject that takes more than one type. Open it with
 * {@link openControl} for that type before trusting anything in it.
 */
export function controlTypeOf(bytes: Uint8Array, maxBytes: number): string | undefined {
  if (!(bytes instanceof Uint8Array) || bytes.length > maxBytes) return undefined;
  try {
    return (decode(Envelope, unframe(bytes, FRAME_KIND.control)) as unknown as DecodedEnvelope).type;
  } catch {
    return undefined;
  }
}

/** A decoded `SignedEnvelope`: its fields as protobufjs gives them. */
interface DecodedEnvelope {
  readonly type: string;
  readonly body: Uint8Array;
  readonly signer: string;
  readonly signerKeyId: string;
  readonly signatureAlgorithm: number;
  readonly signature: Uint8Array;
}

/** Size cap (`OVERSIZE`), frame, envelope, and the envelope's type (`MALFORMED`): nothing verified yet. */
function openEnvelope(bytes: Uint8Array, expected: ControlType, cap: number): DecodedEnvelope {
  if (bytes instanceof Uint8Array && bytes.length > cap) {
    throw new BlockRejectedError('OVERSIZE', `${expected} of ${bytes.length} bytes, at most ${cap}`);
  }
  const env = decode(Envelope, unframe(bytes, FRAME_KIND.control)) as unknown as DecodedEnvelope;
  if (env.type !== expected) {
    throw new BlockRejectedError(
      'MALFORMED',
      `control message is ${JSON.stringify(env.type)}, expected ${expected}`,
    );
  }
  // protobufjs gives an absent bytes field as an empty array: hostile input, not a caller's bug.
  for (const field of ['body', 'signature'] as const) {
    const value = (env as unknown as Record<string, unknown>)[field];
    if (!(value instanceof Uint8Array) || value.length === 0) {
      throw new BlockRejectedError('MALFORMED', `control message without its ${field}`);
    }
  }
  return env;
}

/** The body of a control message of type `expected` as a plain object (`MALFORMED` when it does not decode). */
function decodeBody<T extends ControlType>(expected: T, bytes: Uint8Array): ControlBodies[T] {
  const T = TYPES[expected];
  return T.toObject(decode(T, bytes), {
    longs: Number,
    defaults: true,
    arrays: true,
    oneofs: true,
  }) as ControlBodies[T];
}

function decode(type: protobuf.Type, bytes: Uint8Array): protobuf.Message {
  try {
    return type.decode(bytes);
  } catch (cause) {
    throw new BlockRejectedError('MALFORMED', `not a ${type.name}: ${(cause as Error).message}`, { cause });
  }
}

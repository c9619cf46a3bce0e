import { jetstream } from '@nats-io/jetstream';
import { type ObjectStore, Objm, StorageType } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { LaneContext } from '../../../crypto/lanes/index.ts';
import type { PublicSigningKey, SignatureAlgorithm } from '../../../crypto/signature/index.ts';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import {
  BlockVerifier,
  type Contributor,
  type ControlBodies,
  type Encoding,
  maxBlockFrameBytes,
  type VerifiedUpdate,
} from '../../protocol/index.ts';
import { federationSubjects } from '../../transport/index.ts';
import { bytesToHex } from '../../versions/index.ts';

/**
 * The object store where aggregators keep every site update they sum, for the audit
 * (docs/log-format.md, "Contributions"): `cohort-<F>-updates`, stream `OBJ_cohort-<F>-updates`.
 * Sites may not read it (DESIGN §10: updates stay off sites' subjects); auditors may. The name is
 * `FederationSubjects.updatesBucket` (one definition, shared with the NATS permissions).
 */
export function updatesBucketName(federation: string): string {
  if (typeof federation !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(federation)) {
    throw new InvalidArgumentError('federation must be a federation id', { details: { name: 'federation' } });
  }
  return federationSubjects(federation).updatesBucket;
}

/**
 * Object name of the update `site` sent for `round` (its opening `attempt`): `round-<r>/<attempt
 * hex>/<site>`. An aborted round's attempt and its replay never share a name.
 */
export function contributionObjectName(round: number, attempt: Uint8Array, site: string): string {
  assertInteger('round', round, 1, Number.MAX_SAFE_INTEGER);
  if (!(attempt instanceof Uint8Array) || attempt.length === 0 || attempt.length > 64) {
    throw new InvalidArgumentError('attempt must be 1-64 bytes', { details: { name: 'attempt' } });
  }
  if (typeof site !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(site)) {
    throw new InvalidArgumentError('site must be a member id', { details: { name: 'site' } });
  }
  return `round-${round}/${bytesToHex(attempt)}/${site}`;
}

/** A stored contribution: the site's framed, signed manifest and its framed blocks, as received. */
export interface StoredContribution {
  readonly manifest: Uint8Array;
  /** Framed ParameterBlocks in block-index order. */
  readonly blocks: readonly Uint8Array[];
}

/**
 * The bytes of a stored contribution: `u32(1 + blocks) ‖ (u32(length) ‖ frame)*` (big-endian), the
 * manifest frame first, then the block frames in block-index order, each exactly as the site sent it.
 */
export function encodeContribution(c: StoredContribution): Uint8Array {
  const frames = [c.manifest, ...c.blocks];
  let total = 4;
  for (const f of frames) total += 4 + f.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, frames.length, false);
  let at = 4;
  for (const f of frames) {
    view.setUint32(at, f.length, false);
    out.set(f, at + 4);
    at += 4 + f.length;
  }
  return out;
}

/** Inverse of {@link encodeContribution}; `INVALID_ARGUMENT` for bytes that are not one. */
export function decodeContribution(bytes: Uint8Array): StoredContribution {
  if (!(bytes instanceof Uint8Array) || bytes.length < 4) {
    throw new InvalidArgumentError('contribution object is truncated');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(0, false);
  if (count < 1 || count > (bytes.length - 4) / 4) {
    throw new InvalidArgumentError(`contribution object claims ${count} frames`);
  }
  const frames: Uint8Array[] = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.length) throw new InvalidArgumentError('contribution object is truncated');
    const n = view.getUint32(at, false);
    if (at + 4 + n > bytes.length) throw new InvalidArgumentError('contribution object is truncated');
    frames.push(bytes.subarray(at + 4, at + 4 + n));
    at += 4 + n;
  }
  if (at !== bytes.length) throw new InvalidArgumentError('trailing bytes after the contribution object');
  return { manifest: frames[0]!, blocks: frames.slice(1) };
}

/**
 * Creates the updates store if it does not exist (the coordinator, before the first round): file
 * storage, `replicas`, and JetStream `max_age` = `retentionMs` (0: kept until removed). An existing
 * store keeps its settings.
 */
export async function ensureUpdatesStore(
  nc: NatsConnection,
  bucket: string,
  options: { readonly replicas: number; readonly retentionMs: number; readonly description: string },
): Promise<void> {
  assertInteger('options.retentionMs', options.retentionMs, 0, 100 * 86_400_000);
  await new Objm(nc).create(bucket, {
    storage: StorageType.File,
    replicas: options.replicas,
    description: options.description,
    // Nanoseconds: 100 days is 8.64e15, below 2^53.
    ttl: options.retentionMs * 1_000_000,
  });
}

/**
 * An aggregator's handle on the updates store, opened on first use (stream info only: it may not
 * create streams), shared by later calls; a failed open is forgotten so the next call retries.
 */
export function updatesStoreWriter(nc: NatsConnection, bucket: string): () => Promise<ObjectStore> {
  let store: Promise<ObjectStore> | undefined;
  return () => {
    if (store === undefined) {
      // No account check ($JS.API.INFO): the aggregator's user may not send it.
      const opened = new Objm(jetstream(nc, { checkAPI: false })).open(bucket);
      store = opened;
      opened.catch(() => {
        if (store === opened) store = undefined;
      });
    }
    return store;
  };
}

/**
 * Opens a stored contribution and checks it is the update a partial listed: the manifest it holds
 * is the one the partial forwarded (`forwardedManifest`), its blocks verify under `verifier` (the
 * site's signature, Merkle paths, CRCs, the round's pinned size and weight), and its signer and
 * digest are `listed`'s. Returns the verified update, or what is wrong with it.
 */
export function openContribution(
  bytes: Uint8Array,
  forwardedManifest: Uint8Array,
  listed: Contributor,
  verifier: BlockVerifier,
): VerifiedUpdate | string {
  try {
    const stored = decodeContribution(bytes);
    if (!bytesEqual(stored.manifest, forwardedManifest))
      return 'its manifest is not the one the partial forwarded';
    const update = verifier.verifyUpdate({ blocks: stored.blocks, manifest: stored.manifest });
    if (update.signer !== listed.site || !bytesEqual(update.digest, listed.digest)) {
      return 'its blocks are not the update the site signed';
    }
    return update;
  } catch (err) {
    return (err as Error).message;
  }
}

/** What reading one round's stored contributions back takes: see {@link contributionReader}. */
export interface ContributionReaderInput {
  readonly open: ControlBodies['round-open'];
  /** Blocks of one update of the round: sizes the largest stored contribution. */
  readonly blocks: number;
  /** When given, a block of any other encoding is refused (`ENCODING_MISMATCH`). */
  readonly encoding?: Encoding;
  readonly lanes: Pick<LaneContext, 'paramsId' | 'maxCiphertextBytes'>;
  /** A site's signing key in force (undefined: unknown); asked only for the round's assigned sites. */
  readonly keys: (site: string) => PublicSigningKey | undefined;
  readonly allowedAlgorithms: readonly SignatureAlgorithm[];
}

/**
 * The verifier of a round's site updates as its RoundOpen pins them (context, assigned sites and
 * their weights, size, participants) and the largest stored contribution of that round, for
 * {@link openContribution}: shared by the coordinator's robust step and the audit.
 */
export function contributionReader(input: ContributionReaderInput): {
  verifier: BlockVerifier;
  maxBytes: number;
} {
  const { open, lanes } = input;
  const weights = new Map(open.assignments.map((a) => [a.site, a.examples]));
  const verifier = new BlockVerifier({
    context: {
      federation: open.federation,
      round: open.round,
      baseCommit: open.baseCommit,
      version: open.version,
    },
    ckksParamsId: lanes.paramsId,
    ...(input.encoding === undefined ? {} : { encoding: input.encoding }),
    keys: (site) => (weights.has(site) ? input.keys(site) : undefined),
    allowedAlgorithms: input.allowedAlgorithms,
    kind: 'site-update',
    maxCiphertextBytes: lanes.maxCiphertextBytes,
    participants: open.assignments.length,
    pinned: { totalParams: open.totalParams, weightOf: (site) => weights.get(site) },
  });
  return { verifier, maxBytes: 4 + (input.blocks + 1) * (4 + maxBlockFrameBytes(lanes.maxCiphertextBytes)) };
}

import { bytesEqual } from '../../crypto/digest/index.ts';
import type { LaneContext } from '../../crypto/lanes/index.ts';
import type { PublicSigningKey, SignatureAlgorithm } from '../../crypto/signature/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import {
  BlockVerifier,
  type Contributor,
  type ControlBodies,
  type Encoding,
  maxBlockFrameBytes,
  maxManifestFrameBytes,
  type VerifiedUpdate,
} from '../protocol/index.ts';

/**
 * The largest frame a stored contribution holds under `maxCiphertextBytes`: a block frame (one
 * ciphertext or plain payload with its header and Merkle path) or a site's own manifest, whichever
 * is larger. The contributions stream caps each message at this (docs/log-format.md, "Contributions").
 */
export function maxContributionFrameBytes(maxCiphertextBytes: number): number {
  assertInteger('maxCiphertextBytes', maxCiphertextBytes, 1, 64 * 1024 * 1024);
  return Math.max(maxBlockFrameBytes(maxCiphertextBytes), maxManifestFrameBytes(0));
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
 * their weights and size) and the largest stored contribution of that round, for
 * {@link openContribution}: shared by the coordinator's robust step and the audit.
 */
export function contributionReader(input: ContributionReaderInput): {
  verifier: BlockVerifier;
  /** Most bytes of a stored contribution (its encoding, {@link encodeContribution}). */
  maxBytes: number;
  /** Most frames of a stored contribution: its blocks and the manifest. */
  maxFrames: number;
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
    pinned: { totalParams: open.totalParams, weightOf: (site) => weights.get(site) },
  });
  const maxFrames = input.blocks + 1;
  return {
    verifier,
    maxBytes: 4 + maxFrames * (4 + maxContributionFrameBytes(lanes.maxCiphertextBytes)),
    maxFrames,
  };
}

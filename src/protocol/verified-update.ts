import { BlockRejectedError } from '../errors/index.ts';
import type { VerifiedBlock, VerifiedManifest } from './block-verifier.ts';
import type { Contributor, Encoding } from './messages.ts';

/** One site's (or one subtree's) whole, verified update, ready to be summed. */
export interface VerifiedUpdate {
  readonly signer: string;
  /** Merkle root of the update's blocks (the update digest). */
  readonly digest: Uint8Array;
  readonly exampleWeight: number;
  /** Sites summed into it: 1 for a site update. */
  readonly contributors: number;
  readonly encoding: Encoding;
  readonly totalParams: number;
  /** Ciphertexts in block-index order. */
  readonly ciphertexts: readonly Uint8Array[];
  /** The site updates inside: the signer itself for a site update, the listed sites for a partial aggregate. */
  readonly sites: readonly Contributor[];
}

/**
 * Assembles verified blocks and their manifest into a whole update: every block must carry the
 * manifest's digest (`DIGEST_MISMATCH`), no index may repeat (`DUPLICATE`), and exactly
 * `blockCount` blocks must be present (`BLOCK_COUNT_MISMATCH`).
 */
export function assembleUpdate(manifest: VerifiedManifest, blocks: readonly VerifiedBlock[]): VerifiedUpdate {
  const ordered: Uint8Array[] = new Array(manifest.blockCount);
  for (const block of blocks) {
    if (block.signer !== manifest.signer || !equal(block.digest, manifest.updateDigest)) {
      throw new BlockRejectedError(
        'DIGEST_MISMATCH',
        `block ${block.blockIndex} from ${JSON.stringify(block.signer)} is not part of the update its manifest closes`,
      );
    }
    if (block.blockCount !== manifest.blockCount || block.blockIndex >= manifest.blockCount) {
      throw new BlockRejectedError(
        'BLOCK_COUNT_MISMATCH',
        `block ${block.blockIndex}/${block.blockCount}, manifest says ${manifest.blockCount} blocks`,
      );
    }
    if (ordered[block.blockIndex] !== undefined) {
      throw new BlockRejectedError(
        'DUPLICATE',
        `block ${block.blockIndex} of ${JSON.stringify(block.signer)} twice`,
      );
    }
    ordered[block.blockIndex] = block.ciphertext;
  }
  let present = 0;
  for (const c of ordered) if (c !== undefined) present++;
  if (present !== manifest.blockCount) {
    throw new BlockRejectedError(
      'BLOCK_COUNT_MISMATCH',
      `${present} of ${manifest.blockCount} blocks of ${JSON.stringify(manifest.signer)} arrived`,
    );
  }
  return {
    signer: manifest.signer,
    digest: manifest.updateDigest,
    exampleWeight: manifest.exampleWeight,
    contributors: manifest.contributors,
    encoding: manifest.encoding,
    totalParams: manifest.totalParams,
    ciphertexts: ordered,
    sites:
      manifest.contributorList.length > 0
        ? manifest.contributorList
        : [{ site: manifest.signer, digest: manifest.updateDigest, weight: manifest.exampleWeight }],
  };
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

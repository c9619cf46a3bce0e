import { BlockRejectedError } from '../errors/index.ts';
import type { VerifiedBlock, VerifiedManifest } from './block-verifier.ts';
import { assembleUpdate, type VerifiedUpdate } from './verified-update.ts';

/**
 * Collects one signer's verified blocks and manifest of one update, in any order. The first block
 * or manifest pins the update digest; anything closing another update is `DIGEST_MISMATCH`. A
 * block index or manifest seen before is a `'repeat'` (the same signed piece sent again).
 */
export class UpdateInbox {
  #digest: Uint8Array | undefined;
  readonly #blocks = new Map<number, VerifiedBlock>();
  #manifest: VerifiedManifest | undefined;

  /** Stores a verified block; `'repeat'` when its index is already in. */
  addBlock(block: VerifiedBlock): 'stored' | 'repeat' {
    if (this.#digest && !equal(this.#digest, block.digest)) {
      throw new BlockRejectedError(
        'DIGEST_MISMATCH',
        `block ${block.blockIndex} of ${JSON.stringify(block.signer)} belongs to another update than its earlier blocks`,
      );
    }
    if (this.#blocks.has(block.blockIndex)) return 'repeat';
    this.#digest = block.digest;
    this.#blocks.set(block.blockIndex, block);
    return 'stored';
  }

  /** Stores the verified manifest; `'repeat'` when one is already in. */
  addManifest(manifest: VerifiedManifest): 'stored' | 'repeat' {
    if (this.#digest && !equal(this.#digest, manifest.updateDigest)) {
      throw new BlockRejectedError(
        'DIGEST_MISMATCH',
        `manifest of ${JSON.stringify(manifest.signer)} closes another update than its blocks`,
      );
    }
    if (this.#manifest) return 'repeat';
    this.#digest = manifest.updateDigest;
    this.#manifest = manifest;
    return 'stored';
  }

  /** Whether the manifest and as many blocks as it announces are in. */
  get whole(): boolean {
    return this.#manifest !== undefined && this.#blocks.size >= this.#manifest.blockCount;
  }

  /**
   * The assembled update (`assembleUpdate`'s checks: digest, duplicates, block count). Throws
   * `BLOCK_COUNT_MISMATCH` when called before the update is whole, `BAD_HEADER` without a manifest.
   */
  assemble(): VerifiedUpdate {
    if (!this.#manifest) throw new BlockRejectedError('BAD_HEADER', 'no manifest closes this update');
    return assembleUpdate(this.#manifest, [...this.#blocks.values()]);
  }
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

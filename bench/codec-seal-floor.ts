// The codec bench's floors: what SEAL alone costs for the work the site pipeline and the
// aggregator cannot avoid, with nothing of Cohort around it (no quantize, pack, CRC, Merkle tree,
// signature, framing, checks or serialization).
import type { CkksContext, SealCiphertext } from '../crypto/ckks/index.ts';

/** A SEAL encryptor with its own throwaway secret key, for the bare encode+encrypt floor. */
export interface BareEncryptor {
  /**
   * Encodes `slots` at the top level, mod-switches the plaintext to the last level and encrypts
   * it symmetrically (seeded), `count` times, as the site pipeline does for each block; the
   * ciphertexts are freed unserialized.
   */
  encrypt(slots: Float64Array, count: number): void;
  delete(): void;
}

/** A {@link BareEncryptor} on `ctx`, under a fresh secret key. */
export function bareEncryptor(ctx: CkksContext): BareEncryptor {
  const { seal, context, encoder, evaluator, lastParmsId, scale } = ctx;
  const keygen = new seal.KeyGenerator(context);
  const secretKey = keygen.secretKey();
  const publicKey = keygen.createPublicKey();
  const encryptor = new seal.Encryptor(context, publicKey, secretKey);
  const plain = new seal.Plaintext();
  return {
    encrypt(slots, count) {
      for (let i = 0; i < count; i++) {
        encoder.encode(slots, scale, plain);
        evaluator.plainModSwitchToInplace(plain, lastParmsId);
        encryptor.encryptSymmetricSerializable(plain).delete();
      }
    },
    delete() {
      for (const o of [plain, encryptor, publicKey, secretKey, keygen]) o.delete();
    },
  };
}

/** A slot vector of integers below 2^40, as packed lanes are (the encode cost does not depend on them). */
export function benchSlots(ctx: CkksContext): Float64Array {
  const slots = new Float64Array(ctx.slots);
  let x = 0x9e3779b9;
  for (let i = 0; i < slots.length; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    slots[i] = x * 256;
  }
  return slots;
}

/**
 * SEAL's bare load+add over the same ciphertexts the aggregator sums: `updates[k][b]` is site k's
 * block b (serialized, seeded). Loads every ciphertext (`loadFromArray`: seed expansion and
 * SEAL's own validation) and adds block-wise; the first update becomes the sum, as in
 * `AggregateBuilder`. Frees everything.
 */
export function bareLoadAdd(ctx: CkksContext, updates: readonly (readonly Uint8Array[])[]): void {
  const { seal, context, evaluator } = ctx;
  const sums: SealCiphertext[] = [];
  try {
    for (const blocks of updates) {
      for (let b = 0; b < blocks.length; b++) {
        const ct = new seal.Ciphertext();
        ct.loadFromArray(context, blocks[b]!);
        if (sums.length <= b) {
          sums.push(ct);
        } else {
          evaluator.addInplace(sums[b]!, ct);
          ct.delete();
        }
      }
    }
  } finally {
    for (const s of sums) s.delete();
  }
}

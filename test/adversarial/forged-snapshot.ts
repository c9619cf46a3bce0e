// What a hostile site can build with its own keys: a snapshot that is correctly signed by it and
// correctly encrypted under the federation data key, whose signed header names a commit of the
// log (its hash, height, model hash and strategy-state hash), but whose encrypted model is another
// one. Nothing without the data key can tell it from an honest snapshot; `encodeSnapshot` refuses
// to write it (it checks the model against the commit), so it is assembled here from the
// documented layout with the same parts.
import { sha256 } from '../../crypto/digest/index.ts';
import { type SigningKeyPair, sign } from '../../crypto/signature/index.ts';
import { encodeStrategyState, type StrategyState } from '../../federation/strategy/index.ts';
import type { CommitKind } from '../../src/versions/commit.ts';
import { float32ToLeBytes } from '../../src/versions/float32-le.ts';
import { SNAPSHOT_SIGNING_DOMAIN } from '../../src/versions/snapshot.ts';
import { sealParts } from '../../src/versions/snapshot-cipher.ts';
import { appendCiphertextDigest, encodeSnapshotHeaderFields } from '../../src/versions/snapshot-header.ts';
import { strategyStateBytesHash } from '../../src/versions/strategy-state-hash.ts';

/** The commit a forged snapshot claims to hold (as the log records it). */
export interface ClaimedCommit {
  readonly hash: Uint8Array;
  readonly height: number;
  readonly round: number;
  readonly kind: CommitKind;
  readonly modelHash: Uint8Array;
}

/** A snapshot signed by `signer` that claims `commit` but holds `parameters` and `state`. */
export function forgeSnapshot(opts: {
  readonly federation: string;
  readonly commit: ClaimedCommit;
  readonly logSequence: number;
  readonly parameters: Float32Array;
  readonly state: StrategyState;
  readonly dataKey: Uint8Array;
  readonly signer: string;
  readonly signing: SigningKeyPair;
}): Uint8Array {
  const stateBytes = encodeStrategyState(opts.state);
  const stateLength = new Uint8Array(4);
  new DataView(stateLength.buffer).setUint32(0, stateBytes.length, true);
  const parameterBytes = float32ToLeBytes(opts.parameters);
  const nonce = crypto.getRandomValues(new Uint8Array(12));
  const fields = encodeSnapshotHeaderFields({
    federation: opts.federation,
    commitHash: opts.commit.hash,
    height: opts.commit.height,
    round: opts.commit.round,
    kind: opts.commit.kind,
    modelHash: opts.commit.modelHash, // the claim: the commit's model
    stateHash: strategyStateBytesHash(stateBytes),
    logSequence: opts.logSequence,
    parameterCount: opts.parameters.length,
    signer: opts.signer,
    signerKeyId: opts.signing.keyId,
    signatureAlgorithm: opts.signing.algorithm,
    nonce,
    ciphertextLength: 4 + stateBytes.length + parameterBytes.length + 16,
  });
  const sealed = sealParts(opts.dataKey, nonce, fields, [stateLength, stateBytes, parameterBytes]);
  const header = appendCiphertextDigest(fields, sha256(...sealed));
  const signature = sign(opts.signing, SNAPSHOT_SIGNING_DOMAIN, header);
  const prefix = new Uint8Array(12);
  prefix.set(new TextEncoder().encode('COHS'), 0);
  prefix[4] = 1;
  new DataView(prefix.buffer).setUint32(8, header.length, false);
  const sigLength = new Uint8Array(4);
  new DataView(sigLength.buffer).setUint32(0, signature.length, false);
  return Buffer.concat([prefix, header, sigLength, signature, ...sealed]);
}

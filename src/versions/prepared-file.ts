import { bytesEqual } from '../../crypto/digest/index.ts';
import {
  decodeStrategyState,
  encodeStrategyState,
  type StrategyState,
} from '../../federation/strategy/index.ts';
import type { Commit } from './commit.ts';
import { decodeCommit, encodeCommit } from './commit-codec.ts';
import { envelopeHeader, openEnvelope } from './file-envelope.ts';
import { float32ToLeBytes, leBytesToFloat32 } from './float32-le.ts';
import { modelHash } from './model-hash.ts';
import { VersionError } from './version-error.ts';

/** Magic of `prepared/<round>.bin` ("Cohort PRePared"). */
export const PREPARED_FILE_MAGIC = 'CPRP';

/** A candidate version written durably on PREPARE (round step 7), switched to on COMMIT. */
export interface PreparedCandidate {
  /** The candidate commit; `commit.modelHash` is H(`parameters`). */
  readonly commit: Commit;
  /** w′: the model after applying the round's aggregate (or the rollback target's model). */
  readonly parameters: Float32Array;
  /** The strategy state after the round (moments, step). */
  readonly strategyState: StrategyState;
}

/**
 * The parts of a prepared file: an envelope (magic "CPRP", length in bytes, SHA-256) around
 * `u32 commit length ‖ commit (encodeCommit) ‖ u32 state length ‖ state (encodeStrategyState) ‖
 * parameters (little-endian float32)`, lengths little-endian. One file, so one rename makes the
 * whole candidate durable.
 */
export function preparedFileParts(candidate: PreparedCandidate): Uint8Array[] {
  const commit = encodeCommit(candidate.commit);
  const state = encodeStrategyState(candidate.strategyState);
  const payload = [
    u32(commit.length),
    commit,
    u32(state.length),
    state,
    float32ToLeBytes(candidate.parameters),
  ];
  return [envelopeHeader(PREPARED_FILE_MAGIC, payload, 1), ...payload];
}

/**
 * Inverse of {@link preparedFileParts}; also checks that the commit verifies and that the
 * parameters hash to its `modelHash`.
 *
 * @throws VersionError `STORE_CORRUPT` naming `path`.
 */
export function readPreparedFile(bytes: Uint8Array, path: string): PreparedCandidate {
  const corrupt = (problem: string, cause?: unknown): VersionError =>
    new VersionError('STORE_CORRUPT', `${path}: ${problem}`, { cause, details: { path } });
  const payload = openEnvelope(bytes, PREPARED_FILE_MAGIC, 1, path);
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  let offset = 0;
  const section = (what: string): Uint8Array => {
    if (offset + 4 > payload.length) throw corrupt(`truncated before the ${what} length`);
    const n = view.getUint32(offset, true);
    offset += 4;
    if (offset + n > payload.length) throw corrupt(`${what} length ${n} runs past the end`);
    const out = payload.subarray(offset, offset + n);
    offset += n;
    return out;
  };
  const commitBytes = section('commit');
  const stateBytes = section('strategy state');
  const rest = payload.subarray(offset);
  if (rest.length % 4 !== 0) throw corrupt(`parameter bytes ${rest.length} are not a multiple of 4`);
  let commit: Commit;
  let strategyState: StrategyState;
  try {
    commit = decodeCommit(commitBytes);
  } catch (cause) {
    throw corrupt('commit does not decode', cause);
  }
  try {
    strategyState = decodeStrategyState(stateBytes);
  } catch (cause) {
    throw corrupt('strategy state does not decode', cause);
  }
  const parameters = leBytesToFloat32(rest);
  let hash: Uint8Array;
  try {
    hash = modelHash(parameters);
  } catch (cause) {
    throw corrupt('parameters are not finite', cause);
  }
  if (!bytesEqual(hash, commit.modelHash)) throw corrupt("parameters do not hash to the commit's modelHash");
  return { commit, parameters, strategyState };
}

function u32(n: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, n, true);
  return bytes;
}

import {
  decodeStrategyState,
  encodeStrategyState,
  type StrategyState,
} from '../../federation/strategy/index.ts';
import { HASH_BYTES } from './commit.ts';
import { envelopeHeader, openEnvelope } from './file-envelope.ts';
import { VersionError } from './version-error.ts';

/** Magic of `strategy-state.bin` ("Cohort STate Envelope"). */
export const STATE_FILE_MAGIC = 'CSTE';

/** A strategy state together with the commit it belongs to. */
export interface TaggedStrategyState {
  /** Hash of the commit whose model this state goes with. */
  readonly commit: Uint8Array;
  readonly state: StrategyState;
}

/**
 * The parts of `strategy-state.bin`: an envelope (magic "CSTE") around `commit hash (32) ‖
 * encodeStrategyState(state)`. Throws like `encodeStrategyState` for an invalid state.
 */
export function stateFileParts(tagged: TaggedStrategyState): Uint8Array[] {
  const payload = [tagged.commit, encodeStrategyState(tagged.state)];
  return [envelopeHeader(STATE_FILE_MAGIC, payload, 1), ...payload];
}

/**
 * Inverse of {@link stateFileParts}.
 *
 * @throws VersionError `STORE_CORRUPT` naming `path` (bad envelope or undecodable state).
 */
export function readStateFile(bytes: Uint8Array, path: string): TaggedStrategyState {
  const payload = openEnvelope(bytes, STATE_FILE_MAGIC, 1, path);
  if (payload.length < HASH_BYTES) {
    throw new VersionError('STORE_CORRUPT', `${path}: payload too short for a commit hash`, {
      details: { path },
    });
  }
  try {
    return { commit: payload.slice(0, HASH_BYTES), state: decodeStrategyState(payload.subarray(HASH_BYTES)) };
  } catch (cause) {
    throw new VersionError('STORE_CORRUPT', `${path}: strategy state does not decode`, {
      cause,
      details: { path },
    });
  }
}

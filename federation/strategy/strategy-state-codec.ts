import { InvalidArgumentError } from '../../src/errors/index.ts';
import { STRATEGY_NAMES } from './strategy-config.ts';
import { assertStrategyState, keepsMoments, type StrategyState } from './strategy-state.ts';

/** "CSST": Cohort Strategy STate. */
const MAGIC = [0x43, 0x53, 0x53, 0x54] as const;

/** Format version written by {@link encodeStrategyState}; the only one {@link decodeStrategyState} reads. */
export const STRATEGY_STATE_FORMAT_VERSION = 1;

/** Bytes before the moments. */
export const STRATEGY_STATE_HEADER_BYTES = 20;

/**
 * Canonical bytes of `state`, little-endian on every host:
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 4 | magic "CSST" |
 * | 4 | 1 | format version (1) |
 * | 5 | 1 | strategy id: 0 fedavg, 1 fedprox, 2 fedadam, 3 fedyogi |
 * | 6 | 2 | reserved, 0 |
 * | 8 | 8 | step, uint64 (≤ 2^53 − 1) |
 * | 16 | 4 | n, uint32: moment length (0 for fedavg/fedprox) |
 * | 20 | 4n | m, float32 |
 * | 20 + 4n | 4n | v, float32 |
 *
 * The float32 bit patterns are copied as they are (−0 stays −0), so equal states give equal bytes
 * and the bytes can be hashed with the model version. Throws like `assertStrategyState` (with the
 * state's own moment length as the parameter count).
 */
export function encodeStrategyState(state: StrategyState): Uint8Array {
  if (typeof state !== 'object' || state === null) {
    throw new InvalidArgumentError(`state must be a strategy state object, got ${String(state)}`);
  }
  const n = state.m instanceof Float32Array ? state.m.length : 0;
  assertStrategyState(state, state.strategy, n);
  if (n > 0xffffffff) throw new InvalidArgumentError(`state.m length ${n} exceeds the format's 2^32 − 1`);
  const bytes = new Uint8Array(STRATEGY_STATE_HEADER_BYTES + 8 * n);
  const view = new DataView(bytes.buffer);
  bytes.set(MAGIC, 0);
  view.setUint8(4, STRATEGY_STATE_FORMAT_VERSION);
  view.setUint8(5, STRATEGY_NAMES.indexOf(state.strategy));
  view.setUint16(6, 0, true);
  view.setBigUint64(8, BigInt(state.step), true);
  view.setUint32(16, n, true);
  let offset = STRATEGY_STATE_HEADER_BYTES;
  for (const values of [state.m, state.v]) {
    for (let i = 0; i < n; i++, offset += 4) view.setFloat32(offset, values[i]!, true);
  }
  return bytes;
}

/**
 * Inverse of {@link encodeStrategyState}. Accepts only canonical bytes: magic, version 1, a known
 * strategy id, reserved 0, step ≤ 2^53 − 1, n = 0 for stateless rules, total length exactly
 * 20 + 8n, finite moments and v ≥ 0. Throws `INVALID_ARGUMENT` naming the field
 * ("state bytes length 27, header says 28"), or `UPDATE_NON_FINITE` naming a non-finite moment.
 * The returned moments are fresh arrays (they never alias `bytes`).
 */
export function decodeStrategyState(bytes: Uint8Array): StrategyState {
  if (!(bytes instanceof Uint8Array)) {
    throw new InvalidArgumentError('state bytes must be a Uint8Array');
  }
  if (bytes.length < STRATEGY_STATE_HEADER_BYTES) {
    throw bad(`state bytes length ${bytes.length}, the header alone is ${STRATEGY_STATE_HEADER_BYTES}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (MAGIC.some((b, i) => bytes[i] !== b)) throw bad('state bytes do not start with the magic "CSST"');
  const version = view.getUint8(4);
  if (version !== STRATEGY_STATE_FORMAT_VERSION) {
    throw bad(`state format version ${version}, this build reads ${STRATEGY_STATE_FORMAT_VERSION}`);
  }
  const id = view.getUint8(5);
  const strategy = STRATEGY_NAMES[id];
  if (strategy === undefined)
    throw bad(`state strategy id ${id}, known ids are 0–${STRATEGY_NAMES.length - 1}`);
  const reserved = view.getUint16(6, true);
  if (reserved !== 0) throw bad(`state reserved field is ${reserved}, must be 0`);
  const step = view.getBigUint64(8, true);
  if (step > BigInt(Number.MAX_SAFE_INTEGER)) throw bad(`state step ${step} exceeds 2^53 − 1`);
  const n = view.getUint32(16, true);
  if (!keepsMoments(strategy) && n !== 0) throw bad(`state moment length ${n}, ${strategy} keeps 0`);
  const expected = STRATEGY_STATE_HEADER_BYTES + 8 * n;
  if (bytes.length !== expected) throw bad(`state bytes length ${bytes.length}, header says ${expected}`);
  const m = new Float32Array(n);
  const v = new Float32Array(n);
  let offset = STRATEGY_STATE_HEADER_BYTES;
  for (const values of [m, v]) {
    for (let i = 0; i < n; i++, offset += 4) values[i] = view.getFloat32(offset, true);
  }
  const state: StrategyState = { strategy, step: Number(step), m, v };
  assertStrategyState(state, strategy, n);
  return state;
}

function bad(message: string): InvalidArgumentError {
  return new InvalidArgumentError(message, { details: { name: 'state bytes' } });
}

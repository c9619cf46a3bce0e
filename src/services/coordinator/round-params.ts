import { sha256 } from '../../../crypto/digest/index.ts';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { CanonicalWriter } from '../../protocol/canonical-writer.ts';
import { bytesToHex, hexToBytes } from '../../versions/index.ts';

/** Domain tag at the start of {@link encodeRoundParams}. */
export const ROUND_PARAMS_DOMAIN = 'cohort/v1/round-params';

/** The round parameters a commit hash covers (the `params` of Prepare and of the commit). */
export interface RoundParams {
  readonly round: number;
  /** Quantization bits of the round's encoding. */
  readonly bits: number;
  /** The round's clip, as float32 (what RoundOpen carries). */
  readonly clip: number;
  /** Server strategy name (`learning.strategy`). */
  readonly strategy: string;
  /** Client learning rate (`learning.learningRate`). */
  readonly learningRate: number;
  /**
   * SHA-256 of the federation's data contract (`dataContractDigest(config.data)`), 64 lowercase hex
   * characters; only the genesis params of a federation with a `data` section carry it.
   */
  readonly dataContract?: string;
}

/**
 * Canonical bytes of the round parameters (big-endian, `str` = u32 length ‖ UTF-8, `bytes` = u32
 * length ‖ bytes):
 * `str("cohort/v1/round-params") ‖ u64(round) ‖ u8(bits) ‖ f32(clip) ‖ str(strategy) ‖ f64(learningRate)`,
 * then `‖ bytes(dataContract)` (32 bytes) only when a data contract digest is given — so params
 * without one are byte-identical to those written before data contracts existed.
 * The clip is written as float32, so any double that rounds to the same float32 encodes the same.
 */
export function encodeRoundParams(p: RoundParams): Uint8Array {
  assertInteger('params.round', p.round, 0, Number.MAX_SAFE_INTEGER);
  assertInteger('params.bits', p.bits, 1, 255);
  if (!Number.isFinite(p.clip) || !(Math.fround(p.clip) > 0)) {
    throw new InvalidArgumentError(`params.clip ${p.clip} must be a finite float32 > 0`);
  }
  if (!Number.isFinite(p.learningRate)) {
    throw new InvalidArgumentError(`params.learningRate ${p.learningRate} must be finite`);
  }
  const dataContract =
    p.dataContract === undefined ? undefined : hexToBytes('params.dataContract', p.dataContract, 32);
  const writer = new CanonicalWriter()
    .str(ROUND_PARAMS_DOMAIN)
    .u64(p.round)
    .u8(p.bits)
    .f32(p.clip)
    .str(p.strategy)
    .f64(p.learningRate);
  if (dataContract !== undefined) writer.bytes(dataContract);
  return writer.finish();
}

/** Inverse of {@link encodeRoundParams}; throws `INVALID_ARGUMENT` on anything else. */
export function decodeRoundParams(bytes: Uint8Array): RoundParams {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number) => {
    if (at + n > bytes.length) throw new InvalidArgumentError('round params are truncated');
  };
  const str = () => {
    need(4);
    const n = view.getUint32(at, false);
    at += 4;
    need(n);
    const s = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(at, at + n));
    at += n;
    return s;
  };
  if (str() !== ROUND_PARAMS_DOMAIN) throw new InvalidArgumentError('not round params (domain tag)');
  need(8 + 1 + 4);
  const round = Number(view.getBigUint64(at, false));
  at += 8;
  const bits = view.getUint8(at);
  at += 1;
  const clip = view.getFloat32(at, false);
  at += 4;
  const strategy = str();
  need(8);
  const learningRate = view.getFloat64(at, false);
  at += 8;
  let dataContract: string | undefined;
  if (at < bytes.length) {
    need(4);
    const n = view.getUint32(at, false);
    if (n !== 32)
      throw new InvalidArgumentError(`round params: a ${n}-byte data contract digest (expected 32)`);
    at += 4;
    need(n);
    dataContract = bytesToHex(bytes.subarray(at, at + n));
    at += n;
  }
  if (at !== bytes.length)
    throw new InvalidArgumentError(`${bytes.length - at} trailing bytes after round params`);
  return dataContract === undefined
    ? { round, bits, clip, strategy, learningRate }
    : { round, bits, clip, strategy, learningRate, dataContract };
}

/**
 * The stored form of an aggregate: `u32(count) ‖ (u32(length) ‖ ciphertext)*`, big-endian, the
 * ciphertexts in block order. Its SHA-256 is the round's aggregate digest ({@link aggregateDigest}).
 */
export function encodeAggregateObject(ciphertexts: readonly Uint8Array[]): Uint8Array {
  let total = 4;
  for (const c of ciphertexts) total += 4 + c.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, ciphertexts.length, false);
  let at = 4;
  for (const c of ciphertexts) {
    view.setUint32(at, c.length, false);
    out.set(c, at + 4);
    at += 4 + c.length;
  }
  return out;
}

/** Inverse of {@link encodeAggregateObject}. */
export function decodeAggregateObject(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 4) throw new InvalidArgumentError('aggregate object is truncated');
  const count = view.getUint32(0, false);
  const out: Uint8Array[] = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.length) throw new InvalidArgumentError('aggregate object is truncated');
    const n = view.getUint32(at, false);
    if (at + 4 + n > bytes.length) throw new InvalidArgumentError('aggregate object is truncated');
    out.push(bytes.slice(at + 4, at + 4 + n));
    at += 4 + n;
  }
  if (at !== bytes.length) throw new InvalidArgumentError('trailing bytes after the aggregate object');
  return out;
}

/**
 * The aggregate digest of Prepare and the commit: SHA-256 over the ciphertexts in order with their
 * lengths, i.e. SHA-256 of {@link encodeAggregateObject}. A site can recompute it from Prepare's
 * ciphertexts.
 */
export function aggregateDigest(ciphertexts: readonly Uint8Array[]): Uint8Array {
  return sha256(encodeAggregateObject(ciphertexts));
}

import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { CanonicalWriter } from '../protocol/canonical-writer.ts';
import { ROUND_ROBUST_TAG, type RobustRule, readRobust, writeRobust } from './robust-record.ts';

export { ROUND_ROBUST_TAG };

import { bytesToHex, hexToBytes } from '../versions/index.ts';

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
  /** With differential privacy: what the federation has spent once this round commits. */
  readonly privacy?: RoundPrivacy;
  /** `plain` mode with a robust rule: what the coordinator aggregated, and how. */
  readonly robust?: RoundRobust;
}

/**
 * The robust aggregation a `plain`-mode round commit records: the rule (every site checks it is
 * the federation's), the sites whose updates the rule kept (all but Multi-Krum's rejects), how
 * many the norm bound scaled down, and the SHA-256 of the aggregate update Δ̄ (float32,
 * little-endian) the sites apply. An auditor recomputes Δ̄ from the stored updates.
 */
export interface RoundRobust {
  readonly rule: RobustRule;
  /** Sorted site ids. */
  readonly selected: readonly string[];
  readonly clipped: number;
  /** Parameters of the model: Δ̄ is 4 · parameters bytes. */
  readonly parameters: number;
  /** 32 bytes. */
  readonly delta: Uint8Array;
}

/** Tag of the privacy trailer of {@link encodeRoundParams}. */
export const ROUND_PRIVACY_TAG = 'privacy';

/**
 * The privacy a round commit records (every site recomputes it and votes NO on any other): the
 * round's contributor count, the RDP spent by every round committed so far including this one at
 * each accounting order, and the ε it gives at δ.
 */
export interface RoundPrivacy {
  readonly contributors: number;
  /**
   * The mechanism: noise multiplier z, clip norm C (model units) and the contributors n the noise
   * is split over (`round.minContributors`). With the model's size they fix each round's charge,
   * so an auditor can recompute the RDP from the log.
   */
  readonly noiseMultiplier: number;
  readonly clipNorm: number;
  readonly noiseShares: number;
  readonly epsilon: number;
  readonly delta: number;
  /** Cumulative δ spent outside RDP (noise draws clamped to their lane range), ≥ 0. */
  readonly deltaCost: number;
  /** Cumulative RDP at each of the accountant's orders (finite, ≥ 0). */
  readonly rdp: readonly number[];
}

/** Most RDP orders a privacy trailer may hold. */
const MAX_PRIVACY_ORDERS = 1024;

/**
 * Canonical bytes of the round parameters (big-endian, `str` = u32 length ‖ UTF-8, `bytes` = u32
 * length ‖ bytes):
 * `str("cohort/v1/round-params") ‖ u64(round) ‖ u8(bits) ‖ f32(clip) ‖ str(strategy) ‖ f64(learningRate)`,
 * then `‖ bytes(dataContract)` (32 bytes) only when a data contract digest is given — so params
 * without one are byte-identical to those written before data contracts existed — then, with
 * privacy, `‖ str("privacy") ‖ u32(contributors) ‖ f64(noiseMultiplier) ‖ f64(clipNorm) ‖
 * u32(noiseShares) ‖ f64(epsilon) ‖ f64(delta) ‖ f64(deltaCost) ‖ u32(n) ‖ f64(rdp)ⁿ`.
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
  if (p.privacy !== undefined) {
    const v = p.privacy;
    assertInteger('params.privacy.contributors', v.contributors, 1, 0xffff_ffff);
    assertInteger('params.privacy.noiseShares', v.noiseShares, 1, 0xffff_ffff);
    for (const [name, x] of [
      ['noiseMultiplier', v.noiseMultiplier],
      ['clipNorm', v.clipNorm],
    ] as [string, number][]) {
      if (!(Number.isFinite(x) && x > 0)) {
        throw new InvalidArgumentError(`params.privacy.${name} ${x} must be finite and > 0`);
      }
    }
    assertInteger('params.privacy.rdp.length', v.rdp.length, 1, MAX_PRIVACY_ORDERS);
    for (const [name, x] of [
      ['epsilon', v.epsilon],
      ['delta', v.delta],
      ['deltaCost', v.deltaCost],
      ...v.rdp.map((r, i) => [`rdp[${i}]`, r]),
    ] as [string, number][]) {
      if (!(Number.isFinite(x) && x >= 0)) {
        throw new InvalidArgumentError(`params.privacy.${name} ${x} must be finite and ≥ 0`);
      }
    }
    writer
      .str(ROUND_PRIVACY_TAG)
      .u32(v.contributors)
      .f64(v.noiseMultiplier)
      .f64(v.clipNorm)
      .u32(v.noiseShares)
      .f64(v.epsilon)
      .f64(v.delta)
      .f64(v.deltaCost)
      .u32(v.rdp.length);
    for (const r of v.rdp) writer.f64(r);
  }
  if (p.robust !== undefined) writeRobust(writer, p.robust);
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
  // A data contract digest is a 32-byte field; the privacy trailer starts with its 7-byte tag.
  if (at + 4 <= bytes.length && view.getUint32(at, false) === 32) {
    at += 4;
    need(32);
    dataContract = bytesToHex(bytes.subarray(at, at + 32));
    at += 32;
  }
  let privacy: RoundPrivacy | undefined;
  let robust: RoundRobust | undefined;
  let tag = at < bytes.length ? str() : '';
  if (tag === ROUND_PRIVACY_TAG) {
    need(4 + 8 + 8 + 4 + 8 + 8 + 8 + 4);
    const contributors = view.getUint32(at, false);
    const noiseMultiplier = view.getFloat64(at + 4, false);
    const clipNorm = view.getFloat64(at + 12, false);
    const noiseShares = view.getUint32(at + 20, false);
    const epsilon = view.getFloat64(at + 24, false);
    const delta = view.getFloat64(at + 32, false);
    const deltaCost = view.getFloat64(at + 40, false);
    const n = view.getUint32(at + 48, false);
    at += 52;
    if (n < 1 || n > MAX_PRIVACY_ORDERS) {
      throw new InvalidArgumentError(`round params: ${n} RDP orders (expected 1 to ${MAX_PRIVACY_ORDERS})`);
    }
    need(8 * n);
    const rdp = Array.from({ length: n }, (_, i) => view.getFloat64(at + 8 * i, false));
    at += 8 * n;
    privacy = { contributors, noiseMultiplier, clipNorm, noiseShares, epsilon, delta, deltaCost, rdp };
    tag = at < bytes.length ? str() : '';
  }
  if (tag === ROUND_ROBUST_TAG) {
    const read = readRobust(bytes.subarray(at));
    robust = read.robust;
    at += read.length;
  } else if (tag !== '') {
    throw new InvalidArgumentError(`round params: unknown trailer ${JSON.stringify(tag.slice(0, 32))}`);
  }
  if (at !== bytes.length)
    throw new InvalidArgumentError(`${bytes.length - at} trailing bytes after round params`);
  return {
    round,
    bits,
    clip,
    strategy,
    learningRate,
    ...(dataContract === undefined ? {} : { dataContract }),
    ...(privacy === undefined ? {} : { privacy }),
    ...(robust === undefined ? {} : { robust }),
  };
}

import { assertRobustRule, type RobustRule } from '../../federation/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import type { CanonicalWriter } from '../protocol/canonical-writer.ts';
import { CanonicalReader } from '../versions/canonical-reader.ts';

export type { RobustRule };

/** Tag of the robust trailer of the round params. */
export const ROUND_ROBUST_TAG = 'robust';

/** Most sites a robust record names (`codec.maxContributors` is at most 65,535). */
const MAX_SELECTED = 65_535;

/** The record `writeRobust` writes (see `RoundRobust` in round-params.ts). */
interface RobustFields {
  readonly rule: RobustRule;
  readonly selected: readonly string[];
  readonly clipped: number;
  readonly parameters: number;
  readonly delta: Uint8Array;
}

/**
 * Appends the robust trailer: `str("robust") ‖ str(rule) ‖ f64(normBound, 0 for none) ‖
 * f64(trimFraction, 0) ‖ u32(byzantine, 0) ‖ u32(select, 0 for the default) ‖ u32(n) ‖ str(site)ⁿ ‖
 * u32(clipped) ‖ u32(parameters) ‖ bytes(delta)` (32 bytes). Sites must be sorted and distinct.
 */
export function writeRobust(writer: CanonicalWriter, r: RobustFields): void {
  assertRobustRule(r.rule);
  assertInteger('params.robust.selected.length', r.selected.length, 1, MAX_SELECTED);
  for (let i = 1; i < r.selected.length; i++) {
    if (!(r.selected[i - 1]! < r.selected[i]!)) {
      throw new InvalidArgumentError('params.robust.selected must be sorted and distinct');
    }
  }
  assertInteger('params.robust.clipped', r.clipped, 0, MAX_SELECTED);
  assertInteger('params.robust.parameters', r.parameters, 1, 0xffff_ffff);
  if (!(r.delta instanceof Uint8Array) || r.delta.length !== 32) {
    throw new InvalidArgumentError('params.robust.delta must be a 32-byte SHA-256');
  }
  const rule = r.rule;
  writer
    .str(ROUND_ROBUST_TAG)
    .str(rule.name)
    .f64(rule.normBound ?? 0)
    .f64(rule.name === 'trimmed-mean' ? rule.trimFraction : 0)
    .u32(rule.name === 'multi-krum' ? rule.byzantine : 0)
    .u32(rule.name === 'multi-krum' ? (rule.select ?? 0) : 0)
    .u32(r.selected.length);
  for (const site of r.selected) writer.str(site);
  writer.u32(r.clipped).u32(r.parameters).bytes(r.delta);
}

/**
 * Reads what {@link writeRobust} wrote after its tag, from the start of `bytes` to its end (the
 * trailer is the params' last). Returns it and the bytes read; `INVALID_ARGUMENT` on anything else.
 */
export function readRobust(bytes: Uint8Array): { robust: RobustFields; length: number } {
  const r = new CanonicalReader(
    bytes,
    (m) => new InvalidArgumentError(`round params: robust trailer is truncated or malformed: ${m}`),
  );
  const name = r.str('rule', 64);
  const normBound = r.f64('normBound');
  const trimFraction = r.f64('trimFraction');
  const byzantine = r.u32('byzantine');
  const select = r.u32('select');
  const rule = {
    name,
    ...(normBound === 0 ? {} : { normBound }),
    ...(name === 'trimmed-mean' ? { trimFraction } : {}),
    ...(name === 'multi-krum' ? { byzantine, ...(select === 0 ? {} : { select }) } : {}),
  };
  try {
    assertRobustRule(rule);
  } catch (cause) {
    throw new InvalidArgumentError(`round params: robust rule: ${(cause as Error).message}`, { cause });
  }
  const n = r.u32('selected count');
  if (n < 1 || n > MAX_SELECTED)
    throw new InvalidArgumentError(`round params: robust record names ${n} sites`);
  const selected = Array.from({ length: n }, (_, i) => r.str(`selected[${i}]`, 128));
  const clipped = r.u32('clipped');
  const parameters = r.u32('parameters');
  const delta = r.bytes('delta', { length: 32 });
  return { robust: { rule, selected, clipped, parameters, delta }, length: r.offset };
}

import type { RoundParams } from '../../round/index.ts';
import type { ChainCommit } from '../../services/federation-log/index.ts';
import { bytesToHex } from '../../versions/index.ts';

/** Hex digits of a hash in line output (as `cohort coordinator` prints them). */
export const SHORT_HASH = 12;

/** Lowercase hex of `bytes`. */
export const hex = (bytes: Uint8Array): string => bytesToHex(bytes);

/** The first {@link SHORT_HASH} hex digits of `bytes`. */
export const short = (bytes: Uint8Array): string => bytesToHex(bytes).slice(0, SHORT_HASH);

/** ISO 8601 of a log time; `-` for none. */
export function isoDate(unixMs: number | null): string {
  return unixMs === null || !Number.isFinite(unixMs) ? '-' : new Date(unixMs).toISOString();
}

/** Member-supplied text made safe for a terminal: control characters become `?`. */
export function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/** Rows as lines: every column but the last padded to its widest cell, two spaces apart. */
export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** `@3 3f2a9c1e0b7d`: a commit's height and short hash. */
export function commitLabel(c: ChainCommit): string {
  return `@${c.commit.height} ${short(c.commit.hash)}`;
}

/** `n contributor(s)`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `bits 8, clip 0.5, strategy fedavg, learning rate 0.1` (the clip as the float32 it is). */
export function describeRoundParams(p: RoundParams): string {
  return `bits ${p.bits}, clip ${float32String(p.clip)}, strategy ${printable(p.strategy)}, learning rate ${p.learningRate}`;
}

/**
 * The shortest decimal that reads back as the same float32 (`0.05`, not `0.05000000074505806`):
 * clips are stored as float32. JSON output keeps the exact value.
 */
export function float32String(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const f = Math.fround(x);
  for (let digits = 1; digits <= 9; digits++) {
    const d = Number(f.toPrecision(digits));
    if (Math.fround(d) === f) return String(d);
  }
  return String(f);
}

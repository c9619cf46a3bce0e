/**
 * The next round's clip: `multiplier` × the median of the RMS values the YES voters reported
 * (finite and > 0; others are ignored), or `current` when none is usable or the result is not a
 * positive float32. The median, not the mean: one site reporting a huge RMS would otherwise widen
 * every site's quantization grid (ARCHITECTURE, "Clip per round"); fewer than half the voters
 * cannot move the median outside the honest values.
 */
export function nextRoundClip(current: number, reportedRms: readonly number[], multiplier: number): number {
  const rms = reportedRms.filter((x) => Number.isFinite(x) && x > 0).sort((a, b) => a - b);
  if (rms.length === 0) return current;
  const mid = rms.length >> 1;
  const median = rms.length % 2 === 1 ? rms[mid]! : (rms[mid - 1]! + rms[mid]!) / 2;
  const next = multiplier * median;
  return Number.isFinite(next) && Math.fround(next) > 0 ? next : current;
}

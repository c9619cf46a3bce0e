import { InvalidArgumentError } from '../errors/index.ts';

/**
 * Buckets of the RMS histogram a training update carries (docs/security.md, "What a vote tells"):
 * half an octave each, relative to the round's clip. Bucket j holds an update RMS r with
 * clip · 2^((j − RMS_BUCKET_ZERO) / 2) ≤ r < clip · 2^((j + 1 − RMS_BUCKET_ZERO) / 2); the first and
 * last also hold everything below and above. 32 buckets span clip · 2^−12 … clip · 2^4.
 */
export const RMS_BUCKETS = 32;
/** The bucket whose lower bound is the clip itself. */
const RMS_BUCKET_ZERO = 24;

/**
 * A site's RMS histogram lanes: one lane per bucket, 1 in the bucket of `rms` (relative to the
 * round's `clip`), 0 elsewhere. Summed over the round's contributors the lanes count how many
 * updates fall in each bucket, so the sites that decrypt the aggregate learn the distribution of
 * the contributors' RMS (hence its median, for the next clip) and no one learns any site's own.
 */
export function rmsLevels(rms: number, clip: number): Uint8Array {
  if (!Number.isFinite(rms) || rms < 0) {
    throw new InvalidArgumentError(`rms ${rms} must be finite and ≥ 0`, { details: { name: 'rms' } });
  }
  if (!Number.isFinite(clip) || clip <= 0) {
    throw new InvalidArgumentError(`clip ${clip} must be finite and > 0`, { details: { name: 'clip' } });
  }
  const out = new Uint8Array(RMS_BUCKETS);
  const j = rms === 0 ? 0 : Math.floor(2 * Math.log2(rms / clip)) + RMS_BUCKET_ZERO;
  out[Math.min(RMS_BUCKETS - 1, Math.max(0, j))] = 1;
  return out;
}

/**
 * The contributors' median RMS from the summed histogram lanes `counts` (length
 * {@link RMS_BUCKETS}) of `contributors` updates of a round with clip `clip`: the geometric middle
 * of the bucket holding the lower median. Null when the counts are not those of `contributors`
 * one-hot histograms (some contribution wrote other lanes): the clip then stays as it is. One
 * contribution can move at most two counts (its own, and one honest count it cancels), so the
 * median moves by at most two places however it lies.
 */
export function medianRmsOf(counts: ArrayLike<number>, clip: number, contributors: number): number | null {
  if (counts.length !== RMS_BUCKETS) {
    throw new InvalidArgumentError(`${counts.length} histogram lanes, expects ${RMS_BUCKETS}`, {
      details: { name: 'counts' },
    });
  }
  let total = 0;
  for (let j = 0; j < RMS_BUCKETS; j++) {
    const c = counts[j]!;
    if (!Number.isInteger(c) || c < 0) return null;
    total += c;
  }
  if (total !== contributors || contributors < 1) return null;
  const rank = Math.ceil(contributors / 2);
  let seen = 0;
  for (let j = 0; j < RMS_BUCKETS; j++) {
    seen += counts[j]!;
    if (seen >= rank) return clip * 2 ** ((j + 0.5 - RMS_BUCKET_ZERO) / 2);
  }
  return null;
}

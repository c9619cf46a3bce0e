import { beforeAll, describe, expect, it } from 'vitest';
import {
  addInto,
  centredIntegers,
  combineShares,
  commonRandomPoly,
  DEFAULT_THRESHOLD_PARAMS,
  decryptionShare,
  defaultThreshold,
  floodingBound,
  getThresholdContext,
  lagrangeAtZero,
  mulAddInto,
  type RnsPoly,
  roundDecryptionKey,
  SiteSecret,
  scaleByFraction,
  subInto,
  type ThresholdContext,
  thresholdSlotSigma,
  zeroPoly,
} from '../../crypto/threshold/index.ts';

// Threshold decryption on real SEAL objects: five sites, threshold 4 (⌈2·5/3⌉), each with its own
// secret and the Shamir shares the others dealt it.

const SITES = [1, 2, 3, 4, 5];
const T = defaultThreshold(SITES.length, 2);
const epoch = new Uint8Array(32).fill(3);
let ctx: ThresholdContext;
let secrets: Map<number, SiteSecret>;
/** held.get(x).get(i): site x's share of site i's secret. */
let held: Map<number, Map<number, RnsPoly>>;

beforeAll(async () => {
  ctx = await getThresholdContext(DEFAULT_THRESHOLD_PARAMS);
  secrets = new Map(SITES.map((x) => [x, SiteSecret.generate(ctx)]));
  held = new Map(SITES.map((x) => [x, new Map()]));
  for (const [i, s] of secrets) {
    s.deal(T, SITES).forEach((share, k) => {
      held.get(SITES[k]!)!.set(i, share);
    });
  }
});

/** Lane-like slot integers: 13-bit values, one per slot. */
function laneValues(): Float64Array {
  return Float64Array.from({ length: ctx.slots }, () => Math.floor(Math.random() * 2 ** 13));
}

interface Round {
  label: string;
  crp: RnsPoly;
  c0: Map<number, RnsPoly>;
  values: Map<number, Float64Array>;
}

function encryptRound(label: string, contributors: number[]): Round {
  const crp = commonRandomPoly(ctx, epoch, label, 0);
  const c0 = new Map<number, RnsPoly>();
  const values = new Map<number, Float64Array>();
  for (const i of contributors) {
    const v = laneValues();
    values.set(i, v);
    c0.set(i, secrets.get(i)!.encrypt(v, crp));
  }
  return { label, crp, c0, values };
}

function sum(polys: Iterable<RnsPoly>): RnsPoly {
  const acc = zeroPoly(ctx);
  for (const p of polys) addInto(ctx, acc, p);
  return acc;
}

function truth(round: Round, of: Iterable<number>): Float64Array {
  const t = new Float64Array(ctx.slots);
  for (const i of of) {
    round.values.get(i)!.forEach((v, k) => {
      t[k]! += v;
    });
  }
  return t;
}

/** Site x's share for a round whose contributors are `cohort`, decrypted by `decrypting`. */
function share(x: number, cohort: number[], decrypting: number[], crp: RnsPoly): RnsPoly {
  const shareSum = sum(cohort.map((i) => held.get(x)!.get(i)!));
  return decryptionShare(ctx, roundDecryptionKey(ctx, shareSum, decrypting, x), crp);
}

function decrypt(c0: RnsPoly, cohort: number[], decrypting: number[], crp: RnsPoly): Float64Array {
  return combineShares(
    ctx,
    c0,
    decrypting.map((x) => share(x, cohort, decrypting, crp)),
  );
}

/** Largest |decoded − truth| over the slots. */
function maxError(got: Float64Array, want: Float64Array): number {
  let m = 0;
  for (let k = 0; k < want.length; k++) m = Math.max(m, Math.abs(got[k]! - want[k]!));
  return m;
}

/** Fraction of slots that decode within half an integer of the truth. */
function nearTruth(got: Float64Array, want: Float64Array): number {
  let near = 0;
  for (let k = 0; k < want.length; k++) if (Math.abs(got[k]! - want[k]!) < 0.5) near++;
  return near / want.length;
}

describe('threshold decryption', () => {
  it('Lagrange interpolation of any t dealt shares gives back the secret, of t − 1 it does not', () => {
    const s3 = secrets.get(3)!.exportWords();
    for (const set of [
      [1, 2, 3, 4],
      [2, 3, 4, 5],
      [1, 3, 4, 5],
    ]) {
      const acc = zeroPoly(ctx);
      for (const x of set) {
        const { num, den } = lagrangeAtZero(set, x);
        addInto(ctx, acc, scaleByFraction(ctx, held.get(x)!.get(3)!, num, den));
      }
      expect(acc).toEqual(s3);
    }
    const short = [1, 2, 4];
    const acc = zeroPoly(ctx);
    for (const x of short) {
      const { num, den } = lagrangeAtZero(short, x);
      addInto(ctx, acc, scaleByFraction(ctx, held.get(x)!.get(3)!, num, den));
    }
    let same = 0;
    for (let i = 0; i < acc.length; i++) if (acc[i] === s3[i]) same++;
    expect(same).toBeLessThan(3);
  });

  it('t shares decrypt the aggregate of every site exactly, whichever t answer', () => {
    const round = encryptRound('round:1', SITES);
    const c0 = sum(round.c0.values());
    const want = truth(round, SITES);
    for (const decrypting of [
      [1, 2, 3, 4],
      [2, 3, 4, 5],
      [1, 2, 4, 5],
    ]) {
      const got = decrypt(c0, SITES, decrypting, round.crp);
      const err = maxError(got, want);
      expect(err).toBeLessThan(0.5);
      expect(err).toBeLessThan(9 * thresholdSlotSigma(ctx.params, decrypting.length) + 0.01);
    }
  });

  it('the slot error has the σ the parameters predict (the scale was chosen from it)', () => {
    const round = encryptRound('round:9', SITES);
    const got = decrypt(sum(round.c0.values()), SITES, [1, 2, 3, 4], round.crp);
    const want = truth(round, SITES);
    let ss = 0;
    for (let k = 0; k < want.length; k++) ss += (got[k]! - want[k]!) ** 2;
    const ratio = Math.sqrt(ss / want.length) / thresholdSlotSigma(ctx.params, 4);
    expect(ratio).toBeGreaterThan(0.9);
    expect(ratio).toBeLessThan(1.1);
  });

  it('sites that contributed and then went silent do not block: n − t silent, the rest decrypt', () => {
    const round = encryptRound('round:2', SITES);
    const got = decrypt(sum(round.c0.values()), SITES, [1, 3, 4, 5], round.crp);
    expect(maxError(got, truth(round, SITES))).toBeLessThan(0.5);
  });

  it('a site that did not contribute still helps decrypt the aggregate of those that did', () => {
    const cohort = [1, 2, 3, 5];
    const round = encryptRound('round:3', cohort);
    const got = decrypt(sum(round.c0.values()), cohort, [2, 3, 4, 5], round.crp);
    expect(maxError(got, truth(round, cohort))).toBeLessThan(0.5);
  });

  it('t − 1 shares, or one site alone, decrypt no ciphertext of the round to its values', () => {
    const round = encryptRound('round:4', SITES);
    const c0 = sum(round.c0.values());
    const want = truth(round, SITES);
    // Three colluding sites pool shares made as if the fourth had answered, and leave it out.
    const colluders = [1, 2, 3];
    const asIfFour = [1, 2, 3, 4];
    const partial = combineShares(
      ctx,
      c0,
      colluders.map((x) => share(x, SITES, asIfFour, round.crp)),
    );
    expect(nearTruth(partial, want)).toBeLessThan(0.01);
    // Their Lagrange coefficients for a set of three: still short of the threshold.
    expect(nearTruth(decrypt(c0, SITES, colluders, round.crp), want)).toBeLessThan(0.01);
    // One site with its own shares against every site's ciphertext.
    for (const [i, c] of round.c0) {
      const alone = combineShares(ctx, c, [share(1, SITES, [1], round.crp)]);
      expect(nearTruth(alone, round.values.get(i)!)).toBeLessThan(0.01);
    }
  });

  it('the shares of a round decrypt no single update: an individual ciphertext stays masked by the others', () => {
    const round = encryptRound('round:5', SITES);
    const decrypting = [1, 2, 3, 4];
    const shares = decrypting.map((x) => share(x, SITES, decrypting, round.crp));
    const one = combineShares(ctx, round.c0.get(5)!, shares);
    expect(nearTruth(one, round.values.get(5)!)).toBeLessThan(0.01);
  });

  it('shares made for another round or another decrypting set do not combine', () => {
    const round = encryptRound('round:6', SITES);
    const other = encryptRound('round:7', SITES);
    const c0 = sum(round.c0.values());
    const want = truth(round, SITES);
    const wrongRound = [1, 2, 3, 4].map((x) => share(x, SITES, [1, 2, 3, 4], other.crp));
    expect(nearTruth(combineShares(ctx, c0, wrongRound), want)).toBeLessThan(0.01);
    // Made here only to show they do not combine: a site never makes shares for two sets at one
    // position (two such shares of one site open a·S_x by lattice reduction); its ledger refuses
    // (test/round/decryption-shares.test.ts).
    const mixed = [
      share(1, SITES, [1, 2, 3, 4], round.crp),
      share(2, SITES, [1, 2, 3, 4], round.crp),
      share(3, SITES, [1, 2, 3, 5], round.crp),
      share(5, SITES, [1, 2, 3, 5], round.crp),
    ];
    expect(nearTruth(combineShares(ctx, c0, mixed), want)).toBeLessThan(0.01);
  });

  it('a share floods its noise: share − a·λ·S is uniform in [−B, B], B = 2^λ · 21 · maxSites (λ = 47)', () => {
    const crp = commonRandomPoly(ctx, epoch, 'round:8', 0);
    const decrypting = [1, 2, 3, 4];
    const key = roundDecryptionKey(ctx, sum(SITES.map((i) => held.get(1)!.get(i)!)), decrypting, 1);
    const d = decryptionShare(ctx, key, crp);
    const ak = zeroPoly(ctx);
    mulAddInto(ctx, ak, crp, key);
    subInto(ctx, d, ak);
    const noise = centredIntegers(ctx, ctx.fromNtt(d)).map(Number);
    const bound = Number(floodingBound(ctx.params));
    expect(floodingBound(ctx.params)).toBe(2n ** 47n * 21n * 1024n);
    const max = Math.max(...noise.map(Math.abs));
    expect(max).toBeLessThanOrEqual(bound);
    expect(max).toBeGreaterThan(0.99 * bound);
    const sd = Math.sqrt(noise.reduce((a, x) => a + x * x, 0) / noise.length);
    expect(sd / (bound / Math.sqrt(3))).toBeGreaterThan(0.97);
    expect(sd / (bound / Math.sqrt(3))).toBeLessThan(1.03);
  });
});

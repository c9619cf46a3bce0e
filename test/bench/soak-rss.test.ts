import { describe, expect, it } from 'vitest';
import { RssSeries, rssEnvelopeGrowth, rssGrowth } from '../../bench/soak-rss.ts';

/** A series of one process, `rss(round)` at rounds 1…n. */
function series(n: number, rss: (round: number) => number): RssSeries {
  const s = new RssSeries(new Map([['p', 0]]));
  for (let r = 1; r <= n; r++) {
    s.rounds.push(r);
    s.rss.get('p')!.push(rss(r));
  }
  return s;
}

describe('soak RSS figures', () => {
  it('judges a bounded sawtooth flat by its envelope, whatever the windows catch of it', () => {
    // Period 170 rounds, 40 → 55 MiB: the end window (r951-1000) and the baseline (r501-550)
    // fall on different phases, so their medians differ by about a fifth.
    const saw = series(1000, (r) => 40 + 15 * ((r % 170) / 170));
    const g = rssGrowth(saw, 1000, 500).get('p')!;
    expect(Math.abs(g.growth)).toBeGreaterThan(0.1);
    const envelope = rssEnvelopeGrowth(saw, 1000, 500).get('p')!;
    expect(Math.abs(envelope.growth)).toBeLessThan(0.02);
    expect(envelope.baseMiB).toBeGreaterThan(54);
  });

  it('finds a leak by its envelope: 20 KB a round on 50 MiB over 500 rounds is about 19%', () => {
    const leak = series(1000, (r) => 50 + (r * 20) / 1024);
    const envelope = rssEnvelopeGrowth(leak, 1000, 500, 500).get('p')!;
    // The halves' 95th percentiles: rounds 738 and 988, 250 rounds apart; × 2 for 500 rounds.
    expect(rssEnvelopeGrowth(leak, 1000, 500).get('p')!.growth).toBeCloseTo(envelope.growth / 2, 6);
    expect(envelope.growth).toBeCloseTo((2 * 250 * 20) / 1024 / (50 + (738 * 20) / 1024), 3);
    expect(envelope.growth).toBeGreaterThan(0.1);
    expect(rssGrowth(leak, 1000, 500).get('p')!.growth).toBeGreaterThan(0.1);
  });
});

import { describe, expect, it } from 'vitest';
import { sha256 } from '../../../crypto/digest/index.ts';
import { BlockRejectedError } from '../../../src/errors/index.ts';
import {
  LATENCY_SAMPLES,
  SwitchTracker,
  TRACKED_COMMITS,
} from '../../../src/services/coordinator/switch-tracker.ts';

const H = (text: string) => sha256(new TextEncoder().encode(text));
const C3 = { hash: H('commit 3'), height: 2 };
const C4 = { hash: H('commit 4'), height: 3 };
const NO_ACCURACY = -1; // what an agent sends before (or without) evaluating

const report = (
  round: number,
  commitHash: Uint8Array,
  switchedUnixMs: number,
  testAccuracy = NO_ACCURACY,
) => ({
  round,
  commitHash,
  switchedUnixMs,
  testAccuracy,
});

describe('SwitchTracker', () => {
  it('measures the latency on the first report of a site and keeps it on repeats', () => {
    const t = new SwitchTracker();
    t.track(3, C3, ['site-a', 'site-b'], 10_000);
    expect(t.switched('site-a', report(3, C3.hash, 10_040))).toEqual({
      latencyMs: 40,
      first: true,
      height: 2,
      accuracy: undefined,
    });
    // The second report carries the accuracy; its later time does not change the latency.
    expect(t.switched('site-a', report(3, C3.hash, 10_900, 0.91))).toEqual({
      latencyMs: 40,
      first: false,
      height: 2,
      accuracy: 0.91,
    });
    // A clock behind the coordinator's, or no clock at all, counts as 0.
    expect(t.switched('site-b', report(3, C3.hash, 9_000)).latencyMs).toBe(0);
    const u = new SwitchTracker();
    u.track(3, C3, ['site-a'], 10_000);
    expect(u.switched('site-a', report(3, C3.hash, Number.NaN)).latencyMs).toBe(0);
  });

  it('updates the accuracy with each report and ignores unusable ones', () => {
    const t = new SwitchTracker();
    t.track(3, C3, ['site-a'], 10_000);
    expect(t.switched('site-a', report(3, C3.hash, 10_010, 0.5)).accuracy).toBe(0.5);
    expect(t.switched('site-a', report(3, C3.hash, 10_020, 0.75)).accuracy).toBe(0.75);
    expect(t.switched('site-a', report(3, C3.hash, 10_030, Number.NaN)).accuracy).toBeUndefined();
    expect(t.summary().testAccuracy).toBe(0.75);
  });

  it('refuses a switch to a commit it does not track', () => {
    const t = new SwitchTracker();
    t.track(3, C3, ['site-a'], 10_000);
    for (const [round, hash] of [
      [4, C3.hash], // untracked round
      [3, C4.hash], // tracked round, another commit
    ] as const) {
      let err: unknown;
      try {
        t.switched('site-a', report(round, hash, 10_010));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(BlockRejectedError);
      expect((err as BlockRejectedError).reason).toBe('WRONG_CONTEXT');
      expect((err as Error).message).toContain(`site-a switched to a commit of round ${round}`);
    }
    expect(t.allSwitched(3)).toBe(false);
  });

  it('knows when every expected site that is still live has switched', () => {
    const t = new SwitchTracker();
    t.track(3, C3, ['site-a', 'site-b', 'site-c'], 10_000);
    expect(t.allSwitched(3)).toBe(false);
    t.switched('site-a', report(3, C3.hash, 10_010));
    t.switched('site-b', report(3, C3.hash, 10_020));
    expect(t.allSwitched(3)).toBe(false);
    expect(t.allSwitched(3, (s) => s !== 'site-c')).toBe(true); // site-c went silent
    t.switched('site-c', report(3, C3.hash, 10_030));
    expect(t.allSwitched(3)).toBe(true);
    expect(t.allSwitched(99)).toBe(true); // nothing to wait for
    // A site that was not expected may still report.
    expect(t.switched('site-z', report(3, C3.hash, 10_040)).first).toBe(true);
  });

  it('waits for an accuracy only once some site has reported one', () => {
    const t = new SwitchTracker();
    t.track(3, C3, ['site-a'], 10_000);
    t.track(4, C4, ['site-a'], 20_000);
    t.switched('site-a', report(3, C3.hash, 10_010));
    expect(t.accuracyReported(3)).toBe(true); // nobody evaluates
    expect(t.accuracyReported(4)).toBe(true);
    t.switched('site-a', report(3, C3.hash, 10_500, 0.8));
    expect(t.accuracyReported(3)).toBe(true);
    expect(t.accuracyReported(4)).toBe(false);
    t.switched('site-a', report(4, C4.hash, 20_500, 0.85));
    expect(t.accuracyReported(4)).toBe(true);
  });

  it('summarises latencies of its own rounds (nearest rank) and the latest mean accuracy', () => {
    const t = new SwitchTracker();
    expect(t.summary()).toEqual({ count: 0, p50Ms: undefined, p99Ms: undefined, testAccuracy: undefined });
    // Seeded from the log by a restarted coordinator: accepted, but not in the latencies.
    t.track(2, { hash: H('commit 2'), height: 1 }, ['site-a'], 0, false);
    t.switched('site-a', report(2, H('commit 2'), 60_000, 0.7));
    expect(t.summary()).toEqual({ count: 0, p50Ms: undefined, p99Ms: undefined, testAccuracy: 0.7 });

    t.track(3, C3, ['site-a', 'site-b'], 10_000);
    t.track(4, C4, ['site-a', 'site-b'], 20_000);
    t.switched('site-a', report(3, C3.hash, 10_030));
    t.switched('site-b', report(3, C3.hash, 10_010));
    t.switched('site-a', report(4, C4.hash, 20_040, 0.8));
    t.switched('site-b', report(4, C4.hash, 20_020, 0.9));
    // Latencies 10, 20, 30, 40: p50 is the 2nd, p99 the 4th; accuracy is round 4's mean.
    const s = t.summary();
    expect(s.count).toBe(4);
    expect(s.p50Ms).toBe(20);
    expect(s.p99Ms).toBe(40);
    expect(s.testAccuracy).toBeCloseTo(0.85, 12);
  });

  it('takes the nearest rank over a hundred latencies', () => {
    const t = new SwitchTracker();
    const sites = Array.from({ length: 100 }, (_, i) => `site-${i}`);
    t.track(5, C3, sites, 0);
    // Latencies 1..100 ms, reported in a shuffled order.
    for (const i of [...sites.keys()].sort((a, b) => ((a * 37) % 100) - ((b * 37) % 100)))
      t.switched(sites[i]!, report(5, C3.hash, i + 1));
    expect(t.summary()).toMatchObject({ count: 100, p50Ms: 50, p99Ms: 99 });
    t.switched('site-100', report(5, C3.hash, 1000));
    expect(t.summary()).toMatchObject({ count: 101, p50Ms: 51, p99Ms: 100 });
  });

  it('keeps the newest commits and latencies only: a long run holds a bounded record', () => {
    const t = new SwitchTracker();
    const rounds = TRACKED_COMMITS + 10;
    for (let r = 1; r <= rounds; r++) {
      const c = { hash: H(`commit ${r}`), height: r };
      t.track(r, c, ['site-a'], 1000 * r);
      t.switched('site-a', report(r, c.hash, 1000 * r + r)); // round r's latency: r ms
    }
    // Reports on the oldest commits are refused as unknown now; the newest still count.
    expect(() => t.switched('site-a', report(1, H('commit 1'), 5000))).toThrow(/did not announce/);
    expect(t.switched('site-a', report(rounds, H(`commit ${rounds}`), 0)).first).toBe(false);
    expect(t.allSwitched(1)).toBe(true); // nothing tracked: nobody to wait for
    expect(t.summary()).toMatchObject({ count: rounds, p50Ms: Math.ceil(rounds / 2) });
    // Latencies: a ring of the newest LATENCY_SAMPLES.
    const many = new SwitchTracker();
    const sites = Array.from({ length: 100 }, (_, i) => `site-${i}`);
    const commits = LATENCY_SAMPLES / 100 + 5;
    for (let r = 1; r <= commits; r++) {
      const c = { hash: H(`c ${r}`), height: r };
      many.track(r, c, sites, 0);
      for (const s of sites) many.switched(s, report(r, c.hash, r)); // latency r ms
    }
    const sum = many.summary();
    expect(sum.count).toBe(LATENCY_SAMPLES);
    // The five oldest commits' latencies (1-5 ms) fell out of the ring: 6-105 ms remain, 100 of
    // each, so the nearest-rank median (rank 5,000) is 55 ms and the minimum 6 ms.
    expect(sum.p50Ms).toBe(55);
    expect(commits).toBe(105);
  });
});

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('cohort demo (nats-server, coordinator, 2 aggregators, 4 agents as processes)', () => {
  it('commits every round under threshold keys, prints what it did, learns, and keeps every member’s log', () => {
    const r = spawnSync(
      process.execPath,
      ['bin/cohort.js', 'demo', '--rounds', '2', '--train-limit', '8000', '--keep'],
      { encoding: 'utf8', timeout: 240_000 },
    );
    const kept = /kept (\S+)/.exec(r.stderr)?.[1];
    try {
      expect(r.status, r.stderr).toBe(0);
      const out = r.stdout;
      expect(out).toContain('key ceremony done');
      // Threshold keys by default: no whole secret key, each site's public share fingerprint printed.
      expect(out).toMatch(/he mode \(threshold keys\)/);
      expect(out).toMatch(/any 3 of 4 sites decrypt, no whole secret key written anywhere/);
      expect(out.match(/^ {2}site-\d \(point \d\) public share [0-9a-f]{16}$/gm)).toHaveLength(4);
      expect(out).toMatch(/started 2 aggregators and 4 agents/);
      const rounds = out
        .split('\n')
        .filter((l) => /^round \d+: 4\/4 contributors, COMMIT [0-9a-f]{12}/.test(l));
      expect(rounds).toHaveLength(2);
      for (const line of rounds) expect(line).toMatch(/sites sent [\d.]+ MiB/);
      // Each round's federated evaluation of the model it started from, summed over the sites.
      expect(
        out.match(/^ {2}federated evaluation of [0-9a-f]{12}: accuracy [\d.]+% \(\d+\/\d+\)/gm),
      ).toHaveLength(2);
      const accuracy = [...out.matchAll(/test accuracy ([\d.]+)%/g)].map((m) => Number(m[1]));
      expect(accuracy.length).toBeGreaterThanOrEqual(2);
      // 8,000 training images over 4 sites, 2 rounds: well above chance, below the full demo's ≈ 97%.
      expect(accuracy.at(-1)!).toBeGreaterThanOrEqual(85);
      expect(out).toMatch(/done: 2 rounds, 2 committed, 0 aborted/);
      // The auditor verifies the log as its read-only user: both aggregates re-added from the
      // 4 sites' stored updates, byte for byte.
      expect(out).toMatch(
        /^audit \(auditor-1, read-only NATS user\): verified \d+ log entries — signatures, hash chain, 2 commits, 8 votes, 2 aggregates re-added from 8 stored updates, byte-identical; 0 problems$/m,
      );
      // Every member's log is kept: its JSON log lines (each one whole object) and its CLI's lines.
      const logs = readdirSync(kept!).filter((f) => f.endsWith('.log'));
      expect(logs.sort()).toEqual(
        ['agg-1', 'agg-2', 'coordinator', 'site-1', 'site-2', 'site-3', 'site-4'].map((m) => `${m}.log`),
      );
      for (const file of logs) {
        const lines = readFileSync(join(kept!, file), 'utf8')
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('{'));
        expect(lines.length, file).toBeGreaterThan(3);
        for (const line of lines) expect(() => JSON.parse(line), `${file}: ${line}`).not.toThrow();
      }
    } finally {
      if (kept !== undefined) rmSync(kept, { recursive: true, force: true });
    }
  });
});

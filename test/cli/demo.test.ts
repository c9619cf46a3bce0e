import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('cohort demo (nats-server, coordinator, 2 aggregators, 4 agents as processes)', () => {
  it('commits every round, prints what it did, and learns', () => {
    const r = spawnSync(
      process.execPath,
      ['bin/cohort.js', 'demo', '--rounds', '2', '--train-limit', '8000'],
      { encoding: 'utf8', timeout: 240_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    const out = r.stdout;
    expect(out).toContain('key ceremony done');
    expect(out).toMatch(/started 2 aggregators and 4 agents/);
    const rounds = out
      .split('\n')
      .filter((l) => /^round \d+: 4\/4 contributors, COMMIT [0-9a-f]{12}/.test(l));
    expect(rounds).toHaveLength(2);
    for (const line of rounds) expect(line).toMatch(/sites sent [\d.]+ MiB/);
    const accuracy = [...out.matchAll(/test accuracy ([\d.]+)%/g)].map((m) => Number(m[1]));
    expect(accuracy.length).toBeGreaterThanOrEqual(2);
    // 8,000 training images over 4 sites, 2 rounds: well above chance, below the full demo's ≈ 97%.
    expect(accuracy.at(-1)!).toBeGreaterThanOrEqual(85);
    expect(out).toMatch(/done: 2 rounds, 2 committed, 0 aborted/);
  });
});

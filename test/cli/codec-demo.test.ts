import { describe, expect, it } from 'vitest';
import { cohort } from '../helpers/run-cli.ts';

describe('cohort codec demo', () => {
  it('runs sites → aggregator → decrypt with exact sums and shows tampering rejected', async () => {
    const r = await cohort(
      'codec',
      'demo',
      '--sites',
      '3',
      '--params',
      '30000',
      '--rounds',
      '2',
      '--bits',
      '2',
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => /^\s+\d+ \|/.test(l));
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toContain('exact');
    expect(r.stdout).toContain('bit flip in a ciphertext: rejected CRC_MISMATCH');
    expect(r.stdout).toContain('block replayed into round 2: rejected WRONG_CONTEXT');
    expect(r.stdout).toContain('truncated block: rejected TRUNCATED');
  });

  it('names a bad option', async () => {
    const r = await cohort('codec', 'demo', '--bits', '3');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--bits 3 must be 1, 2, 4 or 8');
  });
});

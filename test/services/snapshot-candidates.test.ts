// Which logged snapshots a joining site tries, in which order, and how refusals are remembered
// (src/services/agent/snapshot-candidates.ts, snapshot-refusals.ts).
import { describe, expect, it } from 'vitest';
import { snapshotCandidates } from '../../src/services/agent/snapshot-candidates.ts';
import { SnapshotRefusals } from '../../src/services/agent/snapshot-refusals.ts';
import type { LogEntry, LoggedSnapshot } from '../../src/services/federation-log/index.ts';

function logged(sequence: number, height: number, site: string, digestByte = sequence): LoggedSnapshot {
  return {
    entry: { sequence } as LogEntry,
    snapshot: {
      commitHash: new Uint8Array(32).fill(height),
      height,
      object: `height-${height}-${site}`,
      digest: new Uint8Array(32).fill(digestByte),
      bytes: 100,
      site,
    },
  };
}

const order = (list: readonly LoggedSnapshot[]) => list.map((s) => s.entry.sequence);

describe('snapshotCandidates', () => {
  const all = [
    logged(5, 2, 'site-2'),
    logged(9, 6, 'site-5'),
    logged(7, 4, 'site-3'),
    logged(11, 6, 'site-1'),
  ];

  it('tries the highest height first, and at one height the earliest recorded', () => {
    expect(order(snapshotCandidates(all, { above: -1, atOrBelow: 10 }))).toEqual([9, 11, 7, 5]);
  });

  it('keeps heights in (above, atOrBelow]', () => {
    expect(order(snapshotCandidates(all, { above: 2, atOrBelow: 5 }))).toEqual([7]);
    expect(order(snapshotCandidates(all, { above: 4, atOrBelow: 4 }))).toEqual([]);
    expect(order(snapshotCandidates(all, { above: -1, atOrBelow: 2 }))).toEqual([5]);
  });

  it('leaves out what was refused, so the one below is next', () => {
    const refusals = new SnapshotRefusals();
    refusals.record(all[1]!, {
      height: 6,
      object: all[1]!.snapshot.object,
      site: 'site-5',
      signer: 'site-5',
      reason: 'SNAPSHOT_MODEL_MISMATCH',
      message: 'wrong model',
    });
    const left = snapshotCandidates(all, { above: -1, atOrBelow: 10 }, (s) => refusals.has(s));
    expect(order(left)).toEqual([11, 7, 5]);
  });
});

describe('SnapshotRefusals', () => {
  it('counts by reason and by the signer held responsible, and remembers object and digest', () => {
    const r = new SnapshotRefusals();
    const bad = logged(9, 6, 'site-5');
    r.record(bad, {
      height: 6,
      object: bad.snapshot.object,
      site: 'site-5',
      signer: 'site-5',
      reason: 'SNAPSHOT_MODEL_MISMATCH',
      message: 'm',
    });
    const tampered = logged(5, 2, 'site-2');
    r.record(tampered, {
      height: 2,
      object: tampered.snapshot.object,
      site: 'site-2',
      signer: undefined,
      reason: 'SNAPSHOT_DIGEST_MISMATCH',
      message: 'm',
    });
    expect(r.total).toBe(2);
    expect(r.byReason()).toEqual({ SNAPSHOT_MODEL_MISMATCH: 1, SNAPSHOT_DIGEST_MISMATCH: 1 });
    expect(r.bySigner()).toEqual({ 'site-5': 1 });
    expect(r.recent.map((x) => x.reason)).toEqual(['SNAPSHOT_MODEL_MISMATCH', 'SNAPSHOT_DIGEST_MISMATCH']);
    expect(r.has(bad)).toBe(true);
    // The same object name with other bytes is another snapshot.
    expect(r.has(logged(9, 6, 'site-5', 0xee))).toBe(false);
  });

  it('keeps the last 32 refusals', () => {
    const r = new SnapshotRefusals();
    for (let i = 0; i < 40; i++) {
      const s = logged(i + 1, i, 'site-5');
      r.record(s, {
        height: i,
        object: s.snapshot.object,
        site: 'site-5',
        signer: 'site-5',
        reason: 'X',
        message: '',
      });
    }
    expect(r.total).toBe(40);
    expect(r.recent.length).toBe(32);
    expect(r.recent[0]!.height).toBe(8);
  });
});

// The transport limits of a member's intake subscriptions (src/services/intake-limits.ts): a
// snapshot subscription takes the model's largest snapshot as its cap, never the 64 MiB frame cap.
import { describe, expect, it } from 'vitest';
import type { MemberContext } from '../../src/services/index.ts';
import { intakeLimits } from '../../src/services/intake-limits.ts';
import { maxSnapshotBytes } from '../../src/versions/snapshot.ts';

// Only what intakeLimits reads of a member's context (the largest ciphertext, the contributor cap).
const ctx = {
  ckks: { maxCiphertextBytes: 400_000 },
  config: { codec: { maxContributors: 8 } },
} as unknown as MemberContext;
const onDrop = () => {};

describe('intakeLimits', () => {
  it('caps a snapshot subscription at the bound it is given (the model’s largest snapshot)', () => {
    const cap = maxSnapshotBytes(7850);
    const limits = intakeLimits(ctx, 'snapshot', onDrop, cap);
    expect(limits.maxMessageBytes).toBe(cap);
    expect(limits.rateLimit).toEqual({ perSecond: 200, burst: 1000 });
  });

  it('refuses a snapshot subscription without a bound, and a bound for another kind', () => {
    expect(() => intakeLimits(ctx, 'snapshot', onDrop)).toThrow(/snapshotMaxBytes must be a positive/);
    expect(() => intakeLimits(ctx, 'snapshot', onDrop, 0)).toThrow(/snapshotMaxBytes/);
    expect(() => intakeLimits(ctx, 'snapshot', onDrop, 1.5)).toThrow(/snapshotMaxBytes/);
    expect(() => intakeLimits(ctx, 'heartbeat', onDrop, 1000)).toThrow(/not heartbeat/);
  });

  it('reports every drop but a request’s own retry', () => {
    const seen: string[] = [];
    const limits = intakeLimits(ctx, 'heartbeat', (r) => seen.push(r));
    limits.onDrop!('OVERSIZE', 's');
    limits.onDrop!('DUPLICATE', 's');
    expect(seen).toEqual(['OVERSIZE']);
  });
});

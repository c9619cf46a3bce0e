import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/transport/rate-limiter.ts';

describe('RateLimiter', () => {
  it('gives each sender a bucket of `burst` refilled at `perSecond`', () => {
    let now = 1_000;
    const r = new RateLimiter({ perSecond: 2, burst: 3 }, 4096, () => now);
    expect([1, 2, 3, 4].map(() => r.take('s.a'))).toEqual([true, true, true, false]);
    expect(r.take('s.b')).toBe(true); // another sender is unaffected
    now += 499;
    expect(r.take('s.a')).toBe(false);
    now += 1;
    expect(r.take('s.a')).toBe(true); // 500 ms at 2/s: one token
    expect(r.take('s.a')).toBe(false);
    now += 60_000;
    expect([1, 2, 3, 4].map(() => r.take('s.a'))).toEqual([true, true, true, false]); // capped at burst
  });

  it('maps subjects to senders and bounds the number of buckets', () => {
    const r = new RateLimiter(
      { perSecond: 0.001, burst: 1, senderOf: (s) => s.split('.')[1] ?? s },
      2,
      () => 0,
    );
    expect(r.take('x.site-a.1')).toBe(true);
    expect(r.take('x.site-a.2')).toBe(false); // the same sender
    expect(r.take('x.site-b.1')).toBe(true);
    expect(r.take('x.site-c.1')).toBe(true);
    expect(r.size).toBe(2); // site-a was the least recently used: forgotten
    const failing = new RateLimiter({
      perSecond: 1,
      burst: 1,
      senderOf: () => {
        throw new Error('boom');
      },
    });
    expect(failing.take('a')).toBe(true);
    expect(failing.take('a')).toBe(false); // falls back to the subject
  });

  it('refuses malformed options', () => {
    expect(() => new RateLimiter({ perSecond: 0, burst: 1 })).toThrow(/perSecond/);
    expect(() => new RateLimiter({ perSecond: Number.NaN, burst: 1 })).toThrow(/perSecond/);
    expect(() => new RateLimiter({ perSecond: 1, burst: 0.5 })).toThrow(/burst/);
  });
});

import { describe, expect, it } from 'vitest';
import { SeenCache, seenKey } from '../../src/transport/seen-cache.ts';

describe('seenKey and SeenCache', () => {
  it('keys by subject, id, bytes and headers, never by id alone', () => {
    const data = new Uint8Array([1, 2, 3]);
    const k = seenKey('s.a', 'id1', data, { A: '1' });
    expect(seenKey('s.a', 'id1', new Uint8Array([1, 2, 3]), { A: '1' })).toBe(k);
    expect(seenKey('s.b', 'id1', data, { A: '1' })).not.toBe(k);
    expect(seenKey('s.a', 'id2', data, { A: '1' })).not.toBe(k);
    expect(seenKey('s.a', 'id1', new Uint8Array([1, 2, 4]), { A: '1' })).not.toBe(k);
    expect(seenKey('s.a', 'id1', data, { A: '2' })).not.toBe(k);
    expect(seenKey('s.a', 'id1', data, {})).not.toBe(k);
    // Header boundaries are unambiguous.
    expect(seenKey('s', 'i', data, { ab: 'c' })).not.toBe(seenKey('s', 'i', data, { a: 'bc' }));
  });

  it('keeps at most `capacity` entries, least recently used evicted', () => {
    const c = new SeenCache(2);
    c.set('a', { state: 'running' });
    c.set('b', { state: 'running' });
    c.get('a');
    c.set('c', { state: 'done', reply: new Uint8Array(0) });
    expect(c.size).toBe(2);
    expect(c.get('b')).toBeUndefined();
    expect(c.get('a')).toEqual({ state: 'running' });
  });

  it('keeps its own copy of a reply that is a view into a larger buffer', () => {
    const c = new SeenCache(2);
    const pool = new Uint8Array(8192).fill(9);
    const view = pool.subarray(100, 104);
    c.set('a', { state: 'done', reply: view });
    const kept = c.get('a');
    if (kept?.state !== 'done') throw new Error('entry lost');
    expect(kept.reply).toEqual(new Uint8Array([9, 9, 9, 9]));
    expect(kept.reply.buffer.byteLength).toBe(4);
    // A reply that owns its whole buffer is kept as it is.
    const whole = new Uint8Array([1, 2]);
    c.set('b', { state: 'done', reply: whole });
    expect((c.get('b') as { reply: Uint8Array }).reply).toBe(whole);
  });

  it('forgets an entry once it has gone unused for the TTL', () => {
    let now = 1_000;
    const c = new SeenCache(100, 50, () => now);
    c.set('a', { state: 'running' });
    c.set('b', { state: 'running' });
    now = 1_040;
    expect(c.get('a')).toEqual({ state: 'running' }); // used again: its 50 ms start over
    now = 1_060;
    c.set('c', { state: 'running' });
    expect(c.size).toBe(2); // b: unused for 60 ms
    expect(c.get('b')).toBeUndefined();
    now = 1_085;
    expect(c.get('a')).toBeDefined();
    now = 1_200;
    expect(c.get('a')).toBeUndefined();
    expect(c.size).toBe(0);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type ChunkFrame,
  crcHex,
  PART_OVERHEAD_BYTES,
  Reassembler,
  type ReassemblyDropReason,
  splitChunks,
} from '../../src/transport/index.ts';
import {
  assertReceiveLimits,
  pendingChargeBound,
  resolveLimits,
  TRANSPORT_DEFAULTS,
} from '../../src/transport/transport-limits.ts';

function frames(id: string, data: Uint8Array, chunkSize: number): ChunkFrame[] {
  const chunks = splitChunks(data, chunkSize);
  return chunks.map((c, index) => ({
    id,
    index,
    count: chunks.length,
    length: data.length,
    crc: Number.parseInt(crcHex(c), 16),
    data: c,
  }));
}

function bytes(n: number, fill: number): Uint8Array {
  return new Uint8Array(n).fill(fill);
}

function reassembler(drops: [string, string, ReassemblyDropReason][] = [], over: object = {}) {
  return new Reassembler<string>({
    timeoutMs: 1000,
    maxPending: 8,
    maxPendingBytes: 1 << 20,
    onDrop: (s, id, r) => drops.push([s, id, r]),
    ...over,
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Reassembler', () => {
  it('reassembles out of order, returns the meta of chunk 0 and copies buffered parts', () => {
    const r = reassembler();
    const data = Uint8Array.from({ length: 2500 }, (_, i) => i & 0xff);
    const [f0, f1, f2] = frames('m1', data, 1024);
    expect(r.accept('s', f2!, 'meta-2').status).toBe('pending');
    expect(r.accept('s', f0!, 'meta-0').status).toBe('pending');
    f0!.data.fill(0); // the caller's buffer is reused: the reassembler kept a copy
    const done = r.accept('s', f1!, 'meta-1');
    expect(done.status).toBe('complete');
    if (done.status !== 'complete') return;
    expect(
      Buffer.compare(
        done.data,
        Uint8Array.from({ length: 2500 }, (_, i) => i & 0xff),
      ),
    ).toBe(0);
    expect(done.meta).toBe('meta-0');
    expect(r.pendingCount).toBe(0);
    expect(r.pendingBytes).toBe(0);
  });

  it('keys pending messages by subject and id: one sender cannot disturb another', () => {
    const r = reassembler();
    const a = frames('same', bytes(2048, 1), 1024);
    const b = frames('same', bytes(3072, 2), 1024);
    expect(r.accept('from.a', a[0]!).status).toBe('pending');
    expect(r.accept('from.b', b[0]!).status).toBe('pending');
    expect(r.accept('from.b', b[1]!).status).toBe('pending');
    expect(r.accept('from.b', b[2]!).status).toBe('complete');
    const done = r.accept('from.a', a[1]!);
    expect(done.status === 'complete' && done.data.every((x) => x === 1)).toBe(true);
  });

  it('charges only what was received, never the declared count', () => {
    const r = reassembler();
    const f: ChunkFrame = {
      id: 'big',
      index: 0,
      count: 65_536,
      length: 64 << 20,
      crc: 0,
      data: bytes(1024, 1),
    };
    expect(r.accept('s', f).status).toBe('pending');
    expect(r.pendingBytes).toBe(1024 + PART_OVERHEAD_BYTES);
    expect(r.accept('s', f).status).toBe('duplicate');
    expect(r.pendingBytes).toBe(1024 + PART_OVERHEAD_BYTES);
  });

  it('refuses chunks whose size does not fit the declared count, and disagreeing siblings', () => {
    const r = reassembler();
    const base = { crc: 0, data: bytes(1024, 1) };
    // ceil(10240 / 1024) = 10 chunks, not 5.
    const odd = r.accept('s', { ...base, id: 'odd', index: 0, count: 5, length: 10_240 });
    expect(odd.status === 'refused' && odd.fault.reason).toBe('CHUNK_MISMATCH');
    expect(r.pendingCount).toBe(0);
    // A later non-last chunk of another size.
    expect(r.accept('s', { ...base, id: 'x', index: 0, count: 3, length: 3000 }).status).toBe('pending');
    const other = r.accept('s', { ...base, id: 'x', index: 1, count: 3, length: 3000, data: bytes(1000, 1) });
    expect(other.status === 'refused' && other.fault.reason).toBe('CHUNK_MISMATCH');
    expect(r.pendingCount).toBe(0);
    // Another count or length than chunk 0 said.
    expect(r.accept('s', { ...base, id: 'y', index: 0, count: 2, length: 2048 }).status).toBe('pending');
    const count = r.accept('s', { ...base, id: 'y', index: 1, count: 3, length: 2048 });
    expect(count.status === 'refused' && count.fault.reason).toBe('CHUNK_MISMATCH');
    // A last chunk that does not complete the length.
    expect(r.accept('s', { ...base, id: 'z', index: 0, count: 2, length: 2048 }).status).toBe('pending');
    const short = r.accept('s', { ...base, id: 'z', index: 1, count: 2, length: 2048, data: bytes(10, 1) });
    expect(short.status === 'refused' && short.fault.reason).toBe('CHUNK_MISMATCH');
    // A one-chunk message whose bytes are not its declared length.
    const one = r.accept('s', { ...base, id: 'w', index: 0, count: 1, length: 2000 });
    expect(one.status === 'refused' && one.fault.reason).toBe('CHUNK_MISMATCH');
    expect(r.pendingBytes).toBe(0);
  });

  it('drops the oldest incomplete message to stay within bounds, and expires the others', () => {
    vi.useFakeTimers();
    const drops: [string, string, ReassemblyDropReason][] = [];
    const r = reassembler(drops, { maxPending: 2, maxPendingBytes: 3 * (1024 + PART_OVERHEAD_BYTES) });
    for (const id of ['a', 'b', 'c']) r.accept('s', frames(id, bytes(2048, 1), 1024)[0]!);
    expect(drops).toEqual([['s', 'a', 'REASSEMBLY_MEMORY']]);
    // Another sender needing the room of both others: only its own message can go, not theirs.
    const d = r.accept('t', frames('d', bytes(6000, 1), 3000)[0]!);
    expect(d).toEqual({ status: 'dropped', reason: 'REASSEMBLY_MEMORY' });
    expect(drops.map((x) => x[1])).toEqual(['a', 'd']);
    expect(r.pendingCount).toBe(2);
    vi.advanceTimersByTime(1001);
    expect(drops.slice(2).map((x) => [x[1], x[2]])).toEqual([
      ['b', 'REASSEMBLY_TIMEOUT'],
      ['c', 'REASSEMBLY_TIMEOUT'],
    ]);
    expect(r.pendingBytes).toBe(0);
    expect(r.pendingSenders).toBe(0);
  });

  it('gives each sender its own share: a flood evicts only the flooding sender’s messages', () => {
    const drops: [string, string, ReassemblyDropReason][] = [];
    const r = reassembler(drops, { maxPending: 16, maxPendingPerSender: 3, maxPendingBytes: 1 << 20 });
    const honest = frames('honest', bytes(2048, 7), 1024);
    expect(r.accept('snapshot.site-1', honest[0]!).status).toBe('pending');
    for (let i = 0; i < 100; i++) r.accept('snapshot.site-5', frames(`flood-${i}`, bytes(2048, 1), 1024)[0]!);
    // site-5 keeps its three newest; each older one was its own eviction.
    expect(drops).toHaveLength(97);
    expect(
      drops.every(([s, , reason]) => s === 'snapshot.site-5' && reason === 'REASSEMBLY_SENDER_SHARE'),
    ).toBe(true);
    expect(r.shareOf('snapshot.site-5').messages).toBe(3);
    const done = r.accept('snapshot.site-1', honest[1]!);
    expect(done.status === 'complete' && done.data.every((x) => x === 7)).toBe(true);
  });

  it('bounds a sender’s bytes, keeps the newest, and charges a sender named by senderOf', () => {
    const drops: [string, string, ReassemblyDropReason][] = [];
    const part = 1024 + PART_OVERHEAD_BYTES;
    const r = reassembler(drops, {
      maxPendingBytesPerSender: 2 * part,
      senderOf: (subject: string) => subject.split('.').at(-1)!,
    });
    // Two subjects of one sender share its byte share.
    r.accept('update.agg-1.site-5', frames('x', bytes(3072, 1), 1024)[0]!);
    r.accept('update.agg-2.site-5', frames('y', bytes(3072, 1), 1024)[0]!);
    expect(drops).toEqual([]);
    expect(r.accept('update.agg-2.site-5', frames('y', bytes(3072, 1), 1024)[1]!).status).toBe('pending');
    expect(drops).toEqual([['update.agg-1.site-5', 'x', 'REASSEMBLY_SENDER_SHARE']]);
    expect(r.shareOf('site-5')).toEqual({ messages: 1, bytes: 2 * part });
    // A message larger than the share cannot be buffered: its own chunk drops it.
    const big = frames('z', bytes(4096, 2), 1024);
    const r2 = reassembler(drops, { maxPendingBytesPerSender: 2 * part });
    r2.accept('s', big[0]!);
    r2.accept('s', big[1]!);
    expect(r2.accept('s', big[2]!)).toEqual({ status: 'dropped', reason: 'REASSEMBLY_SENDER_SHARE' });
    expect(r2.pendingCount).toBe(0);
    expect(r2.pendingBytes).toBe(0);
  });

  it('a failing senderOf charges the subject itself', () => {
    const r = reassembler([], {
      maxPendingPerSender: 1,
      senderOf: () => {
        throw new Error('no sender');
      },
    });
    expect(r.accept('a', frames('1', bytes(2048, 1), 1024)[0]!).status).toBe('pending');
    expect(r.accept('b', frames('2', bytes(2048, 1), 1024)[0]!).status).toBe('pending');
    expect(r.pendingSenders).toBe(2);
  });
});

describe('resolveLimits: each sender’s share', () => {
  it('defaults to 8 messages and an eighth of the bytes, at least one whole message, within the bounds', () => {
    const d = resolveLimits({});
    expect(d.maxPendingMessagesPerSender).toBe(TRANSPORT_DEFAULTS.maxPendingMessagesPerSender);
    // A 64 MiB message in 1 KiB chunks is charged more than an eighth of 128 MiB.
    expect(d.maxPendingBytesPerSender).toBe(pendingChargeBound(TRANSPORT_DEFAULTS.maxMessageBytes));
    expect(d.maxPendingBytesPerSender).toBeLessThanOrEqual(d.maxPendingBytes);
    const heartbeat = resolveLimits({}, { maxMessageBytes: 8192 });
    expect(heartbeat.maxPendingBytesPerSender).toBe(16 * 1024 * 1024);
    const small = resolveLimits(
      { maxPendingMessages: 2, maxPendingBytes: 4096 },
      { maxMessageBytes: 1 << 20 },
    );
    expect(small).toMatchObject({ maxPendingMessagesPerSender: 2, maxPendingBytesPerSender: 4096 });
    const own = resolveLimits(
      { maxPendingMessagesPerSender: 3 },
      { maxPendingBytesPerSender: 5000, maxPendingMessagesPerSender: 1 },
    );
    expect(own).toMatchObject({ maxPendingMessagesPerSender: 1, maxPendingBytesPerSender: 5000 });
    expect(pendingChargeBound(0)).toBe(PART_OVERHEAD_BYTES);
    expect(pendingChargeBound(2048)).toBe(2048 + 2 * PART_OVERHEAD_BYTES);
  });

  it('refuses a malformed share', () => {
    expect(() => assertReceiveLimits('o.', { maxPendingMessagesPerSender: -1 })).toThrow(
      /o\.maxPendingMessagesPerSender/,
    );
    expect(() => assertReceiveLimits('o.', { maxPendingBytesPerSender: 1.5 })).toThrow(
      /o\.maxPendingBytesPerSender/,
    );
    expect(() => pendingChargeBound(-1)).toThrow(/bytes/);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type ChunkFrame,
  crcHex,
  PART_OVERHEAD_BYTES,
  Reassembler,
  type ReassemblyDropReason,
  splitChunks,
} from '../../src/transport/index.ts';

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
    r.accept('t', frames('d', bytes(6000, 1), 3000)[0]!); // needs the room of both others
    expect(drops.map((d) => d[1])).toEqual(['a', 'b', 'c']);
    expect(r.pendingCount).toBe(1);
    vi.advanceTimersByTime(1001);
    expect(drops.at(-1)).toEqual(['t', 'd', 'REASSEMBLY_TIMEOUT']);
    expect(r.pendingBytes).toBe(0);
  });
});

// SharedLogReads: the log readers given one share each verified entry (a swarm's sites); readers
// without one read every entry themselves. No process-wide switch: two caches never mix.
import { describe, expect, it } from 'vitest';
import {
  type LogEntry,
  SHARED_LOG_READS_SIZE,
  SharedLogReads,
} from '../../../src/services/federation-log/index.ts';

const entry = (sequence: number) => ({ sequence }) as unknown as LogEntry;

describe('SharedLogReads', () => {
  it('reads an entry once per stream, coordinator and sequence, concurrent readers included', async () => {
    const shared = new SharedLogReads();
    let reads = 0;
    const read = async () => entry(++reads);
    const [a, b] = await Promise.all([shared.read('S', 'c', 7, read), shared.read('S', 'c', 7, read)]);
    expect(a).toBe(b);
    expect(await shared.read('S', 'c', 7, read)).toBe(a);
    expect(reads).toBe(1);
    await shared.read('S', 'other-coordinator', 7, read);
    await shared.read('T', 'c', 7, read);
    await shared.read('S', 'c', 8, read);
    expect(reads).toBe(4);
  });

  it('two of them share nothing', async () => {
    let reads = 0;
    const read = async () => entry(++reads);
    await new SharedLogReads().read('S', 'c', 1, read);
    await new SharedLogReads().read('S', 'c', 1, read);
    expect(reads).toBe(2);
  });

  it('does not remember a failed read', async () => {
    const shared = new SharedLogReads();
    let calls = 0;
    const failing = async (): Promise<LogEntry> => {
      calls++;
      throw new Error('unavailable');
    };
    await expect(shared.read('S', 'c', 20, failing)).rejects.toThrow('unavailable');
    const ok = await shared.read('S', 'c', 20, async () => entry(20));
    expect(ok.sequence).toBe(20);
    expect(calls).toBe(1);
  });

  it('forgets the oldest entry beyond its size', async () => {
    const shared = new SharedLogReads();
    let reads = 0;
    const read = async () => entry(++reads);
    await shared.read('E', 'c', 0, read);
    for (let i = 1; i <= SHARED_LOG_READS_SIZE; i++) await shared.read('E', 'c', i, read);
    expect(reads).toBe(SHARED_LOG_READS_SIZE + 1);
    expect(shared.size).toBe(SHARED_LOG_READS_SIZE);
    await shared.read('E', 'c', SHARED_LOG_READS_SIZE, read);
    expect(reads).toBe(SHARED_LOG_READS_SIZE + 1);
    await shared.read('E', 'c', 0, read);
    expect(reads).toBe(SHARED_LOG_READS_SIZE + 2);
    expect(() => new SharedLogReads(0)).toThrow(/size/);
  });
});

import { describe, expect, it } from 'vitest';
import {
  type LogEntry,
  logReadsShared,
  SHARED_LOG_READS_SIZE,
  shareLogReads,
} from '../../../src/services/federation-log/index.ts';
import { sharedLogRead } from '../../../src/services/federation-log/shared-log-reads.ts';

// The cache is process-wide and only ever turned on: this file runs in its own worker.
const entry = (sequence: number) => ({ sequence }) as unknown as LogEntry;

describe('sharedLogRead', () => {
  it('reads every time while sharing is off', async () => {
    expect(logReadsShared()).toBe(false);
    let reads = 0;
    const read = async () => entry(++reads);
    await sharedLogRead('S', 'c', 1, read);
    await sharedLogRead('S', 'c', 1, read);
    expect(reads).toBe(2);
  });

  it('once on, reads an entry once per stream, coordinator and sequence, concurrent readers included', async () => {
    shareLogReads();
    expect(logReadsShared()).toBe(true);
    let reads = 0;
    const read = async () => entry(++reads);
    const [a, b] = await Promise.all([sharedLogRead('S', 'c', 7, read), sharedLogRead('S', 'c', 7, read)]);
    expect(a).toBe(b);
    expect(await sharedLogRead('S', 'c', 7, read)).toBe(a);
    expect(reads).toBe(1);
    await sharedLogRead('S', 'other-coordinator', 7, read);
    await sharedLogRead('T', 'c', 7, read);
    await sharedLogRead('S', 'c', 8, read);
    expect(reads).toBe(4);
  });

  it('does not remember a failed read', async () => {
    shareLogReads();
    let calls = 0;
    const failing = async (): Promise<LogEntry> => {
      calls++;
      throw new Error('unavailable');
    };
    await expect(sharedLogRead('S', 'c', 20, failing)).rejects.toThrow('unavailable');
    const ok = await sharedLogRead('S', 'c', 20, async () => entry(20));
    expect(ok.sequence).toBe(20);
    expect(calls).toBe(1);
  });

  it('forgets the oldest entry beyond its size', async () => {
    shareLogReads();
    let reads = 0;
    const read = async () => entry(++reads);
    await sharedLogRead('E', 'c', 0, read);
    for (let i = 1; i <= SHARED_LOG_READS_SIZE; i++) await sharedLogRead('E', 'c', i, read);
    expect(reads).toBe(SHARED_LOG_READS_SIZE + 1);
    await sharedLogRead('E', 'c', SHARED_LOG_READS_SIZE, read);
    expect(reads).toBe(SHARED_LOG_READS_SIZE + 1);
    await sharedLogRead('E', 'c', 0, read);
    expect(reads).toBe(SHARED_LOG_READS_SIZE + 2);
  });
});

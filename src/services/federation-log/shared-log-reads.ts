import type { LogEntry } from './log-entry.ts';

/** Verified log entries remembered per process once {@link shareLogReads} is on (oldest dropped first). */
export const SHARED_LOG_READS_SIZE = 8192;

const entries = new Map<string, Promise<LogEntry>>();
let enabled = false;

/**
 * Turns on a process-wide cache of verified log entries (off by default: a member alone in its
 * process reads and checks every entry itself). `cohort swarm` turns it on: its n sites follow the
 * same log, so a round of n votes would otherwise make one process fetch, decode and check n × n
 * entries. With it each entry is fetched and checked once per process, and every site still folds
 * every entry into its own history (links, evidence, decisions). A log entry never changes once
 * appended (the stream is append-only and every entry is signed with its sequence and the hash of
 * the one before), so an entry read once is the entry every later reader would get.
 */
export function shareLogReads(): void {
  enabled = true;
}

/** Whether {@link shareLogReads} was called in this process. */
export function logReadsShared(): boolean {
  return enabled;
}

/**
 * Entry `sequence` of `stream` (signed by `coordinator`), from the shared cache when reads are
 * shared, else from `read`. A failed read is not remembered; concurrent readers of one entry wait
 * for the same read.
 */
export function sharedLogRead(
  stream: string,
  coordinator: string,
  sequence: number,
  read: () => Promise<LogEntry>,
): Promise<LogEntry> {
  if (!enabled) return read();
  const key = `${stream}\u0000${coordinator}\u0000${sequence}`;
  const known = entries.get(key);
  if (known !== undefined) return known;
  const p = read();
  entries.set(key, p);
  p.catch(() => {
    if (entries.get(key) === p) entries.delete(key);
  });
  if (entries.size > SHARED_LOG_READS_SIZE) entries.delete(entries.keys().next().value!);
  return p;
}

import type { NatsConnection } from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { federationSubjects } from '../../transport/index.ts';
import {
  assertContributionKey,
  type ContributionKey,
  contributionFrameSubject,
  contributionFramesFilter,
} from './contribution-stream.ts';
import { DEFAULT_STORE_TIMEOUT_MS } from './object-reader.ts';
import { StoreError } from './store-error.ts';
import { streamApi as api, apiFailure, NO_MESSAGE_FOUND, STREAM_NOT_FOUND } from './stream-api.ts';

/** Limits of {@link readStoredContribution}. */
export interface ContributionReadLimits {
  /** Most frames a contribution of the round can hold (its blocks + 1 manifest). */
  readonly maxFrames: number;
  /** Most bytes of all its frames together. */
  readonly maxBytes: number;
  /** Wait for each JetStream API request, in ms; default {@link DEFAULT_STORE_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

/** What the contributions stream holds for one contribution. */
export type StoredContributionRead =
  /** Frames 0…n−1, each the first (and only) message of its subject. */
  | { readonly status: 'found'; readonly frames: readonly Uint8Array[] }
  /** No frame at all (never stored, expired, or no stream). */
  | { readonly status: 'absent' }
  /**
   * A subject holds more than one message (a stream weaker than write-once let a frame be
   * written again): `frames` are the first message of each subject, `reason` says which.
   */
  | { readonly status: 'overwritten'; readonly frames: readonly Uint8Array[]; readonly reason: string }
  /** More frames or bytes than the round's contributions can hold (refused before reading them all). */
  | { readonly status: 'too-large'; readonly reason: string }
  /** Frames that cannot be one contribution: a gap in the frame numbers, or a subject that is no frame. */
  | { readonly status: 'corrupt'; readonly reason: string };

/** Largest stream-info answer read (the subjects of one contribution, a few bytes each). */
const MAX_INFO_ANSWER_BYTES = 8 * 1024 * 1024;
/** Frames requested at once. */
const PARALLEL_GETS = 16;

/**
 * Reads one contribution from the federation's contributions stream (`COHORT_<F>_CONTRIBUTIONS`)
 * with `STREAM.INFO` and `STREAM.MSG.GET` only (the coordinator's and an auditor's rights):
 * 1. the stream's subjects under the contribution (`….<site>.*`) and their message counts, in one
 *    info request: more than `limits.maxFrames` is `too-large` before any frame is read; frame
 *    numbers that are not 0…n−1 are `corrupt`; none is `absent`;
 * 2. the first message of each frame subject (`next_by_subj` from sequence 1), counting bytes
 *    against `limits.maxBytes` as they come; a subject holding more than one message is
 *    `overwritten` (the first ones are returned: a write-once stream never holds a second).
 *
 * @throws StoreError `STORE_UNAVAILABLE` when JetStream cannot be reached or refuses a request
 *   (no permission, timeout); INVALID_ARGUMENT for a malformed key or limits.
 */
export async function readStoredContribution(
  nc: NatsConnection,
  federation: string,
  key: ContributionKey,
  limits: ContributionReadLimits,
): Promise<StoredContributionRead> {
  if (typeof nc !== 'object' || nc === null || typeof (nc as { request?: unknown }).request !== 'function') {
    throw new InvalidArgumentError('nc must be a NATS connection', { details: { name: 'nc' } });
  }
  assertContributionKey(key);
  assertInteger('limits.maxFrames', limits.maxFrames, 1, 1_000_000);
  assertInteger('limits.maxBytes', limits.maxBytes, 1, Number.MAX_SAFE_INTEGER);
  const timeoutMs = limits.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  assertInteger('limits.timeoutMs', timeoutMs, 1, 600_000);
  const stream = federationSubjects(federation).contributionsStream;
  const filter = contributionFramesFilter(federation, key);
  const infoSubject = `$JS.API.STREAM.INFO.${stream}`;
  const info = await api(nc, infoSubject, { subjects_filter: filter }, MAX_INFO_ANSWER_BYTES, timeoutMs);
  if (info.error) {
    if (info.error.err_code === STREAM_NOT_FOUND) return { status: 'absent' };
    throw apiFailure(infoSubject, info.error);
  }
  const total = typeof info['total'] === 'number' ? info['total'] : 0;
  const state = (info['state'] ?? {}) as { subjects?: Record<string, unknown> };
  const subjects = state.subjects ?? {};
  const names = Object.keys(subjects);
  const count = Math.max(total, names.length);
  if (count === 0) return { status: 'absent' };
  if (count > limits.maxFrames) {
    return {
      status: 'too-large',
      reason: `${count} frame subjects are stored, a contribution of the round has at most ${limits.maxFrames}`,
    };
  }
  const prefix = filter.slice(0, -1);
  const messages = new Map<number, number>();
  for (const name of names) {
    const frame = name.slice(prefix.length);
    const n = subjects[name];
    if (!name.startsWith(prefix) || !/^(0|[1-9][0-9]{0,6})$/.test(frame) || typeof n !== 'number') {
      return { status: 'corrupt', reason: `subject ${JSON.stringify(name)} is not a frame of it` };
    }
    messages.set(Number(frame), n);
  }
  for (let i = 0; i < messages.size; i++) {
    if (!messages.has(i)) {
      return {
        status: 'corrupt',
        reason: `frames ${[...messages.keys()].sort((a, b) => a - b).join(', ')} are stored: frame ${i} is missing`,
      };
    }
  }
  const again = [...messages].filter(([, n]) => n > 1).sort(([a], [b]) => a - b);
  const getSubject = `$JS.API.STREAM.MSG.GET.${stream}`;
  // A message comes back base64 in JSON: 4/3 of its size and a little more.
  const answerCap = Math.min(limits.maxBytes, 64 * 1024 * 1024) * 2 + 4096;
  const frames: Uint8Array[] = new Array(messages.size);
  let bytes = 0;
  let tooLarge = false;
  const get = async (i: number): Promise<void> => {
    const subject = contributionFrameSubject(federation, key, i);
    const answer = await api(nc, getSubject, { seq: 1, next_by_subj: subject }, answerCap, timeoutMs);
    if (answer.error) {
      if (answer.error.err_code === NO_MESSAGE_FOUND) {
        // Expired (or removed) between the info and this request.
        throw new StoreError('STORE_UNAVAILABLE', `frame ${i} of ${subject} is no longer stored`, {
          details: { subject },
        });
      }
      throw apiFailure(getSubject, answer.error);
    }
    const message = answer['message'] as { subject?: unknown; data?: unknown } | undefined;
    if (message?.subject !== subject) {
      throw new StoreError('STORE_UNAVAILABLE', `${getSubject} answered another subject than ${subject}`, {
        details: { subject },
      });
    }
    const data = typeof message.data === 'string' ? Buffer.from(message.data, 'base64') : Buffer.alloc(0);
    bytes += data.length;
    if (bytes > limits.maxBytes) tooLarge = true;
    frames[i] = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  };
  for (let from = 0; from < messages.size && !tooLarge; from += PARALLEL_GETS) {
    const batch: Promise<void>[] = [];
    for (let i = from; i < Math.min(messages.size, from + PARALLEL_GETS); i++) batch.push(get(i));
    await Promise.all(batch);
  }
  if (tooLarge) {
    return { status: 'too-large', reason: `its frames hold more than ${limits.maxBytes} bytes` };
  }
  if (again.length > 0) {
    return {
      status: 'overwritten',
      frames,
      reason: again.map(([i, n]) => `frame ${i} was written ${n} times`).join(', '),
    };
  }
  return { status: 'found', frames };
}

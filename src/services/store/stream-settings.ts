import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamInfo,
} from '@nats-io/jetstream';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { StoreError } from './store-error.ts';

/** The settings a durable stream must have (see {@link checkStreamSettings}). */
export interface ExpectedStreamSettings {
  readonly name: string;
  /** The subjects, in any order. */
  readonly subjects: readonly string[];
  readonly storage: 'file';
  readonly replicas: number;
  readonly denyDelete: true;
  readonly denyPurge: true;
  readonly discard: 'new' | 'old';
  /**
   * Largest message age, ms: exactly this (0 is "no limit", what the log needs; the contributions
   * stream keeps them for the configured retention, after which the audit reads them as expired).
   */
  readonly maxAgeMs: number;
  readonly retention: 'limits';
  /**
   * Whether `Nats-Rollup` headers may be honoured; only `false` is accepted: a rollup message
   * would wipe the stream's history (or a subject's) despite `denyPurge`.
   */
  readonly allowRollup: false;
  /**
   * Largest count of messages kept per subject: -1 is "no limit" (an absent, 0 or negative limit
   * counts as none). A limit drops the oldest messages of a subject, which would wipe history,
   * unless `discardNewPerSubject` refuses the new one instead: so a limit ≥ 1 is accepted only
   * with `discardNewPerSubject` (1 with it makes each subject write-once).
   */
  readonly maxMsgsPerSubject: number;
  /** With a per-subject limit: the server refuses a message beyond it (`discard_new_per_subject`). */
  readonly discardNewPerSubject?: true;
  /** Largest message, bytes (`max_msg_size`), when the stream must cap it; absent: not checked. */
  readonly maxMsgSize?: number;
}

const show = (v: unknown): string =>
  v === undefined ? '(unset)' : typeof v === 'string' ? v : JSON.stringify(v);

/**
 * Every difference between an existing stream's configuration and `expected`, each a sentence
 * naming the setting, the actual and the expected value (`storage is memory, expected file`).
 * Empty when the stream matches. Subjects are compared as sets; an absent `deny_delete`,
 * `deny_purge`, `allow_rollup_hdrs` or `discard_new_per_subject` counts as false. A stream that
 * mirrors or sources another is always refused (those messages bypass subject permissions). Pure: it reads only `info.config`. Throws
 * `INVALID_ARGUMENT` when `info` has no `config` or `expected` is malformed.
 */
export function checkStreamSettings(
  info: Pick<StreamInfo, 'config'>,
  expected: ExpectedStreamSettings,
): string[] {
  if (typeof info !== 'object' || info === null || typeof info.config !== 'object' || info.config === null) {
    throw new InvalidArgumentError('info must be a stream info with a config', { details: { name: 'info' } });
  }
  if (typeof expected !== 'object' || expected === null) {
    throw new InvalidArgumentError('expected must be an object', { details: { name: 'expected' } });
  }
  if (typeof expected.name !== 'string' || expected.name.length === 0) {
    throw new InvalidArgumentError('expected.name must be a non-empty string', {
      details: { name: 'expected.name' },
    });
  }
  if (
    !Array.isArray(expected.subjects) ||
    expected.subjects.length === 0 ||
    !expected.subjects.every((s) => typeof s === 'string' && s.length > 0)
  ) {
    throw new InvalidArgumentError('expected.subjects must be a non-empty list of subjects', {
      details: { name: 'expected.subjects' },
    });
  }
  assertInteger('expected.replicas', expected.replicas, 1, 5);
  // 100 days in ms, the longest retention a federation may configure, well below 2^53 ns.
  assertInteger('expected.maxAgeMs', expected.maxAgeMs, 0, 100 * 86_400_000);
  if (expected.allowRollup !== false) {
    throw new InvalidArgumentError('expected.allowRollup must be false', {
      details: { name: 'expected.allowRollup' },
    });
  }
  if (expected.maxMsgsPerSubject !== -1) {
    assertInteger('expected.maxMsgsPerSubject', expected.maxMsgsPerSubject, 1, 1_000_000);
    if (expected.discardNewPerSubject !== true) {
      throw new InvalidArgumentError(
        'expected.maxMsgsPerSubject must be -1 unless expected.discardNewPerSubject is true (a limit would drop old messages)',
        { details: { name: 'expected.maxMsgsPerSubject' } },
      );
    }
  }
  if (expected.maxMsgSize !== undefined) {
    assertInteger('expected.maxMsgSize', expected.maxMsgSize, 1, 64 * 1024 * 1024);
  }
  const c = info.config as Partial<StreamInfo['config']>;
  const problems: string[] = [];
  const compare = (setting: string, actual: unknown, wanted: unknown) => {
    if (actual !== wanted) problems.push(`${setting} is ${show(actual)}, expected ${show(wanted)}`);
  };
  compare('name', c.name, expected.name);
  const actualSubjects = Array.isArray(c.subjects) ? [...c.subjects].sort() : [];
  const wantedSubjects = [...expected.subjects].sort();
  if (
    actualSubjects.length !== wantedSubjects.length ||
    actualSubjects.some((s, i) => s !== wantedSubjects[i])
  ) {
    problems.push(`subjects are [${actualSubjects.join(', ')}], expected [${wantedSubjects.join(', ')}]`);
  }
  compare('storage', c.storage, expected.storage);
  compare('replicas', c.num_replicas, expected.replicas);
  compare('deny_delete', c.deny_delete ?? false, expected.denyDelete);
  compare('deny_purge', c.deny_purge ?? false, expected.denyPurge);
  compare('discard', c.discard, expected.discard);
  const maxAgeNanos = c.max_age ?? 0;
  if (maxAgeNanos !== expected.maxAgeMs * 1_000_000) {
    problems.push(
      `max_age is ${maxAgeNanos / 1_000_000} ms, expected ${expected.maxAgeMs}${expected.maxAgeMs === 0 ? ' (no limit)' : ''}`,
    );
  }
  compare('retention', c.retention, expected.retention);
  compare('allow_rollup_hdrs', c.allow_rollup_hdrs ?? false, expected.allowRollup);
  const perSubject =
    typeof c.max_msgs_per_subject === 'number' && c.max_msgs_per_subject > 0 ? c.max_msgs_per_subject : -1;
  if (perSubject !== expected.maxMsgsPerSubject) {
    problems.push(
      `max_msgs_per_subject is ${perSubject}, expected ${expected.maxMsgsPerSubject}${expected.maxMsgsPerSubject === -1 ? ' (no limit)' : ''}`,
    );
  }
  if (expected.discardNewPerSubject === true) {
    compare('discard_new_per_subject', c.discard_new_per_subject ?? false, true);
  }
  if (expected.maxMsgSize !== undefined) {
    const size = typeof c.max_msg_size === 'number' && c.max_msg_size > 0 ? c.max_msg_size : -1;
    if (size !== expected.maxMsgSize) {
      problems.push(`max_msg_size is ${size}, expected ${expected.maxMsgSize}`);
    }
  }
  // A mirror or a source writes messages into the stream on any subject, past every permission.
  if (c.mirror != null) problems.push('the stream mirrors another stream, expected none');
  if (Array.isArray(c.sources) && c.sources.length > 0) {
    problems.push(`the stream sources ${c.sources.length} other stream(s), expected none`);
  }
  return problems;
}

/**
 * Creates stream `expected.name` with exactly the settings `expected` states (limits retention,
 * no message, byte or age limit beyond them), or checks an existing one against them
 * ({@link checkStreamSettings}). `what` says what the stream keeps, for the error message.
 * Returns the stream's name.
 *
 * @throws StoreError `STREAM_MISMATCH` listing every weaker (or other) setting of an existing
 *   stream; `STORE_UNAVAILABLE` when JetStream cannot be reached or refuses the creation.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  expected: ExpectedStreamSettings,
  what: string,
): Promise<string> {
  const name = expected.name;
  const check = async (): Promise<boolean> => {
    let info: Awaited<ReturnType<JetStreamManager['streams']['info']>>;
    try {
      info = await jsm.streams.info(name);
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return false;
      throw new StoreError('STORE_UNAVAILABLE', `cannot read stream ${name}: ${(err as Error).message}`, {
        cause: err,
        details: { stream: name },
      });
    }
    const problems = checkStreamSettings(info, expected);
    if (problems.length > 0) {
      throw new StoreError(
        'STREAM_MISMATCH',
        `stream ${name} exists with settings ${what} cannot be kept under: ${problems.join('; ')}`,
        { details: { stream: name, problems } },
      );
    }
    return true;
  };
  if (await check()) return name;
  try {
    await jsm.streams.add({
      name,
      subjects: [...expected.subjects],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs: -1,
      max_bytes: -1,
      // Nanoseconds: 100 days is 8.64e15, below 2^53.
      max_age: expected.maxAgeMs * 1_000_000,
      max_msg_size: expected.maxMsgSize ?? -1,
      discard: expected.discard === 'new' ? DiscardPolicy.New : DiscardPolicy.Old,
      num_replicas: expected.replicas,
      deny_delete: expected.denyDelete,
      deny_purge: expected.denyPurge,
      allow_rollup_hdrs: expected.allowRollup,
      max_msgs_per_subject: expected.maxMsgsPerSubject,
      ...(expected.discardNewPerSubject === true ? { discard_new_per_subject: true } : {}),
    });
  } catch (err) {
    // Another process may have created it meanwhile: fine if it has our settings.
    if (await check().catch(() => false)) return name;
    throw new StoreError('STORE_UNAVAILABLE', `cannot create stream ${name}: ${(err as Error).message}`, {
      cause: err,
      details: { stream: name },
    });
  }
  return name;
}

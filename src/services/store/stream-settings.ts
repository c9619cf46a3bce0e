import type { StreamInfo } from '@nats-io/jetstream';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';

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
  /** Largest message age; 0 is "no limit", the only value accepted. */
  readonly maxAgeMs: 0;
  readonly retention: 'limits';
  /**
   * Whether `Nats-Rollup` headers may be honoured; only `false` is accepted: a rollup message
   * would wipe the stream's history (or a subject's) despite `denyPurge`.
   */
  readonly allowRollup: false;
  /**
   * Largest count of messages kept per subject; -1 is "no limit", the only value accepted (an
   * absent, 0 or negative limit counts as none). A limit drops the oldest messages of a subject
   * even under discard-new, so it too would wipe history.
   */
  readonly maxMsgsPerSubject: -1;
}

const show = (v: unknown): string =>
  v === undefined ? '(unset)' : typeof v === 'string' ? v : JSON.stringify(v);

/**
 * Every difference between an existing stream's configuration and `expected`, each a sentence
 * naming the setting, the actual and the expected value (`storage is memory, expected file`).
 * Empty when the stream matches. Subjects are compared as sets; an absent `deny_delete`,
 * `deny_purge` or `allow_rollup_hdrs` counts as false. Pure: it reads only `info.config`. Throws
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
  assertInteger('expected.maxAgeMs', expected.maxAgeMs, 0, 0);
  if (expected.allowRollup !== false) {
    throw new InvalidArgumentError('expected.allowRollup must be false', {
      details: { name: 'expected.allowRollup' },
    });
  }
  assertInteger('expected.maxMsgsPerSubject', expected.maxMsgsPerSubject, -1, -1);
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
    problems.push(`max_age is ${maxAgeNanos / 1_000_000} ms, expected ${expected.maxAgeMs} (no limit)`);
  }
  compare('retention', c.retention, expected.retention);
  compare('allow_rollup_hdrs', c.allow_rollup_hdrs ?? false, expected.allowRollup);
  const perSubject =
    typeof c.max_msgs_per_subject === 'number' && c.max_msgs_per_subject > 0 ? c.max_msgs_per_subject : -1;
  if (perSubject !== expected.maxMsgsPerSubject) {
    problems.push(`max_msgs_per_subject is ${perSubject}, expected ${expected.maxMsgsPerSubject} (no limit)`);
  }
  return problems;
}

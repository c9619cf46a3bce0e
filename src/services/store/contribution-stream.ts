import type { JetStreamManager } from '@nats-io/jetstream';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import { assertSubjectToken, federationSubjects } from '../../transport/index.ts';
import { type ExpectedStreamSettings, ensureStream } from './stream-settings.ts';

/**
 * Which stored contribution: the update `site` sent for `round` (its opening `attempt`), as the
 * aggregator it was assigned to (`aggregator`, from the signed RoundOpen) summed and stored it.
 */
export interface ContributionKey {
  readonly aggregator: string;
  readonly round: number;
  readonly attempt: Uint8Array;
  readonly site: string;
}

/** Bytes reserved above the largest frame in `max_msg_size` (NATS counts a message's headers in it). */
export const CONTRIBUTION_HEADER_BYTES = 1024;

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Throws `INVALID_ARGUMENT` unless `key` names a contribution (tokens, round, 1-64 attempt bytes). */
export function assertContributionKey(key: ContributionKey): void {
  if (typeof key !== 'object' || key === null) {
    throw new InvalidArgumentError('key must be a contribution key', { details: { name: 'key' } });
  }
  assertSubjectToken('key.aggregator', key.aggregator);
  assertInteger('key.round', key.round, 1, Number.MAX_SAFE_INTEGER);
  if (!(key.attempt instanceof Uint8Array) || key.attempt.length === 0 || key.attempt.length > 64) {
    throw new InvalidArgumentError('key.attempt must be 1-64 bytes', { details: { name: 'key.attempt' } });
  }
  assertSubjectToken('key.site', key.site);
}

/** The subject of frame `frame` of a contribution (0: the site's manifest; 1…: its blocks in order). */
export function contributionFrameSubject(federation: string, key: ContributionKey, frame: number): string {
  assertContributionKey(key);
  return federationSubjects(federation).contributionFrame(
    key.aggregator,
    key.round,
    hex(key.attempt),
    key.site,
    frame,
  );
}

/** The subjects of every frame of a contribution (`….<site>.*`), as a stream-info filter. */
export function contributionFramesFilter(federation: string, key: ContributionKey): string {
  assertContributionKey(key);
  return federationSubjects(federation).contributionFrames(
    key.aggregator,
    key.round,
    hex(key.attempt),
    key.site,
  );
}

/**
 * A contribution's name in an audit bundle and in reports: `round-<r>/<attempt hex>/<aggregator>/<site>`.
 */
export function contributionName(key: ContributionKey): string {
  assertContributionKey(key);
  return `round-${key.round}/${hex(key.attempt)}/${key.aggregator}/${key.site}`;
}

/** Settings of a federation's contributions stream (see {@link contributionStreamSettings}). */
export interface ContributionStreamOptions {
  /** JetStream replicas (`history.replicas`). */
  readonly replicas: number;
  /** How long contributions are kept (`history.updateRetentionMs`, JetStream `max_age`); 0: until removed. */
  readonly retentionMs: number;
  /** Largest frame a contribution holds (one block frame, or a site manifest if larger). */
  readonly maxFrameBytes: number;
}

/**
 * What the contributions stream must be (docs/log-format.md, "Contributions"): only
 * `cohort.F.contribution.>`, file storage, limits retention with `max_age` = the retention,
 * discard-new, deletes, purges and rollups denied, and write-once subjects (one message a subject,
 * a second refused: `max_msgs_per_subject` 1 with `discard_new_per_subject`), each message at most
 * one frame (+ {@link CONTRIBUTION_HEADER_BYTES}).
 */
export function contributionStreamSettings(
  federation: string,
  options: ContributionStreamOptions,
): ExpectedStreamSettings {
  const s = federationSubjects(federation);
  assertInteger('options.replicas', options.replicas, 1, 5);
  assertInteger('options.retentionMs', options.retentionMs, 0, 100 * 86_400_000);
  assertInteger('options.maxFrameBytes', options.maxFrameBytes, 1, 64 * 1024 * 1024);
  return {
    name: s.contributionsStream,
    subjects: [s.contributions],
    storage: 'file',
    replicas: options.replicas,
    denyDelete: true,
    denyPurge: true,
    discard: 'new',
    maxAgeMs: options.retentionMs,
    retention: 'limits',
    allowRollup: false,
    maxMsgsPerSubject: 1,
    discardNewPerSubject: true,
    maxMsgSize: options.maxFrameBytes + CONTRIBUTION_HEADER_BYTES,
  };
}

/**
 * Creates the federation's contributions stream (the coordinator, before the first round), or
 * checks an existing one against {@link contributionStreamSettings}. Returns the stream's name.
 *
 * @throws StoreError `STREAM_MISMATCH` listing every weaker (or other) setting of an existing
 *   stream; `STORE_UNAVAILABLE` when JetStream cannot be reached or refuses the creation.
 */
export async function ensureContributionStream(
  jsm: JetStreamManager,
  federation: string,
  options: ContributionStreamOptions,
): Promise<string> {
  return ensureStream(jsm, contributionStreamSettings(federation, options), 'the contributions');
}

import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import { federationSubjects } from '../../transport/index.ts';
import { checkStreamSettings } from '../store/index.ts';
import { FederationLogError } from './log-error.ts';

/** Largest log entry (8 MiB): a decision lists at most `codec.maxContributors` contributors. */
export const LOG_MAX_ENTRY_BYTES = 8 * 1024 * 1024;

/** The stream name of a federation's log: `COHORT_` + the id upper-cased, anything but A-Z, 0-9, _ and - as `_`. */
export function logStreamName(federation: string): string {
  return federationSubjects(federation).logStream;
}

/** Settings of the log stream. */
export interface LogStreamSettings {
  readonly federation: string;
  /** JetStream replicas (3 on a three-node cluster); a stream with fewer is refused. */
  readonly replicas: number;
  /** Largest stream size in bytes; new entries are refused beyond it, never old ones dropped. */
  readonly maxBytes: number;
}

/**
 * Creates the federation log's stream, or checks an existing one: file storage, `replicas`
 * replicas, limits retention with no age or per-subject limit, discard-new at the size limit (an
 * old entry is never dropped), deletes, purges and rollup headers denied, only the log subject. A
 * stream with any other of these settings is refused with `LOG_STREAM_MISMATCH` listing every
 * difference: a memory stream, or one that allows purges or rollups or keeps a bounded number of
 * messages per subject, would silently weaken the log.
 */
export async function ensureLogStream(jsm: JetStreamManager, settings: LogStreamSettings): Promise<string> {
  const name = logStreamName(settings.federation);
  const subject = federationSubjects(settings.federation).log;
  const expected = {
    name,
    subjects: [subject],
    storage: 'file' as const,
    replicas: settings.replicas,
    denyDelete: true as const,
    denyPurge: true as const,
    discard: 'new' as const,
    maxAgeMs: 0 as const,
    retention: 'limits' as const,
    allowRollup: false as const,
    maxMsgsPerSubject: -1 as const,
  };
  const check = async (): Promise<boolean> => {
    let info: Awaited<ReturnType<JetStreamManager['streams']['info']>>;
    try {
      info = await jsm.streams.info(name);
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return false;
      throw new FederationLogError(
        'LOG_UNAVAILABLE',
        `cannot read stream ${name}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    const problems = checkStreamSettings(info, expected);
    if (problems.length > 0) {
      throw new FederationLogError(
        'LOG_STREAM_MISMATCH',
        `stream ${name} exists with settings the federation log cannot use: ${problems.join('; ')}`,
        { details: { stream: name, problems } },
      );
    }
    return true;
  };
  if (await check()) return name;
  try {
    await jsm.streams.add({
      name,
      subjects: [subject],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs: -1,
      max_age: 0,
      max_bytes: settings.maxBytes,
      max_msg_size: LOG_MAX_ENTRY_BYTES,
      discard: DiscardPolicy.New,
      num_replicas: settings.replicas,
      deny_delete: true,
      deny_purge: true,
      allow_rollup_hdrs: false,
      max_msgs_per_subject: -1,
    });
  } catch (err) {
    // Another process may have created it meanwhile: fine if it has our settings.
    if (await check().catch(() => false)) return name;
    throw new FederationLogError(
      'LOG_UNAVAILABLE',
      `cannot create stream ${name}: ${(err as Error).message}`,
      {
        cause: err,
        details: { stream: name },
      },
    );
  }
  return name;
}

export {
  assertContributionKey,
  CONTRIBUTION_HEADER_BYTES,
  type ContributionKey,
  type ContributionStreamOptions,
  contributionFrameSubject,
  contributionFramesFilter,
  contributionName,
  contributionStreamSettings,
  ensureContributionStream,
} from './contribution-stream.ts';
export { acquireLease, type Lease, type LeaseOptions, leaseBucketProblems } from './lease.ts';
export { DEFAULT_STORE_TIMEOUT_MS, type ObjectReadLimits, readObject } from './object-reader.ts';
export { STORE_ERROR_CODES, StoreError, type StoreErrorCode } from './store-error.ts';
export {
  type ContributionReadLimits,
  readStoredContribution,
  type StoredContributionRead,
} from './stored-contribution.ts';
export { checkStreamSettings, type ExpectedStreamSettings, ensureStream } from './stream-settings.ts';
export {
  aggregateStore,
  lazyWriteOnceStore,
  OBJECT_FRAME_BYTES,
  OBJECT_FRAME_HEADER_BYTES,
  readWriteOnceObject,
  snapshotStore,
  type WriteOnceObjects,
  type WriteOnceStore,
  type WriteOnceStoreOptions,
  writeOnceObjectWriter,
  writeOnceStoreSettings,
} from './write-once-objects.ts';

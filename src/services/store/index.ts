export { acquireLease, type Lease, type LeaseOptions } from './lease.ts';
export { DEFAULT_STORE_TIMEOUT_MS, type ObjectReadLimits, readObject } from './object-reader.ts';
export { lazyObjectStore } from './object-store.ts';
export { STORE_ERROR_CODES, StoreError, type StoreErrorCode } from './store-error.ts';
export { checkStreamSettings, type ExpectedStreamSettings } from './stream-settings.ts';
